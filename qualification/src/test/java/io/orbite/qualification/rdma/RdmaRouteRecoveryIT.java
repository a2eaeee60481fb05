package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import java.time.Duration;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The port monitor's route recovery (issue 17 item 8, spec 002 "Periodic monitor recovery"): the
 * requester's second rail (soft1) loses its port, and while it is down its GID table changes (the
 * address at index 0 removed, another at index 1). With {@code rdma.gidIndex} automatic the rail
 * recovers on index 1 and its repaired QPs reach the source from the new GID; pinned to index 0 it
 * stays paused, traffic runs over soft0 only, until index 0 is valid again; a port that goes down
 * during validation fences a new generation and nothing is published from the old one; a faulted
 * lane that could not be reclaimed (kept) holds the recovering rail paused. Every round checks both
 * regions byte for byte with their guards; the PD's MRs are never made again.
 */
class RdmaRouteRecoveryIT {
  private static final long TASK = RailRounds.TASK;
  private static final int TASKS = RailRounds.TASKS;
  private static final long REGION = RailRounds.REGION;
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void automaticGidRecoversOnTheNewIndexAndItsRepairedQpsCarryReadsAndWrites() {
    try (Setup s = new Setup(RdmaConfigs.AUTOMATIC)) {
      s.healthyRound();
      long mrs = s.mrsRegistered();
      long sourceMrs = charge(s.source, "RdmaContext", "mrsRegistered");

      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.awaitSoft1(o -> o.state() == OwnerState.FENCED, "soft1 paused by its monitor");
      s.faults.invalidateGid("soft1", 1, 0);
      s.faults.setGid("soft1", 1, 1, 1);
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      OwnerView.Owner resumed =
          s.awaitSoft1(
              o -> o.state() == OwnerState.ACTIVE && o.charges().get("gidIndex") == 1,
              "soft1 resumed on GID index 1");
      assertEquals(1L, resumed.charges().get("routeRecoveries"), resumed::toString);
      assertEquals(
          resumed.charges().get("routeGeneration"),
          resumed.charges().get("publishedGeneration"),
          "the published route carries the generation its validation started with");

      s.awaitSoft1CarriesAgain();
      s.verifiedRoundsOverBothRails();
      assertEquals(mrs, s.mrsRegistered(), "the requester's MRs were not made again");
      assertEquals(sourceMrs, charge(s.source, "RdmaContext", "mrsRegistered"), "nor the source's");
      assertEquals(1L, charge(s.requester, "RdmaTransport", "routeRecoveries"));
      assertTrue(charge(s.requester, "RdmaTransport", "routeQueries") > 0);
      assertTrue(charge(s.requester, "RdmaTransport", "monitorTicks") > 0);
    }
  }

  /**
   * The same on the source's side: its {@code soft1} paused by its own monitor and recovered on a
   * re-ranked GID. The requester's QPs to it fail, its pair opens, and each QP it repairs is
   * answered with the source's new address (a REPAIR is refused while the source's rail is paused),
   * so {@code soft1} carries payload again to the source's new GID, and nothing is made again.
   */
  @Test
  void aSourceWhoseGidChangedIsReachedAtItsNewAddressByTheQpsTheRequesterRepairs() {
    try (Setup s = new Setup(RdmaConfigs.AUTOMATIC, true)) {
      s.healthyRound();
      long mrs = s.mrsRegistered();
      long sourceMrs = charge(s.source, "RdmaContext", "mrsRegistered");

      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.awaitSourceSoft1(o -> o.state() == OwnerState.FENCED, "the source's soft1 paused");
      s.faults.invalidateGid("soft1", 1, 0);
      s.faults.setGid("soft1", 1, 1, 1);
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      OwnerView.Owner resumed =
          s.awaitSourceSoft1(
              o -> o.state() == OwnerState.ACTIVE && o.charges().get("gidIndex") == 1,
              "the source's soft1 resumed on GID index 1");
      assertEquals(1L, resumed.charges().get("routeRecoveries"), resumed::toString);

      s.awaitSoft1CarriesAgain();
      s.verifiedRoundsOverBothRails();
      assertTrue(
          charge(s.requester, "RdmaTransport", "qpsGoneAtSource") >= 1,
          "the source said its QPs on soft1 were gone, so the requester's failed and were repaired");
      assertEquals(0L, charge(s.requester, "RdmaTransport", "routeRecoveries"), "its own rail ran");
      assertEquals(mrs, s.mrsRegistered(), "the requester's MRs were not made again");
      assertEquals(sourceMrs, charge(s.source, "RdmaContext", "mrsRegistered"), "nor the source's");
    }
  }

