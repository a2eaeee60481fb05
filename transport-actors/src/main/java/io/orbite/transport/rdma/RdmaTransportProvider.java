package io.orbite.transport.rdma;

import io.orbite.engine.Transport;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import org.apache.pekko.actor.typed.Behavior;

/**
 * Plugs the RDMA transport into the engine through {@link java.util.ServiceLoader}. It always runs;
 * with {@code rdma.enabled} false it refuses every open, saying so.
 */
public final class RdmaTransportProvider implements TransportProvider {
  @Override
  public Transport kind() {
    return Transport.RDMA;
  }

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return RdmaTransport.create(context);
  }
}
