package io.orbite.transport.rdma;

import io.orbite.config.EngineConfig;
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

  /** A further channel to peers whose engines run RDMA, tried after SHM by UNSPEC. */
  @Override
  public PeerRole peerRole() {
    return PeerRole.FURTHER;
  }

  @Override
  public int preference() {
    return 20;
  }

  /** Segments get an RDMA channel only with {@code rdma.enabled}. */
  @Override
  public boolean enabled(EngineConfig config) {
    return config.rdma().enabled();
  }

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return RdmaTransport.create(context);
  }
}
