package io.orbite.engine.spi;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Transport;
import io.orbite.engine.wire.Description;
import org.apache.pekko.actor.typed.Behavior;

/**
 * A transport plugged into the engine, found with {@link java.util.ServiceLoader} so that
 * engine-actors does not depend on transport implementations.
 */
public interface TransportProvider {
  /** The part a transport plays for the segments of peers this engine opens. */
  enum PeerRole {
    /** It reaches no peer (the file transport: its segments are files). */
    NONE,
    /** The segment's own channel: every peer is reached over it (TCP). */
    BASE,
    /** A further channel to a peer it can reach (SHM, RDMA), tried before the base by UNSPEC. */
    FURTHER
  }

  Transport kind();

  /** Its part for peer segments. */
  default PeerRole peerRole() {
    return PeerRole.NONE;
  }

  /** For a FURTHER transport: the order UNSPEC tries it in among the others (lower first). */
  default int preference() {
    return 100;
  }

  /**
   * Whether each endpoint it opens for the segment table holds one of {@code budgets.maxEndpoints},
   * charged by the table before the open (a transport with its own budget, such as RDMA's {@code
   * rdma.maxEndpoints}, charges itself).
   */
  default boolean chargesEndpoint() {
    return false;
  }

  /** Whether it takes part in an engine so configured (RDMA: {@code rdma.enabled}). */
  default boolean enabled(EngineConfig config) {
    return true;
  }

  /**
   * Why it cannot reach a peer that described itself so, or null when it may (SHM: the peer exports
   * no memory). Asked before the table charges or opens anything for it.
   */
  default String unreachable(Description description) {
    return null;
  }

  /** Whether this transport can run on this machine, probed once. */
  default boolean available() {
    return true;
  }

  /** The behaviour of this transport's supervisor actor. */
  Behavior<TransportCommand> create(TransportContext context);
}
