package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of one rail ({@link Rail}: device context, PD, persistent MRs, CQ lanes). Child of the
 * RdmaTransport.
 *
 * <p>The monitor: one scan a second, even without traffic, on the blocking-I/O executor (never in
 * the mailbox; one scan at a time). A scan drains the context's async events, reads the port state
 * and the GID at the route's index. Each CQ lane has an owner actor of its own, a child ({@link
 * CqLaneOwner}: a faulted lane is replaced once natively drained, or kept), which tells this one
 * what became of its lane ({@link LaneStatus}).
 *
 * <p>States: {@link #active} → {@link #paused} when a scan sees the port not ACTIVE, a PORT_ERR
 * event for it (a flap between scans), or the route's GID changed or invalid: the route is fenced
 * (its generation advanced, {@link Rail#fence}), every pair of the rail opened in the rail circuit
 * so requests go to other rails, and every QP made under the old route retired by its owner; the
 * PD, MRs and key history stay. A faulted lane alone does not fence the route. {@link #paused} →
 * {@link #validating} once a scan finds the port ACTIVE, a GID for the new route (automatic: the
 * best valid entry, ranked again; pinned: that index, valid), every QP of the old route destroyed
 * (its work drained), and every lane's owner polling (none faulted, being reclaimed or kept); the
 * generation is noted. {@link #validating} → {@link #active} when a scan at least {@link #SCAN}
 * later (scans an async event starts do not shorten it) finds the same again under the same
 * generation and no port or GID event in between: the route is published under that generation (the
 * rail circuit's trials then reopen the pairs on repaired QPs, which reach the peer at the new
 * address); anything else advances the generation and goes back to {@link #paused}. A DEVICE_FATAL
 * event fences the route for good: {@link #fatal}, until close. Then {@link #closing} (every lane's
 * owner stops its thread, then after the scan and the MR sweep in flight the native objects are
 * released in dependency order) → stopped; or {@link #quarantined} when a release failed: what
 * depends on it is kept, nothing is retried.
 */
final class RdmaContext {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RdmaContext.class);

  sealed interface Command {}

  record Close(ActorRef<Closed> replyTo) implements Command {}

  record Closed(String device) {}

  private enum Tick implements Command {
    INSTANCE
  }

  /** An async event is pending (its watcher's word): scan now, as at a tick. */
  private enum EventPending implements Command {
    INSTANCE
  }

  /** Re-publishes the owner view's figures (they move on lane threads, between messages). */
  private enum Refresh implements Command {
    INSTANCE
  }

  private record Released(List<String> failures) implements Command {}

  /** What the owner of the lane at {@code index} says of it ({@link CqLaneOwner}). */
  record LaneStatus(int index, OwnerState state, String detail, long replaced) implements Command {}

  /** A lane owner's answer to the close: its lane's thread ended, or why not. */
  private record LaneStopped(int index, String failure) implements Command {}

  /** A scan's result, or why it failed. */
  private record Scanned(Rail.Observation seen, Throwable failure) implements Command {}

  private static final Duration SCAN = Duration.ofSeconds(1);

  private final Rail rail;
  private final TransportContext context;
  private final RailHealth health;
  private final RailSelector selector;
  private final RdmaCounters counters;
  private final TimerScheduler<Command> timers;
  private final ActorContext<Command> ctx;
  private OwnerState state = OwnerState.ACTIVE;
  private long pauses;
  private long recoveries;

  /** What the monitor says of the route (fenced, validating, abandoned), or of a failed release. */
  private String detail = "";

  /** What the lanes' monitor says: a faulted lane, or how many faulted lanes were replaced. */
  private String laneDetail = "";

  /** The owners of the rail's CQ lanes, by index (children, spawned with the context). */
  private final Map<Integer, ActorRef<CqLaneOwner.Command>> laneOwners = new java.util.TreeMap<>();

  /** What each lane's owner last said of it, by index. */
  private final Map<Integer, LaneStatus> laneStatus = new java.util.TreeMap<>();

  /** The scan in flight (or the last one): close waits for it before releasing the device. */
  private CompletableFuture<Rail.Observation> scan = CompletableFuture.completedFuture(null);

  /** The thread waiting for the context's async events; stopped before the device closes. */
  private EventWatch events;

  private RdmaContext(
      ActorContext<Command> ctx,
      Rail rail,
      TransportContext context,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters,
      TimerScheduler<Command> timers) {
    this.ctx = ctx;
    this.selector = selector;
    this.rail = rail;
    this.context = context;
    this.health = health;
    this.counters = counters;
    this.timers = timers;
  }

  static Behavior<Command> create(
      Rail rail,
      TransportContext context,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  RdmaContext c =
                      new RdmaContext(ctx, rail, context, health, selector, counters, timers);
                  for (CqLane lane : rail.lanes) {
                    ActorRef<CqLaneOwner.Command> owner =
                        ctx.spawn(
                            CqLaneOwner.create(rail, lane, context, ctx.getSelf()),
                            "lane-" + lane.index);
                    ctx.watchWith(
                        owner,
                        new LaneStopped(
                            lane.index, "the owner of lane " + lane.index + " stopped"));
                    c.laneOwners.put(lane.index, owner);
                    c.laneStatus.put(
                        lane.index, new LaneStatus(lane.index, OwnerState.ACTIVE, "", 0));
                  }
                  timers.startTimerWithFixedDelay(Tick.INSTANCE, SCAN);
                  timers.startTimerWithFixedDelay(Refresh.INSTANCE, RdmaTransport.VIEW_REFRESH);
                  ActorRef<Command> self = ctx.getSelf();
                  c.events = new EventWatch(rail, () -> self.tell(EventPending.INSTANCE));
                  c.events.start();
                  return OwnerBoard.reporting(context.owners(), c::report, c.active());
                }));
  }

  private OwnerBoard.Report report() {
    RailHealth.RailCounts circuit = health.rail(rail.index);
    RailSelector.Load load = selector.load(rail.index);
    Rail.Route route = rail.route();
    return new OwnerBoard.Report(
        "RdmaContext",
        state,
        Map.ofEntries(
            Map.entry("mrs", (long) rail.mrs.size()),
            Map.entry("mrsRegistered", rail.mrs.registered.sum()),
            Map.entry("mrsKept", (long) rail.mrs.kept()),
            Map.entry("lanes", (long) rail.lanes.size()),
            Map.entry("lanesFaulted", rail.lanesFaulted.sum()),
            Map.entry(
                "lanesReplaced",
                laneStatus.values().stream().mapToLong(LaneStatus::replaced).sum()),
            Map.entry(
                "lanesKept",
                laneStatus.values().stream()
                    .filter(l -> l.state() == OwnerState.QUARANTINED)
                    .count()),
            Map.entry("pauses", pauses),
            Map.entry("railPairsOpen", (long) circuit.pairsOpen()),
            Map.entry("railPairsHalfOpen", (long) circuit.pairsHalfOpen()),
            Map.entry("railErrors", circuit.errors()),
            Map.entry("gidIndex", (long) route.gidIndex()),
            Map.entry("routeGeneration", rail.generation()),
            Map.entry("publishedGeneration", route.generation()),
            Map.entry("routeRecoveries", recoveries),
            Map.entry("linkBytesPerSecond", load.linkBytesPerSecond()),
            Map.entry("selectionBytesPerSecond", load.selectionBytesPerSecond()),
            Map.entry("transmitBytesPerSecond", load.transmitBytesPerSecond()),
            Map.entry("chargedBytes", load.chargedBytes()),
            Map.entry("postedBytes", load.postedBytes()),
            Map.entry("completedBytes", load.completedBytes()),
            Map.entry("allocatedBytes", load.allocatedBytes()),
            Map.entry("numaNode", (long) rail.numaNode),
            Map.entry("tier", (long) load.tier()),
            Map.entry("eligible", selector.policy().allowed(rail.index) ? 1L : 0L)),
        rail.device + " GID " + route.gidIndex() + shown());
  }

  /** The owner detail after the device and GID index: the route's, then the lanes'. */
  private String shown() {
    String both =
        detail.isEmpty() ? laneDetail : laneDetail.isEmpty() ? detail : detail + "; " + laneDetail;
    return both.isEmpty() ? "" : ": " + both;
  }

  /** Starts a scan unless one is in flight; its result comes back as {@link Scanned}. */
  private void startScan(boolean rank) {
    counters.monitorTicks.increment();
    if (!scan.isDone()) {
      return;
    }
    counters.routeQueries.increment();
    EventWatch watch = events;
    scan =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                Rail.Observation seen = rail.observe(rank);
                if (rail.relink(seen)) {
                  // The port renegotiated its link: selection seeds and clamps follow it.
                  selector.linkRate(rail.index, rail.gbps());
                  LOG.info(
                      "RDMA {}: link rate now {} Gb/s (width {}, speed {})",
                      rail.device,
                      rail.gbps(),
                      seen.port().activeWidth(),
                      seen.port().activeSpeed());
                }
                return seen;
              } finally {
                watch.scanned(); // its events were drained: the watcher may look again
              }
            },
            context.blockingIo());
    ctx.pipeToSelf(scan, Scanned::new);
  }

  /**
   * The monitor's states ({@link #active}, {@link #paused}, {@link #validating}, {@link #fatal}):
   * {@code own} with what every one of them answers the same way (the view refresh and MR sweep,
   * the close, the lane owners' word).
   */
  private Behavior<Command> monitoring(
      org.apache.pekko.actor.typed.javadsl.BehaviorBuilder<Command> own) {
    return own.onMessageEquals(Refresh.INSTANCE, this::onRefresh)
        .onMessageEquals(
            EventPending.INSTANCE,
            () -> {
              // Scanned now, as the state's own tick would: the scan drains and judges the event.
              counters.eventScans.increment();
              ctx.getSelf().tell(Tick.INSTANCE);
              return Behaviors.same();
            })
        .onMessage(Close.class, this::onClose)
        .onMessage(LaneStatus.class, this::onLaneStatus)
        .onMessage(LaneStopped.class, this::onOwnerGone)
        .build();
  }

  private Behavior<Command> active() {
    state = OwnerState.ACTIVE;
    return monitoring(
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  startScan(false);
                  return Behaviors.same();
                })
            .onMessage(
                Scanned.class,
                m -> {
                  if (m.failure() == null && m.seen().deviceFatal()) {
                    fence(FATAL);
                    return fatal();
                  }
                  String why =
                      m.failure() != null ? "scan failed: " + m.failure() : faultIn(m.seen());
                  if (why == null) {
                    return Behaviors.same();
                  }
                  fence(why);
                  return paused();
                }));
  }

  /**
   * The MR sweep: a hidden registration's MR is deregistered once no work holds the range, so that
   * its unregister can free the memory (the MR's device pin keeps it until then). Deregistration is
   * a native call (on hardware it unpins the pages), so it runs on the blocking-I/O executor, one
   * sweep at a time.
   */
  private Behavior<Command> onRefresh() {
    if (rail.mrs.anyHidden() && sweep.isDone()) {
      sweep = CompletableFuture.runAsync(rail.mrs::sweep, context.blockingIo());
    }
    return Behaviors.same();
  }

  /** The MR sweep in flight (or the last one): close waits for it before releasing the device. */
  private CompletableFuture<Void> sweep = CompletableFuture.completedFuture(null);

  /**
   * A lane's owner said what became of it: the owner detail shows a lane that is not polling, or
   * how many faulted lanes were replaced.
   */
  private Behavior<Command> onLaneStatus(LaneStatus m) {
    laneStatus.put(m.index(), m);
    String shown = null;
    long replaced = 0;
    for (LaneStatus l : laneStatus.values()) {
      replaced += l.replaced();
      if (l.state() != OwnerState.ACTIVE && l.state() != OwnerState.CLOSING) {
        shown = rail.device + " lane " + l.index() + ": " + l.detail();
      }
    }
    laneDetail =
        shown != null
            ? shown
            : replaced > 0
                ? replaced + " faulted lane(s) replaced after their QPs were destroyed"
                : "";
    return Behaviors.same();
  }

  /** Why the published route no longer holds, from what a scan saw; null when it holds. */
  private String faultIn(Rail.Observation seen) {
    Rail.Route route = rail.route();
    if (!seen.portActive()) {
      return "port " + Rail.PORT + " is down";
    }
    if (seen.portEvents() > 0) {
      return seen.portEvents() + " port or GID event(s) for port " + Rail.PORT;
    }
    if (!seen.atRoute().equals(route.gid())) {
      return "GID index "
          + route.gidIndex()
          + (GidRanking.valid(seen.atRoute()) ? " changed to " + seen.atRoute() : " is not valid");
    }
    return null;
  }

  /** Fences the route: a new generation, the rail's pairs opened, its old QPs retired. */
  private void fence(String why) {
    long generation = rail.fence();
    pauses++;
    counters.routeFences.increment();
    detail = "route generation " + generation + " fenced: " + why;
    ctx.getLog().info("RDMA rail {}: {}", rail.device, detail);
    health.portFault(rail.index);
    rail.retireOld(rail.device + " route fenced: " + why);
  }

  private static final String FATAL = "a DEVICE_FATAL event (fenced for good)";

  /**
   * The device reported DEVICE_FATAL: its route stays fenced until close. No scan runs any more;
   * the QPs of the fenced route are still retired and the lanes still looked at, the MR sweep still
   * serves unregisters, and its pairs stay open in the rail circuit.
   */
  private Behavior<Command> fatal() {
    state = OwnerState.FENCED;
    detail = "route generation " + rail.generation() + " fenced: " + FATAL;
    return monitoring(
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  health.portFault(rail.index);
                  rail.retireOld(rail.device + " route fenced: " + FATAL);
                  return Behaviors.same();
                })
            .onMessage(Scanned.class, x -> Behaviors.same()));
  }

  private Behavior<Command> paused() {
    state = OwnerState.FENCED;
    return monitoring(
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  health.portFault(rail.index);
                  startScan(true);
                  return Behaviors.same();
                })
            .onMessage(
                Scanned.class,
                m -> {
                  if (m.failure() == null && m.seen().deviceFatal()) {
                    return fatal();
                  }
                  String wait =
                      m.failure() != null ? "scan failed: " + m.failure() : waitFor(m.seen());
                  if (wait != null) {
                    detail = "route generation " + rail.generation() + " fenced: " + wait;
                    return Behaviors.same();
                  }
                  long generation = rail.generation();
                  GidRanking.Choice choice = m.seen().candidate();
                  detail =
                      "validating route generation "
                          + generation
                          + " on GID index "
                          + choice.index();
                  return validating(generation, choice, System.nanoTime());
                }));
  }

  /**
   * What a recovery still waits for, from what a scan saw; null when the route may be validated.
   */
  private String waitFor(Rail.Observation seen) {
    if (!seen.portActive()) {
      return "port " + Rail.PORT + " is down";
    }
    if (seen.candidate() == null) {
      return rail.gidIndexConfig < 0
          ? "no valid GID on port " + Rail.PORT
          : "rdma.gidIndex " + rail.gidIndexConfig + " is not a valid GID (pinned)";
    }
    for (LaneStatus l : laneStatus.values()) {
      if (l.state() == OwnerState.QUARANTINED) {
        return rail.device + " lane " + l.index() + " is faulted and kept (" + l.detail() + ")";
      }
      if (l.state() != OwnerState.ACTIVE) {
        return rail.device + " lane " + l.index() + " is faulted, not reclaimed yet";
      }
    }
    for (CqLane lane : rail.lanes) {
      if (lane.faulted() != null) {
        return lane.name + " is faulted, not reclaimed yet"; // its owner's word is on its way
      }
    }
    int old = rail.retireOld(rail.device + " route fenced");
    if (!seen.drained() || old > 0) {
      return old + " QP(s) of the old route not yet drained and destroyed";
    }
    return null;
  }

  /**
   * Validating the route {@code choice} under {@code generation}: the next scan must see the same,
   * with no port or GID event in between, for the route to be published under that generation.
   */
  /**
   * Validating route {@code generation} on {@code choice}, since {@code sinceNanos}: it is
   * published by a scan that finds it unchanged at least {@link #SCAN} after the validation began,
   * so a burst of scans started by async events cannot shorten the validation (a scan that finds a
   * problem ends it at once).
   */
  private Behavior<Command> validating(long generation, GidRanking.Choice choice, long sinceNanos) {
    state = OwnerState.FENCED;
    return monitoring(
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  health.portFault(rail.index);
                  startScan(true);
                  return Behaviors.same();
                })
            .onMessage(
                Scanned.class,
                m -> {
                  if (m.failure() == null && m.seen().deviceFatal()) {
                    fence(FATAL);
                    return fatal();
                  }
                  String wait =
                      m.failure() != null ? "scan failed: " + m.failure() : waitFor(m.seen());
                  if (wait == null && m.seen().portEvents() > 0) {
                    wait = m.seen().portEvents() + " port or GID event(s) during validation";
                  }
                  if (wait == null && !choice.equals(m.seen().candidate())) {
                    wait = "the GID chosen moved to index " + m.seen().candidate().index();
                  }
                  if (wait == null && System.nanoTime() - sinceNanos < SCAN.toNanos()) {
                    return Behaviors.same(); // unchanged, but not for a whole scan period yet
                  }
                  Rail.Route next = new Rail.Route(generation, choice.index(), choice.gid());
                  if (wait == null && rail.publish(next)) {
                    recoveries++;
                    counters.routeRecoveries.increment();
                    detail = "";
                    ctx.getLog()
                        .info(
                            "RDMA rail {}: route generation {} published on GID index {}",
                            rail.device,
                            generation,
                            choice.index());
                    return active();
                  }
                  long restarted = rail.fence();
                  counters.routeFences.increment();
                  detail =
                      "validation of route generation "
                          + generation
                          + " abandoned ("
                          + (wait == null ? "the generation moved" : wait)
                          + "); generation "
                          + restarted
                          + " fenced";
                  return paused();
                }));
  }

  /** A lane's owner stopped while the context was not closing: its lane is kept as it is. */
  private Behavior<Command> onOwnerGone(LaneStopped m) {
    LaneStatus before = laneStatus.get(m.index());
    return onLaneStatus(
        new LaneStatus(
            m.index(),
            OwnerState.QUARANTINED,
            m.failure(),
            before == null ? 0 : before.replaced()));
  }

  /**
   * Closes the context: each lane's owner stops its lane's thread (after a reclaim in flight, so a
   * fresh lane is stopped too); once every one answered, and the scan and the MR sweep in flight
   * ended (no sweep runs past the PD), the rail's native objects are released in dependency order
   * on the blocking-I/O executor. A lane whose thread did not end keeps the whole rail.
   */
  private Behavior<Command> onClose(Close m) {
    timers.cancelAll();
    state = OwnerState.CLOSING;
    ActorRef<CqLaneOwner.Stopped> stopped =
        ctx.messageAdapter(CqLaneOwner.Stopped.class, s -> new LaneStopped(s.index(), s.failure()));
    laneOwners.values().forEach(o -> o.tell(new CqLaneOwner.Close(stopped)));
    java.util.Set<Integer> answered = new java.util.HashSet<>();
    List<String> laneFailures = new java.util.ArrayList<>();
    ActorRef<Closed> replyTo = m.replyTo();
    Runnable release =
        () -> {
          List<String> lanesFailed = List.copyOf(laneFailures);
          CompletableFuture<List<String>> released =
              CompletableFuture.allOf(
                      scan.handle((seen, error) -> null), sweep.handle((d, e) -> null))
                  .thenApplyAsync(
                      done -> {
                        // No wait on the event descriptor may outlive the device.
                        if (!events.stop(EventWatch.SCAN_WAIT)) {
                          return List.of(
                              "the async-event watcher of " + rail.device + " did not end");
                        }
                        return lanesFailed.isEmpty() ? rail.close() : lanesFailed;
                      },
                      context.blockingIo());
          ctx.pipeToSelf(
              released,
              (failures, error) ->
                  new Released(failures != null ? failures : List.of(String.valueOf(error))));
        };
    if (laneOwners.isEmpty()) {
      release.run();
    }
    return Behaviors.receive(Command.class)
        .onMessage(
            LaneStopped.class,
            s -> {
              if (answered.add(s.index())) {
                if (s.failure() != null) {
                  laneFailures.add(s.failure());
                }
                if (answered.size() == laneOwners.size()) {
                  release.run();
                }
              }
              return Behaviors.same();
            })
        .onMessage(
            Released.class,
            r -> {
              replyTo.tell(new Closed(rail.device));
              if (r.failures().isEmpty()) {
                state = OwnerState.CLOSED;
                return Behaviors.stopped();
              }
              return quarantined(r.failures());
            })
        .onMessage(
            Close.class,
            c -> {
              c.replyTo().tell(new Closed(rail.device));
              return Behaviors.same();
            })
        .onMessage(LaneStatus.class, this::onLaneStatus)
        .onMessageEquals(Tick.INSTANCE, Behaviors::same)
        .onMessageEquals(EventPending.INSTANCE, Behaviors::same)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(Scanned.class, x -> Behaviors.same())
        .build();
  }

  private Behavior<Command> quarantined(List<String> failures) {
    state = OwnerState.QUARANTINED;
    detail = String.join("; ", failures);
    context
        .quarantine()
        .enter(
            new QuarantinedOwner(
                "RdmaContext " + rail.device,
                QuarantinedOwner.Kind.LANE,
                "native release failed (never retried): " + detail,
                0,
                0,
                java.time.Instant.now()),
            () -> true);
    return Behaviors.receive(Command.class)
        .onMessage(
            Close.class,
            c -> {
              c.replyTo().tell(new Closed(rail.device));
              return Behaviors.same();
            })
        .onMessageEquals(Tick.INSTANCE, Behaviors::same)
        .onMessageEquals(EventPending.INSTANCE, Behaviors::same)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(Scanned.class, x -> Behaviors.same())
        .onMessage(LaneStatus.class, this::onLaneStatus)
        .onMessage(LaneStopped.class, x -> Behaviors.same())
        .build();
  }
}
