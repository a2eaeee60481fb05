package io.orbite.transport.rdma;

import static io.orbite.transport.rdma.SoftRail.SHORT;
import static io.orbite.transport.rdma.SoftRail.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The owner of one CQ lane ({@link CqLaneOwner}) over a lane of the software provider, its context
 * played by a probe: polling, faulted when the lane's {@code ibv_poll_cq} fails (a fault of the
 * provider's table), reclaimed only once every QP on the CQ was destroyed (its 100 ms drain check,
 * on ManualTime), polling a fresh lane after; kept, quarantined and listed, when the release fails
 * or the thread does not end; closing, then stopped. What each state tells the context and shows in
 * the owner view, and what each message gets in a state that does not expect it.
 */
class CqLaneOwnerTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(CqLaneOwnerTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());
  private static final AtomicInteger SPAWNED = new AtomicInteger();

  private static final String LANE = "rdma soft0 lane 0";
  private static final String POLL_FAILED = "ibv_poll_cq on soft0 failed: errno 5";
  private static final String WAITING = POLL_FAILED + " (waiting for its QPs' destroy)";
  private static final String RECLAIMING = POLL_FAILED + " (natively drained; being reclaimed)";
  private static final int EIO = Errno.EIO.number();

  @RegisterExtension final SoftRail soft = new SoftRail(CqLaneOwner.Close.class);

  private final TestProbe<RdmaContext.Command> parent = testKit.createTestProbe();
  private final TestProbe<CqLaneOwner.Stopped> closer = testKit.createTestProbe();
  private final TestProbe<Object> watcher = testKit.createTestProbe();

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  private ActorRef<CqLaneOwner.Command> owner(CqLane lane) {
    return testKit.spawn(
        CqLaneOwner.create(soft.rail, lane, soft.context, parent.getRef()),
        "lane-" + lane.index + "-" + SPAWNED.incrementAndGet());
  }

  /** The next word the owner told its context: its lane's status, in {@code state}. */
  private RdmaContext.LaneStatus expectStatus(OwnerState state, String detail) {
    RdmaContext.LaneStatus s =
        assertInstanceOf(RdmaContext.LaneStatus.class, parent.receiveMessage(WAIT));
    assertEquals(0, s.index(), s::toString);
    assertEquals(state, s.state(), s::toString);
    assertEquals(detail, s.detail(), s::toString);
    return s;
  }

  private OwnerView.Owner row() {
    return soft.board.snapshot().owners().stream()
        .filter(o -> o.kind().equals("CqLane"))
        .findFirst()
        .orElse(null);
  }

  /** Waits until the owner's row is in {@code state} with {@code detail} and these figures. */
  private OwnerView.Owner awaitRow(OwnerState state, String detail, Map<String, Long> figures) {
    return parent.awaitAssert(
        WAIT,
        () -> {
          OwnerView.Owner r = row();
          assertNotNull(r, () -> "no CqLane row: " + soft.board.snapshot());
          assertEquals(state, r.state(), r::toString);
          assertEquals(detail, r.detail(), r::toString);
          figures.forEach((k, v) -> assertEquals(v, r.charges().get(k), k + " in " + r));
          return r;
        });
  }

  /** Fails every poll of {@code held}'s lane's CQ: the lane faults at its next pass. */
  private void failPollOf(SoftRail.HeldQp held) {
    soft.faults.failPoll(held.qp.qp.qpNum(), EIO);
  }

  private void awaitTrue(BooleanSupplier what, String said) {
    SoftRail.await(parent, what, said);
  }

  /**
   * The owner of {@code lane}, polling, then faulted by a failed poll of its CQ (the fault cleared
   * then: the lane never polls again), waiting for {@code held} to be destroyed.
   */
  private ActorRef<CqLaneOwner.Command> faulted(CqLane lane, SoftRail.HeldQp held) {
    ActorRef<CqLaneOwner.Command> owner = owner(lane);
    expectStatus(OwnerState.ACTIVE, "");
    failPollOf(held);
    expectStatus(OwnerState.FENCED, WAITING);
    assertEquals(POLL_FAILED, lane.faulted());
    soft.faults.clearPollFaults();
    return owner;
  }

  @Test
  void aPollingOwnerTellsItsContextAndRepublishesItsLanesFiguresAtEachDrainCheck() {
    CqLane lane = soft.lane(0);
    owner(lane);
    assertEquals(0, expectStatus(OwnerState.ACTIVE, "").replaced());
    OwnerView.Owner r =
        awaitRow(
            OwnerState.ACTIVE,
            LANE,
            Map.of(
                "index",
                0L,
                "qps",
                0L,
                "cqes",
                (long) io.orbite.config.RdmaConfig.DEFAULT_MAX_CQES,
                "faults",
                0L,
                "replaced",
                0L));
    assertEquals(0L, r.charges().get("completionChannel"), "rdma.completionEvents is off");

    // A QP made on the lane between messages shows at the next 100 ms check, not before.
    SoftRail.HeldQp held = soft.qp(lane);
    manualTime.timePasses(Duration.ofMillis(99));
    assertEquals(0L, row().charges().get("qps"), "no check yet");
    manualTime.timePasses(Duration.ofMillis(1));
    awaitRow(
        OwnerState.ACTIVE,
        LANE,
        Map.of("qps", 1L, "cqesReserved", (long) io.orbite.config.RdmaConfig.DEFAULT_MAX_SEND_WR));
    held.destroy();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    awaitRow(OwnerState.ACTIVE, LANE, Map.of("qps", 0L, "cqesReserved", 0L));
    parent.expectNoMessage(Duration.ZERO);
  }

  @Test
  void aFailedPollFaultsTheLaneWhichIsReplacedOnlyOnceEveryQpOnItsCqWasDestroyed() {
    CqLane first = soft.lane(0);
    SoftRail.HeldQp held = soft.qp(first);
    ActorRef<CqLaneOwner.Command> owner = faulted(first, held);
    awaitTrue(() -> held.retireRequests.equals(List.of(POLL_FAILED)), "its QP's owner was told");
    awaitRow(OwnerState.FENCED, LANE + ": " + WAITING, Map.of("faults", 1L, "qps", 1L));

    // The same fault said again, and drain checks while the QP lives: nothing moves.
    owner.tell(new CqLaneOwner.Faulted(first, "again"));
    manualTime.timePasses(Duration.ofMillis(500));
    parent.expectNoMessage(SHORT);
    assertSame(first, soft.lane(0));
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "no release before the drain");
    assertTrue(first.running(), "its thread is not stopped yet");

    held.destroy();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    expectStatus(OwnerState.FENCED, RECLAIMING);
    String replaced = "1 faulted lane(s) replaced after their QPs were destroyed";
    assertEquals(1, expectStatus(OwnerState.ACTIVE, replaced).replaced());
    CqLane fresh = soft.lane(0);
    assertNotSame(first, fresh, "a fresh lane took the index");
    assertTrue(first.ended(), "the faulted lane's thread ended");
    assertNull(fresh.faulted());
    assertTrue(fresh.running(), "the fresh lane's thread runs");
    assertNotSame(first.cq, fresh.cq);
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "the faulted lane's CQ");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.MR), "the faulted lane's id MR");
    awaitRow(OwnerState.ACTIVE, LANE + ": " + replaced, Map.of("faults", 1L, "replaced", 1L));

    // A late word of the replaced lane is not the fresh one's.
    owner.tell(new CqLaneOwner.Faulted(first, "late"));
    parent.expectNoMessage(SHORT);

    // The owner watches the fresh lane: its failed poll faults it in turn.
    SoftRail.HeldQp second = soft.qp(fresh);
    failPollOf(second);
    expectStatus(OwnerState.FENCED, WAITING);
    awaitRow(OwnerState.FENCED, LANE + ": " + WAITING, Map.of("faults", 2L, "replaced", 1L));
    second.destroy();
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    assertEquals(new CqLaneOwner.Stopped(0, null), closer.receiveMessage(WAIT));
    watcher.expectTerminated(owner, WAIT);
  }

  @Test
  void aLaneThatFaultedBeforeItsOwnerStartedIsFaultedFromItsOwnersFirstWord() {
    CqLane lane = soft.lane(0);
    SoftRail.HeldQp held = soft.qp(lane);
    failPollOf(held);
    awaitTrue(() -> lane.faulted() != null, "the lane faulted");
    owner(lane);
    expectStatus(OwnerState.FENCED, WAITING);
    awaitRow(OwnerState.FENCED, LANE + ": " + WAITING, Map.of("faults", 1L));
    parent.expectNoMessage(SHORT);
    held.destroy();
  }

  @Test
  void aLaneWhoseReleaseFailsIsKeptAtItsIndexQuarantinedAndNeverRetried() {
    CqLane first = soft.lane(0);
    SoftRail.HeldQp held = soft.qp(first);
    ActorRef<CqLaneOwner.Command> owner = faulted(first, held);
    soft.faults.failNextDestroy(SoftFaults.Kind.CQ, EIO, false);
    held.destroy();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    expectStatus(OwnerState.FENCED, RECLAIMING);

    String kept =
        POLL_FAILED
            + " (kept, not reclaimed: its release failed: "
            + LANE
            + ": ibv_destroy_cq errno 5)";
    expectStatus(OwnerState.QUARANTINED, kept);
    awaitRow(OwnerState.QUARANTINED, LANE + ": " + kept, Map.of("faults", 1L, "replaced", 0L));
    List<QuarantinedOwner> listed = soft.quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("CqLane " + LANE, listed.getFirst().owner());
    assertEquals(QuarantinedOwner.Kind.LANE, listed.getFirst().kind());
    assertEquals(kept + "; never retried", listed.getFirst().reason());
    assertSame(first, soft.lane(0), "the kept lane stays at its index, with what it holds");
    assertTrue(first.ended(), "its thread was stopped");
    assertTrue(
        soft.verbs.pollCq(first.cq, new Verbs.Wc[1]) >= 0, "its CQ is still there, kept natively");

    // Kept for good: checks, a fault said again and closes change nothing and retry nothing.
    manualTime.timePasses(Duration.ofSeconds(1));
    owner.tell(new CqLaneOwner.Faulted(first, "again"));
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    assertEquals(
        new CqLaneOwner.Stopped(0, null), closer.receiveMessage(WAIT), "its thread had ended");
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    assertEquals(new CqLaneOwner.Stopped(0, null), closer.receiveMessage(WAIT));
    parent.expectNoMessage(SHORT);
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "never retried");
    awaitRow(OwnerState.QUARANTINED, LANE + ": " + kept, Map.of("faults", 1L));
    assertEquals(1, soft.quarantine.list().size());
  }

  @Test
  void aFaultedLaneWhoseThreadDoesNotEndIsKeptWithEverythingItHolds() {
    CqLane first = soft.lane(0);
    SoftRail.HeldQp held = soft.qp(first);
    ActorRef<CqLaneOwner.Command> owner = faulted(first, held);
    soft.block(first);
    held.destroy();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    expectStatus(OwnerState.FENCED, RECLAIMING);

    // The reclaim waits 10 s for the thread, then keeps the lane unreleased.
    String kept = POLL_FAILED + " (kept, not reclaimed: its thread did not end within 10 s)";
    RdmaContext.LaneStatus s =
        assertInstanceOf(
            RdmaContext.LaneStatus.class, parent.receiveMessage(Duration.ofSeconds(20)));
    assertEquals(OwnerState.QUARANTINED, s.state(), s::toString);
    assertEquals(kept, s.detail());
    awaitRow(OwnerState.QUARANTINED, LANE + ": " + kept, Map.of("faults", 1L));
    assertEquals(
        List.of("CqLane " + LANE),
        soft.quarantine.list().stream().map(QuarantinedOwner::owner).toList());
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "nothing released");
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.MR), "nothing released");
    assertSame(first, soft.lane(0));

    // Its close says the thread is alive, so that its context keeps the whole rail.
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    assertEquals(
        new CqLaneOwner.Stopped(0, LANE + " is kept and its thread is alive"),
        closer.receiveMessage(WAIT));
  }

  @Test
  void closingStopsTheLanesThreadAnswersEveryCloserThenStops() {
    CqLane lane = soft.lane(0);
    ActorRef<CqLaneOwner.Command> owner = owner(lane);
    expectStatus(OwnerState.ACTIVE, "");
    soft.blockingIo.hold();
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    expectStatus(OwnerState.CLOSING, "");
    awaitRow(OwnerState.CLOSING, LANE, Map.of());

    // While the join waits for the executor: a second close waits too, a fault is not acted on.
    TestProbe<CqLaneOwner.Stopped> second = testKit.createTestProbe();
    owner.tell(new CqLaneOwner.Close(second.getRef()));
    owner.tell(new CqLaneOwner.Faulted(lane, "late"));
    manualTime.timePasses(Duration.ofSeconds(1));
    closer.expectNoMessage(SHORT);
    assertTrue(lane.running(), "the thread is stopped on the blocking-I/O executor, not here");
    assertEquals(1, soft.blockingIo.waiting());

    soft.blockingIo.release();
    assertEquals(new CqLaneOwner.Stopped(0, null), closer.receiveMessage(WAIT));
    assertEquals(new CqLaneOwner.Stopped(0, null), second.receiveMessage(WAIT));
    watcher.expectTerminated(owner, WAIT);
    assertTrue(lane.ended(), "its thread ended");
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "its context releases the CQ");
    assertNull(row(), "its row left the live view");
    assertTrue(
        soft.board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("CqLane") && r.lastState() == OwnerState.CLOSING),
        () -> "retired CLOSING: " + soft.board.snapshot().retired());
    parent.expectNoMessage(Duration.ZERO);
    assertTrue(soft.quarantine.list().isEmpty(), soft.quarantine.list()::toString);
  }

  @Test
  void everyCloseDuringAReclaimIsAnsweredOnceTheFreshLaneIsStopped() {
    CqLane first = soft.lane(0);
    SoftRail.HeldQp held = soft.qp(first);
    ActorRef<CqLaneOwner.Command> owner = faulted(first, held);
    held.destroy();
    soft.blockingIo.hold();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    expectStatus(OwnerState.FENCED, RECLAIMING);
    assertEquals(1, soft.blockingIo.waiting(), "the reclaim waits for the executor");

    TestProbe<CqLaneOwner.Stopped> second = testKit.createTestProbe();
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    owner.tell(new CqLaneOwner.Close(second.getRef()));
    owner.tell(new CqLaneOwner.Faulted(first, "again"));
    closer.expectNoMessage(SHORT);
    parent.expectNoMessage(Duration.ZERO);

    soft.blockingIo.release();
    String replaced = "1 faulted lane(s) replaced after their QPs were destroyed";
    expectStatus(OwnerState.ACTIVE, replaced);
    expectStatus(OwnerState.CLOSING, replaced);
    assertEquals(new CqLaneOwner.Stopped(0, null), closer.receiveMessage(WAIT));
    assertEquals(new CqLaneOwner.Stopped(0, null), second.receiveMessage(WAIT));
    watcher.expectTerminated(owner, WAIT);
    CqLane fresh = soft.lane(0);
    assertNotSame(first, fresh);
    assertTrue(first.ended());
    assertTrue(fresh.ended(), "the fresh lane was stopped too");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "only the faulted lane's CQ");
  }

  @Test
  void anOwnerQuarantinedBySupervisionAnswersItsCloseSayingSoAndKeepsItsLane() {
    CqLane lane = soft.lane(0);
    ActorRef<CqLaneOwner.Command> owner = owner(lane);
    expectStatus(OwnerState.ACTIVE, "");
    soft.breakAtClose.set(true);
    owner.tell(new CqLaneOwner.Close(closer.getRef()));
    CqLaneOwner.Stopped s = closer.receiveMessage(WAIT);
    assertEquals(0, s.index());
    assertNotNull(s.failure(), "a quarantined owner does not say its thread ended");
    assertTrue(
        s.failure().startsWith("the CqLane " + LANE + " of engine test-engine is quarantined"),
        s::failure);
    assertTrue(s.failure().contains("test: the owner broke at its close"), s::failure);
    List<QuarantinedOwner> listed = soft.quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals(QuarantinedOwner.Kind.OWNER, listed.getFirst().kind());
    assertEquals("CqLane " + LANE, listed.getFirst().owner());
    awaitTrue(
        () -> {
          OwnerView.Owner r = row();
          return r != null
              && r.state() == OwnerState.QUARANTINED
              && r.detail().endsWith("while it handled Close");
        },
        "the row shows the owner quarantined");
    assertTrue(lane.running(), "its lane is kept as it was");
    assertFalse(lane.ended());
    lane.stop();
    assertTrue(lane.join(5_000));
  }
}
