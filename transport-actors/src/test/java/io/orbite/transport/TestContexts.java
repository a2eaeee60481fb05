package io.orbite.transport;

import io.orbite.config.EngineConfig;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.util.concurrent.Executor;

/** What a transport's unit tests give it in place of an engine: a context of their own parts. */
public final class TestContexts {
  /** The epoch the tests' engine claims. */
  public static final long EPOCH = 0x10caL;

  /** Where the tests' engine claims to listen (nothing listens there: no test connects to it). */
  public static final SegmentDescriptor SELF = new SegmentDescriptor("127.0.0.1", 1, EPOCH);

  private TestContexts() {}

  /**
   * A context over {@code config} with the tests' own counters, board, quarantine and hooks, and a
   * supervision that lists quarantined owners in {@code quarantine}.
   */
  public static TransportContext context(
      EngineConfig config,
      Executor blockingIo,
      EngineTally counters,
      OwnerBoard board,
      QuarantineLedger quarantine,
      FaultHooks hooks) {
    return context(
        config, new RegistryView(), SELF, blockingIo, counters, board, quarantine, hooks);
  }

  /** The same, over {@code registry}, for the incarnation {@code self}. */
  public static TransportContext context(
      EngineConfig config,
      RegistryView registry,
      SegmentDescriptor self,
      Executor blockingIo,
      EngineTally counters,
      OwnerBoard board,
      QuarantineLedger quarantine,
      FaultHooks hooks) {
    return new TransportContext(
        config,
        registry,
        self.epoch(),
        blockingIo,
        counters,
        board,
        quarantine,
        hooks,
        new OwnerSupervision("test-engine", quarantine, counters, board, hooks),
        new PeerEventHub(Runnable::run),
        self);
  }
}
