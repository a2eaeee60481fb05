package io.orbite.transport.rdma;

import static io.orbite.transport.rdma.SoftRail.SHORT;
import static io.orbite.transport.rdma.SoftRail.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.Access;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.transport.TestContexts;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The owner of one rail ({@link RdmaContext}) over a rail of the software provider, with its CQ
 * lanes' owners as its children: active; paused when the port goes down or the GID changes (the
 * provider's port and GID controls, whose async events start a scan at once); validating, then
 * active again or back to paused; fenced for good by a DEVICE_FATAL event; closing, which releases
 * the rail's native objects in dependency order (counted by the provider's fault table), or
 * quarantined when a release fails. Its timers, the one-second scan and the 200 ms view refresh
 * with its MR sweep, run on ManualTime; a validation lasts a real second, as the code measures it.
 */
class RdmaContextTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(RdmaContextTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());
  private static final AtomicInteger SPAWNED = new AtomicInteger();

  private static final Duration SCAN = Duration.ofSeconds(1);
  private static final String DEVICE = SoftRail.DEVICE;
  private static final int EIO = Errno.EIO.number();

  @RegisterExtension final SoftRail soft = new SoftRail(RdmaContext.Close.class);

  private final Rail rail = soft.rail;
  private final RailHealth health = RailOpener.health(soft.context.config().rdma());
  private final RailSelector selector = new RailSelector(new double[] {rail.gbps()});
  private final TestProbe<RdmaContext.Closed> closer = testKit.createTestProbe();
  private final TestProbe<Object> watcher = testKit.createTestProbe();

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  private ActorRef<RdmaContext.Command> spawn() {
    ActorRef<RdmaContext.Command> ref =
        testKit.spawn(
            RdmaContext.create(rail, soft.context, health, selector, soft.counters),
            "context-" + DEVICE + "-" + SPAWNED.incrementAndGet());
    awaitRow(OwnerState.ACTIVE, DEVICE + " GID 0");
    return ref;
  }

  private OwnerView.Owner row() {
    return soft.board.snapshot().owners().stream()
        .filter(o -> o.kind().equals("RdmaContext"))
        .findFirst()
        .orElse(null);
  }

  /** Waits until the context's row is in {@code state} with {@code detail}. */
  private OwnerView.Owner awaitRow(OwnerState state, String detail) {
    return watcher.awaitAssert(
        WAIT,
        () -> {
          OwnerView.Owner r = row();
          assertNotNull(r, () -> "no RdmaContext row: " + soft.board.snapshot());
          assertEquals(state, r.state(), r::toString);
          assertEquals(detail, r.detail(), r::toString);
          return r;
        });
  }

  /** Waits until the context's row shows {@code figure} at {@code value}. */
  private void awaitFigure(String figure, long value) {
    watcher.awaitAssert(
        WAIT,
        () -> {
          OwnerView.Owner r = row();
          assertNotNull(r);
          assertEquals(value, r.charges().get(figure), () -> figure + " in " + r);
          return null;
        });
  }

  private void await(BooleanSupplier what, String said) {
    SoftRail.await(watcher, what, said);
  }

  /**
   * Lets monitor scans come, one per second of ManualTime, until the context's row is in {@code
   * state} with {@code detail} (a validation lasts at least a real second).
   */
  private void scanUntil(OwnerState state, String detail) {
    watcher.awaitAssert(
        Duration.ofSeconds(10),
        Duration.ofMillis(250),
        () -> {
          OwnerView.Owner r = row();
          if (r == null || r.state() != state || !r.detail().equals(detail)) {
            manualTime.timePasses(SCAN);
          }
          assertNotNull(r);
          assertEquals(state, r.state(), r::toString);
          assertEquals(detail, r.detail(), r::toString);
          return null;
        });
  }

  private void portDown() {
    soft.faults.setPortState(DEVICE, Rail.PORT, Ibv.PORT_DOWN);
  }

  private void portUp() {
    soft.faults.setPortState(DEVICE, Rail.PORT, Ibv.PORT_ACTIVE);
  }

  /** Closes the context and checks that every native object of the rail was released once. */
  private void closeReleasingAll(ActorRef<RdmaContext.Command> context, int cqs, int mrs) {
    context.tell(new RdmaContext.Close(closer.getRef()));
    assertEquals(new RdmaContext.Closed(DEVICE), closer.receiveMessage(Duration.ofSeconds(15)));
    assertReleasedAll(context, cqs, mrs);
  }

  /**
   * The context stopped after releasing each of the rail's native objects once ({@code cqs} CQs,
   * {@code mrs} MRs, the PD, the device), every lane's thread ended, and nothing is listed.
   */
  private void assertReleasedAll(ActorRef<RdmaContext.Command> context, int cqs, int mrs) {
    watcher.expectTerminated(context, WAIT);
    assertEquals(mrs, soft.faults.destroyCalls(SoftFaults.Kind.MR), "MRs deregistered");
    assertEquals(cqs, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "CQs destroyed");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.PD), "the PD deallocated");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.CONTEXT), "the device closed");
    assertFalse(soft.verbs.queryPort(rail.context, Rail.PORT).ok(), "the device is closed");
    rail.lanes.forEach(l -> assertTrue(l.ended(), l.name() + "'s thread ended"));
    assertTrue(soft.board.snapshot().owners().isEmpty(), () -> "rows: " + soft.board.snapshot());
    assertTrue(soft.quarantine.list().isEmpty(), soft.quarantine.list()::toString);
  }

  /**
   * Spawns a context and closes it: it answers, then is quarantined because a release failed
   * ({@code failed}), its row and its one ledger entry (kind LANE) saying so.
   */
  private ActorRef<RdmaContext.Command> closedQuarantined(String failed) {
    ActorRef<RdmaContext.Command> context = spawn();
    context.tell(new RdmaContext.Close(closer.getRef()));
    assertEquals(new RdmaContext.Closed(DEVICE), closer.receiveMessage(WAIT));
    awaitRow(OwnerState.QUARANTINED, DEVICE + " GID 0: " + failed);
    List<QuarantinedOwner> listed = soft.quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("RdmaContext " + DEVICE, listed.getFirst().owner());
    assertEquals(QuarantinedOwner.Kind.LANE, listed.getFirst().kind());
    assertEquals("native release failed (never retried): " + failed, listed.getFirst().reason());
    return context;
  }

  @Test
  void theMonitorScansOnceASecondWithoutTrafficAndFollowsTheLinkRate() {
    spawn();
    assertEquals(100.0, rail.gbps(), "4x EDR");
    awaitFigure("linkBytesPerSecond", 12_500_000_000L);
    // A renegotiated link raises no event: only the scan at the tick reads it.
    soft.faults.setPortRate(DEVICE, Rail.PORT, 1, SoftFabric.SPEED_EDR);
    manualTime.timePasses(SCAN.minusMillis(1));
    watcher.expectNoMessage(SHORT);
    assertEquals(0, soft.counters.monitorTicks.sum(), "no tick yet");
    assertEquals(100.0, rail.gbps());

    manualTime.timePasses(Duration.ofMillis(1));
    await(() -> rail.gbps() == 25.0, "the scan read the 1x EDR link");
    awaitFigure("linkBytesPerSecond", 3_125_000_000L);
    assertEquals(1, soft.counters.monitorTicks.sum());
    assertEquals(1, soft.counters.routeQueries.sum());
    assertEquals(0, soft.counters.eventScans.sum());
    awaitRow(OwnerState.ACTIVE, DEVICE + " GID 0");
    assertFalse(rail.fenced(), "a slower link is not a fault");
  }

  @Test
  void theViewRefreshEvery200msSweepsHiddenMrsOffTheMailboxAndRepublishesTheFigures() {
    Registration reg =
        new Registration(7, Arena.ofAuto().allocate(1 << 16, 4096), Access.READ_WRITE, null);
    assertTrue(rail.mrs.mrFor(reg).ok());
    assertEquals(1, reg.pins(), "the MR's device pin");
    spawn();
    awaitFigure("mrs", 1);

    reg.hide(); // unregistered: its MR goes at the next sweep, off the mailbox
    soft.blockingIo.hold();
    manualTime.timePasses(Duration.ofMillis(199));
    assertEquals(0, soft.blockingIo.waiting(), "no refresh yet");
    manualTime.timePasses(Duration.ofMillis(1));
    await(() -> soft.blockingIo.waiting() == 1, "the refresh started the sweep on the executor");
    assertEquals(1, rail.mrs.size(), "not swept in the mailbox");
    soft.blockingIo.release();
    await(() -> rail.mrs.size() == 0, "swept");
    assertEquals(0, reg.pins(), "its pin went back, so the registry may free the memory");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.MR));
    assertEquals(1L, row().charges().get("mrs"), "figures move between messages");
    manualTime.timePasses(Duration.ofMillis(200));
    awaitFigure("mrs", 0);
    awaitFigure("mrsRegistered", 1);
  }

  @Test
  void aPortThatGoesDownFencesTheRouteAtOnceOpensTheRailsPairsAndRetiresItsQps() {
    RailHealth.Pair pair = new RailHealth.Pair(TestContexts.EPOCH, rail.index, 0);
    health.succeeded(
        assertInstanceOf(RailHealth.Admission.Admitted.class, health.admit(pair)).ticket());
    assertEquals(RailHealth.State.CLOSED, health.state(pair));
    SoftRail.HeldQp held = soft.qp(soft.lane(0));
    ActorRef<RdmaContext.Command> context = spawn();

    portDown(); // its PORT_ERR event has the context scan now, not at its next tick
    String fenced = DEVICE + " GID 0: route generation 1 fenced: port 1 is down";
    awaitRow(OwnerState.FENCED, fenced);
    assertTrue(rail.fenced());
    assertEquals(1, rail.generation());
    assertEquals(0, rail.route().generation(), "the published route stays, fenced");
    assertEquals(RailHealth.State.OPEN, health.state(pair), "the rail's pairs opened");
    await(
        () -> held.retireRequests.equals(List.of(DEVICE + " route fenced: port 1 is down")),
        "the QP made under the old route was handed to its owner to retire");
    assertEquals(1, soft.counters.routeFences.sum());
    assertEquals(1, soft.counters.eventScans.sum());
    awaitFigure("pauses", 1);
    awaitFigure("railPairsOpen", 1);

    // Paused: each tick opens the pairs again and scans; the port is still down.
    long ticks = soft.counters.monitorTicks.sum();
    manualTime.timePasses(SCAN);
    await(() -> soft.counters.monitorTicks.sum() == ticks + 1, "the paused rail's tick scans");
    watcher.expectNoMessage(SHORT);
    awaitRow(OwnerState.FENCED, fenced);
    assertEquals(1, rail.generation());

    held.destroy();
    closeReleasingAll(context, 2, 2);
  }

  @Test
  void aPausedRailValidatesForAWholeScanPeriodAndAnEventDuringValidationStartsItOver() {
    ActorRef<RdmaContext.Command> context = spawn();
    portDown();
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: route generation 1 fenced: port 1 is down");

    portUp(); // its PORT_ACTIVE event has the paused context scan at once
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: validating route generation 1 on GID index 0");

    // A GID event during the validation (entry 0 rewritten unchanged) abandons it.
    soft.faults.setGid(DEVICE, Rail.PORT, 0, 0);
    awaitRow(
        OwnerState.FENCED,
        DEVICE
            + " GID 0: validation of route generation 1 abandoned"
            + " (1 port or GID event(s) during validation); generation 2 fenced");
    assertEquals(2, rail.generation());
    assertTrue(rail.fenced());

    long began = System.nanoTime();
    manualTime.timePasses(SCAN); // the paused rail's tick: a scan that finds all well
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: validating route generation 2 on GID index 0");
    scanUntil(OwnerState.ACTIVE, DEVICE + " GID 0");
    assertTrue(
        System.nanoTime() - began >= SCAN.toNanos(),
        "published only by a scan a whole period after the validation began");
    assertFalse(rail.fenced());
    assertEquals(2, rail.route().generation());
    assertEquals(1, soft.counters.routeRecoveries.sum());
    assertEquals(2, soft.counters.routeFences.sum());
    awaitFigure("publishedGeneration", 2);
    awaitFigure("routeRecoveries", 1);

    closeReleasingAll(context, 2, 2);
  }

  @Test
  void anInvalidGidKeepsTheRailPausedUntilAValidEntryAppearsAndTheRouteMovesToIt() {
    Verbs.Gid before = rail.route().gid();
    ActorRef<RdmaContext.Command> context = spawn();
    soft.faults.invalidateGid(DEVICE, Rail.PORT, 0);
    awaitRow(
        OwnerState.FENCED,
        DEVICE + " GID 0: route generation 1 fenced: 1 port or GID event(s) for port 1");
    manualTime.timePasses(SCAN);
    awaitRow(
        OwnerState.FENCED, DEVICE + " GID 0: route generation 1 fenced: no valid GID on port 1");

    soft.faults.setGid(DEVICE, Rail.PORT, 3, 9);
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: validating route generation 1 on GID index 3");
    scanUntil(OwnerState.ACTIVE, DEVICE + " GID 3");
    Verbs.Gid now = soft.verbs.queryGid(rail.context, Rail.PORT, 3).value();
    assertEquals(new Rail.Route(1, 3, now), rail.route());
    assertNotEquals(before, now);
    RdmaWire.Rail published = rail.published();
    assertEquals(now.hi(), published.gidHi(), "the handshake publishes the new GID");
    assertEquals(now.lo(), published.gidLo());
    awaitFigure("gidIndex", 3);

    closeReleasingAll(context, 2, 2);
  }

  @Test
  void aPausedRailWaitsUntilEveryQpOfTheOldRouteWasDestroyedAskingItsOwnerAtEachScan() {
    SoftRail.HeldQp held = soft.qp(soft.lane(1));
    ActorRef<RdmaContext.Command> context = spawn();
    portDown();
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: route generation 1 fenced: port 1 is down");
    portUp();
    String waiting =
        DEVICE
            + " GID 0: route generation 1 fenced: 1 QP(s) of the old route not yet drained and"
            + " destroyed";
    awaitRow(OwnerState.FENCED, waiting);
    int asked = held.retireRequests.size();
    assertTrue(asked >= 2, () -> "at the fence and at the scan: " + held.retireRequests);

    manualTime.timePasses(SCAN);
    await(() -> held.retireRequests.size() > asked, "asked again at the next scan");
    awaitRow(OwnerState.FENCED, waiting);

    held.destroy();
    manualTime.timePasses(SCAN);
    awaitRow(OwnerState.FENCED, DEVICE + " GID 0: validating route generation 1 on GID index 0");

    closeReleasingAll(context, 2, 2);
  }

  @Test
  void aDeviceFatalEventFencesTheRouteForGoodAndNoScanRunsAfterIt() {
    SoftRail.HeldQp held = soft.qp(soft.lane(0));
    ActorRef<RdmaContext.Command> context = spawn();
    soft.faults.raiseDeviceFatal(DEVICE);
    String fatal =
        DEVICE + " GID 0: route generation 1 fenced: a DEVICE_FATAL event (fenced for good)";
    awaitRow(OwnerState.FENCED, fatal);
    long scans = soft.counters.monitorTicks.sum();
    long events = soft.counters.eventScans.sum();
    int asked = held.retireRequests.size();

    // Port events are noticed, ticks come, the port is fine again: no scan, no way back.
    portDown();
    await(() -> soft.counters.eventScans.sum() > events, "the event was noticed");
    portUp();
    manualTime.timePasses(SCAN.multipliedBy(3));
    await(
        () -> held.retireRequests.size() >= asked + 3,
        "each tick asks the old route's QPs' owners to retire them again");
    watcher.expectNoMessage(SHORT);
    assertEquals(scans, soft.counters.monitorTicks.sum(), "no scan after the fatal event");
    assertEquals(1, rail.generation());
    assertTrue(rail.fenced());
    awaitRow(OwnerState.FENCED, fatal);

    held.destroy();
    closeReleasingAll(context, 2, 2);
  }

  @Test
  void aFaultedLaneShowsOnTheRowWithoutFencingTheRouteAndHoldsBackAValidationUntilReplaced() {
    SoftRail.HeldQp held = soft.qp(soft.lane(0));
    ActorRef<RdmaContext.Command> context = spawn();
    soft.faults.failPoll(held.qp.qp.qpNum(), EIO);
    String laneWaits =
        DEVICE + " lane 0: ibv_poll_cq on soft0 failed: errno 5 (waiting for its QPs' destroy)";
    awaitRow(OwnerState.ACTIVE, DEVICE + " GID 0: " + laneWaits);
    soft.faults.clearPollFaults();
    assertFalse(rail.fenced(), "a faulted lane alone does not fence the route");
    awaitFigure("lanesFaulted", 1);

    portDown();
    awaitRow(
        OwnerState.FENCED,
        DEVICE + " GID 0: route generation 1 fenced: port 1 is down; " + laneWaits);
    portUp();
    String notReclaimed =
        DEVICE + " GID 0: route generation 1 fenced: soft0 lane 0 is faulted, not reclaimed yet";
    awaitRow(OwnerState.FENCED, notReclaimed + "; " + laneWaits);

    // Once its QP is destroyed the lane's owner replaces it at its next drain check.
    held.destroy();
    manualTime.timePasses(CqLaneOwner.DRAIN_CHECK);
    String replaced = "1 faulted lane(s) replaced after their QPs were destroyed";
    awaitRow(OwnerState.FENCED, notReclaimed + "; " + replaced);
    awaitFigure("lanesReplaced", 1);
    manualTime.timePasses(SCAN);
    awaitRow(
        OwnerState.FENCED,
        DEVICE + " GID 0: validating route generation 1 on GID index 0; " + replaced);

    closeReleasingAll(context, 3, 3);
  }

  @Test
  void closingStopsEveryLaneThenReleasesTheRailsNativeObjectsInDependencyOrder() {
    Registration reg =
        new Registration(7, Arena.ofAuto().allocate(1 << 16, 4096), Access.READ_WRITE, null);
    assertTrue(rail.mrs.mrFor(reg).ok());
    ActorRef<RdmaContext.Command> context = spawn();
    closeReleasingAll(context, 2, 3);
    assertEquals(0, reg.pins(), "the persistent MR's pin went back");
    assertTrue(
        soft.board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("RdmaContext") && r.lastState() == OwnerState.CLOSING),
        () -> "retired: " + soft.board.snapshot().retired());
    assertEquals(
        2,
        soft.board.snapshot().retired().stream().filter(r -> r.kind().equals("CqLane")).count(),
        "both lanes' owners stopped");
  }

  @Test
  void aCloseWhileClosingIsAnsweredAtOnceAndNoEventStartsAScan() {
    ActorRef<RdmaContext.Command> context = spawn();
    soft.blockingIo.hold(); // the lanes' owners cannot stop their threads yet
    context.tell(new RdmaContext.Close(closer.getRef()));
    awaitRow(OwnerState.CLOSING, DEVICE + " GID 0");
    await(() -> soft.blockingIo.waiting() == 2, "both lanes' joins wait for the executor");

    TestProbe<RdmaContext.Closed> second = testKit.createTestProbe();
    context.tell(new RdmaContext.Close(second.getRef()));
    assertEquals(new RdmaContext.Closed(DEVICE), second.receiveMessage(WAIT));
    closer.expectNoMessage(Duration.ZERO);

    long scans = soft.counters.monitorTicks.sum();
    long events = soft.counters.eventScans.sum();
    portDown();
    manualTime.timePasses(SCAN.multipliedBy(2));
    closer.expectNoMessage(SHORT);
    assertEquals(scans, soft.counters.monitorTicks.sum(), "no scan while closing");
    assertEquals(events, soft.counters.eventScans.sum(), "the event is not acted on");
    assertEquals(0, rail.generation(), "nothing fenced while closing");
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CONTEXT));

    soft.blockingIo.release();
    assertEquals(new RdmaContext.Closed(DEVICE), closer.receiveMessage(WAIT));
    assertReleasedAll(context, 2, 2);
  }

  @Test
  void aFailedPdReleaseQuarantinesTheContextKeepsTheDeviceAndIsNeverRetried() {
    soft.faults.failNextDestroy(SoftFaults.Kind.PD, EIO, false);
    String failed = DEVICE + ": ibv_dealloc_pd errno 5";
    ActorRef<RdmaContext.Command> context = closedQuarantined(failed);
    assertEquals(2, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "the lanes were released");
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.PD));
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CONTEXT), "the device is kept");
    assertTrue(soft.verbs.queryPort(rail.context, Rail.PORT).ok(), "the device is still open");

    // Quarantined: a close is answered at once, no scan runs (its timers and event watcher ended
    // at the close) and no release is tried again.
    long scans = soft.counters.monitorTicks.sum();
    TestProbe<RdmaContext.Closed> again = testKit.createTestProbe();
    context.tell(new RdmaContext.Close(again.getRef()));
    assertEquals(new RdmaContext.Closed(DEVICE), again.receiveMessage(WAIT));
    portDown();
    manualTime.timePasses(SCAN.multipliedBy(2));
    watcher.expectNoMessage(SHORT);
    assertEquals(scans, soft.counters.monitorTicks.sum());
    assertEquals(0, rail.generation());
    assertEquals(1, soft.faults.destroyCalls(SoftFaults.Kind.PD), "never retried");
    awaitRow(OwnerState.QUARANTINED, DEVICE + " GID 0: " + failed);
    assertEquals(1, soft.quarantine.list().size());
  }

  @Test
  void aFailedCqReleaseKeepsThePdAndTheDeviceThatDependOnIt() {
    soft.faults.failNextDestroy(SoftFaults.Kind.CQ, EIO, false);
    closedQuarantined("rdma " + DEVICE + " lane 0: ibv_destroy_cq errno 5");
    assertEquals(2, soft.faults.destroyCalls(SoftFaults.Kind.CQ), "each lane's CQ tried once");
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.PD), "the PD is kept");
    assertEquals(0, soft.faults.destroyCalls(SoftFaults.Kind.CONTEXT), "the device is kept");
  }

  @Test
  void aLaneWhoseThreadDoesNotEndAtCloseKeepsTheWholeRail() {
    ActorRef<RdmaContext.Command> context = spawn();
    soft.block(soft.lane(1));
    context.tell(new RdmaContext.Close(closer.getRef()));
    // Lane 1's owner waits 10 s for its thread, then is kept; the context keeps the whole rail.
    assertEquals(new RdmaContext.Closed(DEVICE), closer.receiveMessage(Duration.ofSeconds(20)));
    String stuck = "rdma " + DEVICE + " lane 1 did not end within 10 s";
    awaitRow(
        OwnerState.QUARANTINED,
        DEVICE + " GID 0: " + stuck + "; " + DEVICE + " lane 1: kept: " + stuck);
    Map<String, QuarantinedOwner> listed =
        soft.quarantine.list().stream().collect(Collectors.toMap(QuarantinedOwner::owner, q -> q));
    assertEquals(2, listed.size(), listed::toString);
    QuarantinedOwner ctx = listed.get("RdmaContext " + DEVICE);
    assertEquals(QuarantinedOwner.Kind.LANE, ctx.kind());
    assertEquals("native release failed (never retried): " + stuck, ctx.reason());
    QuarantinedOwner lane = listed.get("CqLane rdma " + DEVICE + " lane 1");
    assertEquals(QuarantinedOwner.Kind.LANE, lane.kind());
    assertEquals("kept: " + stuck + "; never retried", lane.reason());
    for (SoftFaults.Kind kind : SoftFaults.Kind.values()) {
      assertEquals(0, soft.faults.destroyCalls(kind), kind + ": nothing of the rail released");
    }
    assertTrue(soft.lane(0).ended());
    assertFalse(soft.lane(1).ended(), "still blocked");
  }

  @Test
  void aContextQuarantinedBySupervisionAnswersItsCloseAtOnceAndKeepsTheRail() {
    ActorRef<RdmaContext.Command> context = spawn();
    soft.breakAtClose.set(true);
    context.tell(new RdmaContext.Close(closer.getRef()));
    assertEquals(new RdmaContext.Closed(DEVICE), closer.receiveMessage(WAIT));
    List<QuarantinedOwner> listed = soft.quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("RdmaContext " + DEVICE, listed.getFirst().owner());
    assertEquals(QuarantinedOwner.Kind.OWNER, listed.getFirst().kind());
    assertTrue(
        listed.getFirst().reason().contains("test: the owner broke at its close"),
        listed.getFirst()::reason);
    await(() -> row() != null && row().state() == OwnerState.QUARANTINED, "its row");
    for (SoftFaults.Kind kind : SoftFaults.Kind.values()) {
      assertEquals(0, soft.faults.destroyCalls(kind), kind + ": the rail is kept");
    }
    rail.lanes.forEach(l -> assertTrue(l.running(), l.name() + " still runs"));

    // The test lets go of the rail itself (the device's close ends the event watcher).
    rail.lanes.forEach(CqLane::stop);
    rail.lanes.forEach(l -> assertTrue(l.join(5_000)));
    assertEquals(List.of(), rail.close());
  }
}
