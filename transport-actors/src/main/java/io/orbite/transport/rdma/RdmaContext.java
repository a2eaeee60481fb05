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
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of one rail ({@link Rail}: device context, PD, persistent MRs, CQ lanes). Child of the
 * RdmaTransport, under the engine's {@code OwnerSupervision}; its monitor's work is its {@link
 * RailMonitor}'s, its states are behaviours, each declaring the owner view's state.
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
  private record Scanned(RailMonitor.Observation seen, Throwable failure) implements Command {}

  private static final Duration SCAN = Duration.ofSeconds(1);

  private final Rail rail;
  private final TransportContext context;
  private final RailHealth health;
  private final RailSelector selector;
  private final RdmaCounters counters;
  private final TimerScheduler<Command> timers;
  private final ActorContext<Command> ctx;
  private final OwnerBoard board;

  /** What the monitor says of the route (fenced, validating, abandoned), or of a failed release. */
  private String detail = "";

  /** What the lanes' monitor says: a faulted lane, or how many faulted lanes were replaced. */
  private String laneDetail = "";

  /** The owners of the rail's CQ lanes, by index (children, spawned with the context). */
  private final Map<Integer, ActorRef<CqLaneOwner.Command>> laneOwners = new java.util.TreeMap<>();

  /** What each lane's owner last said of it, by index. */
  private final Map<Integer, LaneStatus> laneStatus = new java.util.TreeMap<>();

  /** The monitor's scans, judgements and fences, and its event watcher (started with it). */
  private RailMonitor monitor;

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
    this.board = context.owners();
  }

  static Behavior<Command> create(
      Rail rail,
      TransportContext context,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters) {
    Behavior<Command> monitored =
        Behaviors.withTimers(
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
                      c.monitor =
                          new RailMonitor(
                              rail,
                              health,
                              selector,
                              counters,
                              context.blockingIo(),
                              () -> self.tell(EventPending.INSTANCE));
                      return OwnerBoard.reporting(context.owners(), c::report, c.active());
                    }));
    // Quarantined by the supervision, it answers its transport's close at once (keeping the rail).
    return context
        .supervision()
        .supervise(
            "RdmaContext " + rail.device,
            Command.class,
            monitored,
            (m, why) -> {
              if (m instanceof Close c) {
                c.replyTo().tell(new Closed(rail.device));
              }
            });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "RdmaContext",
        monitor.figures(laneStatus.values()),
        rail.device + " GID " + rail.route().gidIndex() + shown());
  }

  /** The owner detail after the device and GID index: the route's, then the lanes'. */
  private String shown() {
    String both =
        detail.isEmpty() ? laneDetail : laneDetail.isEmpty() ? detail : detail + "; " + laneDetail;
    return both.isEmpty() ? "" : ": " + both;
  }

  /** Starts a scan unless one is in flight; its result comes back as {@link Scanned}. */
  private void startScan(boolean rank) {
    CompletableFuture<RailMonitor.Observation> started = monitor.scan(rank);
    if (started != null) {
      ctx.pipeToSelf(started, Scanned::new);
    }
  }

  /**
   * The monitor's states ({@link #active}, {@link #paused}, {@link #validating}, {@link #fatal}):
   * {@code own} with what every one of them answers the same way (the view refresh and MR sweep,
   * the close, the lane owners' word).
   */
  private Behavior<Command> monitoring(OwnerState shown, BehaviorBuilder<Command> own) {
    return board.in(shown, withCommon(own));
  }

  private Behavior<Command> withCommon(BehaviorBuilder<Command> own) {
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
    return monitoring(
        OwnerState.ACTIVE,
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
                      m.failure() != null
                          ? "scan failed: " + m.failure()
                          : monitor.faultIn(m.seen());
                  if (why == null) {
                    return Behaviors.same();
                  }
                  fence(why);
                  return paused();
                }));
  }

  /** The MR sweep, off the mailbox ({@link RailMonitor#sweepMrs}). */
  private Behavior<Command> onRefresh() {
    monitor.sweepMrs();
    return Behaviors.same();
  }

  /**
   * A lane's owner said what became of it: the owner detail shows a lane that is not polling, or
   * how many faulted lanes were replaced.
   */
  private Behavior<Command> onLaneStatus(LaneStatus m) {
    laneStatus.put(m.index(), m);
    laneDetail = RailMonitor.laneDetail(rail.device, laneStatus.values());
    return Behaviors.same();
  }

  /** Fences the route: a new generation, the rail's pairs opened, its old QPs retired. */
  private void fence(String why) {
    detail = monitor.fence(why);
  }

  private static final String FATAL = "a DEVICE_FATAL event (fenced for good)";

  /**
   * The device reported DEVICE_FATAL: its route stays fenced until close. No scan runs any more;
   * the QPs of the fenced route are still retired and the lanes still looked at, the MR sweep still
   * serves unregisters, and its pairs stay open in the rail circuit.
   */
  private Behavior<Command> fatal() {
    detail = "route generation " + rail.generation() + " fenced: " + FATAL;
    return monitoring(
        OwnerState.FENCED,
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  health.portFault(rail.index);
                  monitor.retireOld(rail.device + " route fenced: " + FATAL);
                  return Behaviors.same();
                })
            .onMessage(Scanned.class, x -> Behaviors.same()));
  }

  private Behavior<Command> paused() {
    return monitoring(
        OwnerState.FENCED,
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
                      m.failure() != null
                          ? "scan failed: " + m.failure()
                          : monitor.waitFor(m.seen(), laneStatus.values());
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
   * Validating route {@code generation} on {@code choice}, since {@code sinceNanos}: it is
   * published by a scan that finds it unchanged at least {@link #SCAN} after the validation began,
   * so a burst of scans started by async events cannot shorten the validation (a scan that finds a
   * problem ends it at once).
   */
  private Behavior<Command> validating(long generation, GidRanking.Choice choice, long sinceNanos) {
    return monitoring(
        OwnerState.FENCED,
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
                      m.failure() != null
                          ? "scan failed: " + m.failure()
                          : monitor.waitFor(m.seen(), laneStatus.values());
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
                    monitor.recoveries++;
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
    ActorRef<CqLaneOwner.Stopped> stopped =
        ctx.messageAdapter(CqLaneOwner.Stopped.class, s -> new LaneStopped(s.index(), s.failure()));
    laneOwners.values().forEach(o -> o.tell(new CqLaneOwner.Close(stopped)));
    java.util.Set<Integer> answered = new java.util.HashSet<>();
    List<String> laneFailures = new java.util.ArrayList<>();
    ActorRef<Closed> replyTo = m.replyTo();
    Runnable release =
        () -> {
          ctx.pipeToSelf(
              monitor.release(List.copyOf(laneFailures)),
              (failures, error) ->
                  new Released(failures != null ? failures : List.of(String.valueOf(error))));
        };
    if (laneOwners.isEmpty()) {
      release.run();
    }
    return board.in(
        OwnerState.CLOSING,
        Behaviors.receive(Command.class)
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
            .build());
  }

  private Behavior<Command> quarantined(List<String> failures) {
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
    return board.in(
        OwnerState.QUARANTINED,
        Behaviors.receive(Command.class)
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
            .build());
  }
}