  @Test
  void aPinnedGidStaysPausedWhileItsIndexIsInvalidAndRecoversWhenItIsValidAgain() {
    try (Setup s = new Setup(RdmaConfigs.PINNED_0)) {
      s.healthyRound();
      long mrs = s.mrsRegistered();

      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.awaitSoft1(o -> o.state() == OwnerState.FENCED, "soft1 paused by its monitor");
      s.faults.invalidateGid("soft1", 1, 0);
      s.faults.setGid("soft1", 1, 1, 1);
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      s.awaitSoft1(
          o -> o.detail().contains("rdma.gidIndex 0 is not a valid GID"),
          "soft1 waits for its pinned index");
      long ticks = charge(s.requester, "RdmaTransport", "monitorTicks");
      assertTrue(
          Await.until(
              WAIT, () -> charge(s.requester, "RdmaTransport", "monitorTicks") >= ticks + 6),
          "three more scans of both rails");
      OwnerView.Owner still = s.soft1();
      assertEquals(OwnerState.FENCED, still.state(), still::toString);
      assertEquals(0L, still.charges().get("routeRecoveries"), still::toString);
      assertEquals(0L, still.charges().get("gidIndex"), "index 1 is never taken");

      // Routes over soft1 are refused: every task goes over soft0, both directions checked.
      long soft1 = RdmaTransferIT.railBytes(s.requester, "soft1");
      long soft0 = RdmaTransferIT.railBytes(s.requester, "soft0");
      for (Op op : Op.values()) {
        BatchStatus b = s.t.round(op, 10 + op.ordinal());
        assertEquals(0, s.t.failures(b), () -> op + " with soft1 paused: " + b);
        s.t.checkLast(op);
      }
      assertEquals(soft1, RdmaTransferIT.railBytes(s.requester, "soft1"), "soft1 carried nothing");
      assertEquals(
          soft0 + 2 * TASKS * TASK,
          RdmaTransferIT.railBytes(s.requester, "soft0"),
          "soft0 carried every byte");

      s.faults.setGid("soft1", 1, 0, 0);
      OwnerView.Owner resumed =
          s.awaitSoft1(
              o -> o.state() == OwnerState.ACTIVE && o.charges().get("routeRecoveries") == 1,
              "soft1 resumed on its pinned index once it was valid again");
      assertEquals(0L, resumed.charges().get("gidIndex"), resumed::toString);
      s.awaitSoft1CarriesAgain();
      s.verifiedRoundsOverBothRails();
      assertEquals(mrs, s.mrsRegistered(), "the requester's MRs were not made again");
    }
  }

  @Test
  void aDeviceFatalEventFencesItsRailForGoodWhileTheOtherCarriesEveryByte() {
    try (Setup s = new Setup(RdmaConfigs.AUTOMATIC)) {
      s.healthyRound();
      s.faults.raiseDeviceFatal("soft1");
      s.awaitSoft1(
          o -> o.state() == OwnerState.FENCED && o.detail().contains("DEVICE_FATAL"),
          "soft1 fenced by the device's fatal event");
      // Its port stays ACTIVE and its GID valid: only the event keeps it fenced, scan after scan.
      long ticks = charge(s.requester, "RdmaTransport", "monitorTicks");
      assertTrue(
          Await.until(
              WAIT, () -> charge(s.requester, "RdmaTransport", "monitorTicks") >= ticks + 3),
          "more ticks of the rails");
      OwnerView.Owner still = s.soft1();
      assertEquals(OwnerState.FENCED, still.state(), still::toString);
      assertEquals(0L, still.charges().get("routeRecoveries"), still::toString);
      long soft1 = RdmaTransferIT.railBytes(s.requester, "soft1");
      long soft0 = RdmaTransferIT.railBytes(s.requester, "soft0");
      for (Op op : Op.values()) {
        BatchStatus b = s.t.round(op, 20 + op.ordinal());
        assertEquals(0, s.t.failures(b), () -> op + " with soft1 fenced: " + b);
        s.t.checkLast(op);
      }
      assertEquals(soft1, RdmaTransferIT.railBytes(s.requester, "soft1"), "soft1 carried nothing");
      assertEquals(
          soft0 + 2 * TASKS * TASK,
          RdmaTransferIT.railBytes(s.requester, "soft0"),
          "soft0 carried every byte");
    }
  }

