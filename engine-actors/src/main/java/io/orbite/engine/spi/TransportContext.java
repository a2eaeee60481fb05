package io.orbite.engine.spi;

import io.orbite.config.EngineConfig;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.EngineIdentity;
import java.util.concurrent.Executor;

/**
 * What the engine gives a transport when it starts it.
 *
 * @param registry the published registrations, for source-side authority checks
 * @param localEpoch this engine incarnation's epoch
 * @param blockingIo an executor for blocking set-up work (connect, handshakes), never the default
 *     dispatcher
 * @param quarantine where owners that cannot prove their drain are listed (C5, C7)
 * @param hooks fault-injection points for qualification tests; {@link FaultHooks#NONE} in
 *     production
 * @param supervision the engine's supervision: every owner actor a transport spawns runs under it,
 *     so an unexpected exception quarantines that owner instead of stopping or restarting it
 * @param peerEvents where the requester side publishes what happens to its peers
 * @param self this engine incarnation: where it listens, and {@code localEpoch}; its HELLOs name
 *     this engine by {@link #identity()}
 * @param auth the handshake every connection this engine opens starts with when it authenticates
 */
public record TransportContext(
    EngineConfig config,
    RegistryView registry,
    long localEpoch,
    Executor blockingIo,
    EngineTally counters,
    OwnerBoard owners,
    QuarantineLedger quarantine,
    FaultHooks hooks,
    OwnerSupervision supervision,
    PeerEventHub peerEvents,
    SegmentDescriptor self,
    io.orbite.engine.security.PeerAuth auth) {
  /** A context for an engine that does not authenticate (tests that build transports alone). */
  public TransportContext(
      EngineConfig config,
      RegistryView registry,
      long localEpoch,
      Executor blockingIo,
      EngineTally counters,
      OwnerBoard owners,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      OwnerSupervision supervision,
      PeerEventHub peerEvents,
      SegmentDescriptor self) {
    this(
        config,
        registry,
        localEpoch,
        blockingIo,
        counters,
        owners,
        quarantine,
        hooks,
        supervision,
        peerEvents,
        self,
        io.orbite.engine.security.PeerAuth.none(config.name(), localEpoch));
  }

  /**
   * Checks that {@code self} is this incarnation.
   *
   * @throws IllegalArgumentException if {@code self}'s epoch is not {@code localEpoch}
   */
  public TransportContext {
    java.util.Objects.requireNonNull(self, "self");
    java.util.Objects.requireNonNull(auth, "auth");
    if (self.epoch() != localEpoch) {
      throw new IllegalArgumentException(
          "self " + self + " is not the incarnation of epoch " + Long.toHexString(localEpoch));
    }
  }

  /**
   * Who this engine is across its restarts, as its HELLOs say: its name and where it listens.
   *
   * @return {@code config.name()} at {@code self}'s host and port
   */
  public EngineIdentity identity() {
    return new EngineIdentity(config.name(), self.host(), self.port());
  }
}
