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

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return TcpTransport.create(context);
  }
}