  @Test
  void aPortThatFailsDuringValidationFencesANewGenerationAndNothingStaleIsPublished() {
    try (Setup s = new Setup(RdmaConfigs.AUTOMATIC)) {
      s.healthyRound();
      long mrs = s.mrsRegistered();

      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.awaitSoft1(o -> o.state() == OwnerState.FENCED, "soft1 paused by its monitor");
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);

      // Held down during validation: the validated generation is abandoned, soft1 stays paused.
      long validated =
          s.awaitSoft1(o -> o.detail().contains("validating"), "validation started")
              .charges()
              .get("routeGeneration");
      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      OwnerView.Owner abandoned =
          s.awaitSoft1(
              o -> o.charges().get("routeGeneration") > validated, "a new generation fenced");
      assertEquals(OwnerState.FENCED, abandoned.state(), abandoned::toString);
      assertEquals(0L, abandoned.charges().get("routeRecoveries"), abandoned::toString);
      assertEquals(0L, abandoned.charges().get("publishedGeneration"), abandoned::toString);
      assertTrue(abandoned.detail().contains("abandoned"), abandoned::toString);

      // A flap (down and up between two scans) during validation is seen by its PORT_ERR event.
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      long second =
          s.awaitSoft1(o -> o.detail().contains("validating"), "validation started again")
              .charges()
              .get("routeGeneration");
      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      OwnerView.Owner flapped =
          s.awaitSoft1(o -> o.charges().get("routeGeneration") > second, "the flap fenced");
      assertEquals(0L, flapped.charges().get("routeRecoveries"), flapped::toString);
      assertEquals(0L, flapped.charges().get("publishedGeneration"), flapped::toString);

      // Stable now: one recovery, under a generation later than both abandoned ones.
      OwnerView.Owner resumed =
          s.awaitSoft1(o -> o.state() == OwnerState.ACTIVE, "soft1 resumed once stable");
      assertEquals(1L, resumed.charges().get("routeRecoveries"), resumed::toString);
      assertTrue(resumed.charges().get("publishedGeneration") > second, resumed::toString);
      assertEquals(0L, resumed.charges().get("gidIndex"), resumed::toString);
      s.awaitSoft1CarriesAgain();
      s.verifiedRoundsOverBothRails();
      assertEquals(mrs, s.mrsRegistered(), "the requester's MRs were not made again");
    }
  }

  /**
   * A lane of soft1 whose CQ can no longer be polled (from one payload post on) and whose reclaim
   * fails (its CQ's destroy answers EIO) is kept; when soft1's port then goes down and comes back,
   * its monitor does not validate a route while that faulted lane is kept: soft1 stays paused with
   * no recovery, its detail naming the kept lane, and soft0 carries every byte of both directions.
   */
  @Test
  void aFaultedLaneThatIsKeptHoldsTheRecoveringRailPaused() {
    try (Setup s = new Setup(RdmaConfigs.AUTOMATIC)) {
      s.healthyRound();
      s.faults.failNextDestroy(SoftFaults.Kind.CQ, 5, false);
      java.util.concurrent.atomic.AtomicInteger faulted =
          new java.util.concurrent.atomic.AtomicInteger();
      s.beforePost =
          (lane, qpNum) -> {
            if (lane.startsWith("rdma soft1 ") && faulted.compareAndSet(0, qpNum)) {
              s.faults.failPoll(qpNum, 5);
            }
          };
      s.t.round(Op.READ, 5); // the faulted lane's tasks fail clean (checked), the others land
      assertTrue(faulted.get() != 0, "a payload was posted on soft1");
      OwnerView.Owner kept =
          s.awaitSoft1(
              o -> o.charges().get("lanesKept") == 1 && o.charges().get("lanesFaulted") == 1,
              "the faulted lane is kept: its CQ could not be destroyed");
      assertEquals(0L, kept.charges().get("lanesReplaced"), kept::toString);
      assertEquals(
          OwnerState.ACTIVE, kept.state(), "a faulted lane alone does not fence the route");
      // The lane's owner actor is quarantined (terminal), and the engine's quarantine names it.
      assertTrue(
          Await.until(
              WAIT,
              () ->
                  s.requester.ownerView().owners().stream()
                      .anyMatch(
                          o ->
                              o.kind().equals("CqLane")
                                  && o.path().matches(".*/context-soft1/lane-[0-9]+")
                                  && o.state() == OwnerState.QUARANTINED
                                  && o.detail().contains("kept, not reclaimed"))),
          () -> "soft1's faulted lane's owner is quarantined: " + s.requester.ownerView());
      assertTrue(
          s.requester.quarantined().stream()
              .anyMatch(q -> q.owner().startsWith("CqLane rdma soft1 lane")),
          () -> "the quarantine names the kept lane: " + s.requester.quarantined());

      s.faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      s.awaitSoft1(o -> o.state() == OwnerState.FENCED, "soft1 paused by its monitor");
      s.faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      s.awaitSoft1(
          o -> o.detail().contains("is faulted and kept"), "soft1 waits for its kept lane");
      long ticks = charge(s.requester, "RdmaTransport", "monitorTicks");
      assertTrue(
          Await.until(
              WAIT, () -> charge(s.requester, "RdmaTransport", "monitorTicks") >= ticks + 6),
          "three more scans of both rails");
      OwnerView.Owner still = s.soft1();
      assertEquals(OwnerState.FENCED, still.state(), still::toString);
      assertEquals(0L, still.charges().get("routeRecoveries"), still::toString);
      assertEquals(0L, still.charges().get("publishedGeneration"), still::toString);
      assertTrue(still.detail().contains("is faulted and kept"), still::toString);

      long soft1 = RdmaTransferIT.railBytes(s.requester, "soft1");
      long soft0 = RdmaTransferIT.railBytes(s.requester, "soft0");
      for (Op op : Op.values()) {
        BatchStatus b = s.t.round(op, 30 + op.ordinal());
        assertEquals(0, s.t.failures(b), () -> op + " with soft1 paused: " + b);
        s.t.checkLast(op);
      }
      assertEquals(soft1, RdmaTransferIT.railBytes(s.requester, "soft1"), "soft1 carried nothing");
      assertEquals(
          soft0 + 2 * TASKS * TASK,
          RdmaTransferIT.railBytes(s.requester, "soft0"),
          "soft0 carried every byte");
    }
  }

  // ---------------------------------------------------------------- support

  /** The requester's configurations: automatic GID choice, or pinned to index 0. */
  private enum RdmaConfigs {
    AUTOMATIC(-1),
    PINNED_0(0);

    final int gidIndex;

    RdmaConfigs(int gidIndex) {
      this.gidIndex = gidIndex;
    }
  }

  static long charge(TransferEngine engine, String kind, String name) {
    return RdmaPeerIT.charge(engine, kind, name);
  }

  /** Two engines on the software provider, the requester's fault table armed (or the source's). */
  private static final class Setup implements AutoCloseable {
    final SoftFaults faults = SoftFaults.create();

    /** Runs before each requester payload post (lane name, QP number), when set. */
    volatile java.util.function.BiConsumer<String, Integer> beforePost;

    final TransferEngine source;
    final TransferEngine requester;
    final RailRounds t;

    Setup(RdmaConfigs which) {
      this(which, false);
    }

    Setup(RdmaConfigs which, boolean faultsOnSource) {
      FaultHooks hooks =
          new FaultHooks() {
            @Override
            public Object rdmaFaults() {
              return faults;
            }

            @Override
            public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
              java.util.function.BiConsumer<String, Integer> h = beforePost;
              if (h != null) {
                h.accept(lane, qpNum);
              }
            }
          };
      EngineConfig requesterConfig =
          RdmaTransferIT.rdmaConfig("route-requester")
              .withRdma(
                  RdmaTransferIT.rdmaConfig("x")
                      .rdma()
                      .withRailPolicy(3, 10_000, 1_500, 60_000, 0)
                      .withGidIndex(which.gidIndex));
      source =
          faultsOnSource
              ? FaultInjection.start(
                  RdmaTransferIT.rdmaConfig("route-source"), RdmaTransferIT.hooks(faults))
              : TransferEngine.start(RdmaTransferIT.rdmaConfig("route-source"));
      TransferEngine r = null;
      try {
        r =
            faultsOnSource
                ? TransferEngine.start(requesterConfig)
                : FaultInjection.start(requesterConfig, hooks);
        RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
        RegisteredMemory local = r.allocate(REGION, Access.READ_WRITE);
        RemoteSegment peer =
            r.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
        t = new RailRounds(r, local, remote, peer);
      } catch (RuntimeException | Error e) {
        if (r != null) {
          r.close();
        }
        source.close();
        throw e;
      }
      requester = r;
    }

    /** A READ and a WRITE round, both over both rails, every byte checked. */
    void healthyRound() {
      for (Op op : Op.values()) {
        BatchStatus b = t.round(op, 1 + op.ordinal());
        assertEquals(0, t.failures(b), () -> op + " healthy: " + b);
        t.checkLast(op);
      }
      assertTrue(RdmaTransferIT.railBytes(requester, "soft1") > 0, "both rails in use");
      // One MR per rail for the one region each engine moves (the view re-publishes in 200 ms).
      assertTrue(
          Await.until(WAIT, () -> mrsRegistered() == 2), () -> "requester MRs: " + mrsRegistered());
      assertTrue(
          Await.until(WAIT, () -> charge(source, "RdmaContext", "mrsRegistered") == 2),
          () -> "source MRs: " + charge(source, "RdmaContext", "mrsRegistered"));
    }

    long mrsRegistered() {
      return charge(requester, "RdmaContext", "mrsRegistered");
    }

    /** The requester's soft1 context owner. */
    OwnerView.Owner soft1() {
      for (OwnerView.Owner o : requester.ownerView().owners()) {
        if (o.kind().equals("RdmaContext") && o.detail().startsWith("soft1 ")) {
          return o;
        }
      }
      throw new AssertionError("no RdmaContext for soft1: " + requester.ownerView().owners());
    }

    /** The source's soft1 context owner, once it is as {@code condition} says. */
    OwnerView.Owner awaitSourceSoft1(Predicate<OwnerView.Owner> condition, String what) {
      OwnerView.Owner[] seen = new OwnerView.Owner[1];
      assertTrue(
          Await.until(
              WAIT,
              () -> {
                seen[0] =
                    source.ownerView().owners().stream()
                        .filter(
                            o -> o.kind().equals("RdmaContext") && o.detail().startsWith("soft1 "))
                        .findFirst()
                        .orElseThrow();
                return condition.test(seen[0]);
              }),
          () -> what + ": " + seen[0]);
      return seen[0];
    }

    OwnerView.Owner awaitSoft1(Predicate<OwnerView.Owner> condition, String what) {
      OwnerView.Owner[] seen = new OwnerView.Owner[1];
      assertTrue(
          Await.until(
              WAIT,
              () -> {
                seen[0] = soft1();
                return condition.test(seen[0]);
              }),
          () -> what + ": " + seen[0]);
      return seen[0];
    }

    /** The cooldown passes, one trial on a repaired QP closes the pair: soft1 carries again. */
    void awaitSoft1CarriesAgain() {
      long before = RdmaTransferIT.railBytes(requester, "soft1");
      long[] seed = {20};
      assertTrue(
          Await.until(
              WAIT,
              () -> {
                BatchStatus b = t.round(Op.READ, seed[0]++);
                t.assertFailuresAreClean(b, Op.READ);
                return RdmaTransferIT.railBytes(requester, "soft1") > before
                    && charge(requester, "RdmaTransport", "railPairsOpen") == 0;
              }),
          () -> "soft1 carries payload again and its pair closed: " + requester.ownerView());
      // The transport's row re-publishes every 200 ms: the repair may not be in it yet.
      assertTrue(
          Await.until(WAIT, () -> charge(requester, "RdmaTransport", "qpsRepaired") >= 1),
          "a QP was repaired");
    }

    /** A READ round then a WRITE round, each complete, each moving bytes over soft1 too. */
    void verifiedRoundsOverBothRails() {
      for (Op op : Op.values()) {
        long soft1 = RdmaTransferIT.railBytes(requester, "soft1");
        BatchStatus b = t.round(op, 40 + op.ordinal());
        assertEquals(0, t.failures(b), () -> op + " after recovery: " + b);
        t.checkLast(op);
        assertTrue(
            RdmaTransferIT.railBytes(requester, "soft1") > soft1,
            () -> op + " moved bytes over soft1");
      }
    }

    @Override
    public void close() {
      try {
        requester.close();
      } finally {
        source.close();
      }
    }
  }
}
