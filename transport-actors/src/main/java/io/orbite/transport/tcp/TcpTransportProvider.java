package io.orbite.transport.tcp;

import io.orbite.engine.Transport;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import org.apache.pekko.actor.typed.Behavior;

/** Plugs the TCP transport into the engine through {@link java.util.ServiceLoader}. */
public final class TcpTransportProvider implements TransportProvider {
  @Override
  public Transport kind() {
    return Transport.TCP;
  }

  /** Every peer is reached over TCP: it is each segment's own channel. */
  @Override
  public PeerRole peerRole() {
    return PeerRole.BASE;
  }

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return TcpTransport.create(context);
  }
}
