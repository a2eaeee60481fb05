package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of the CQ lane at one index of a rail ({@code .../context-<device>/lane-<i>}, kind {@code
 * CqLane}), child of its {@link RdmaContext}, under the engine's {@code OwnerSupervision}. The lane
 * ({@link CqLane}, a duty cycle on the lane runtime) polls the CQ and posts; this actor owns the
 * lane's lifecycle, and its states are behaviours, each declaring the owner view's state:
 *
 * <ul>
 *   <li>{@link #polling}: the lane's thread polls its CQ. The thread tells this actor when the CQ
 *       fails ({@link Faulted}), and nothing more is posted on the lane from then on.
 *   <li>{@link #faulted}: every QP on the lane is being retired by its owner. The actor looks every
 *       {@link #DRAIN_CHECK} for the native drain (every QP on the CQ destroyed: nothing can
 *       complete into it or touch memory through it any more); only then does it reclaim the lane.
 *   <li>{@link #reclaiming}: on the blocking-I/O executor (never in this mailbox) the thread is
 *       stopped and joined, the lane's id MR and CQ released, and a fresh lane with a CQ of its own
 *       made and started; back in the mailbox the fresh lane takes the index in {@link Rail#lanes}
 *       and the actor is {@link #polling} it.
 *   <li>{@link #kept}, terminal: the thread did not end, a QP was adopted as it faulted, a release
 *       failed or no fresh lane could be made. The lane stays at its index as it is, with what it
 *       holds; nothing is retried, and the engine's quarantine names it.
 *   <li>{@link #closing}: at the context's close, the thread is stopped and joined (blocking-I/O
 *       executor), after a reclaim in flight; the context then releases the rail's native objects,
 *       the lanes' among them, in dependency order.
 * </ul>
 *
 * <p>Every change is told to the parent ({@link RdmaContext.LaneStatus}), whose monitor does not
 * validate a route while a lane of its rail is not polling.
 */
final class CqLaneOwner {
  sealed interface Command {}

  /** The lane's CQ failed (told by its thread, once). */
  record Faulted(CqLane lane, String why) implements Command {}

  /** Stops the lane's thread; answers {@link Stopped}. */
  record Close(ActorRef<Stopped> replyTo) implements Command {}

  /** The lane's thread ended ({@code failure} null), or why it did not. */
  record Stopped(int index, String failure) {}

  private enum Check implements Command {
    INSTANCE
  }

  private record Reclaimed(CqLane fresh, String kept) implements Command {}

  private record Joined(String failure) implements Command {}

  /**
   * How often a faulted lane is looked at for its native drain (and the row's figures published).
   */
  static final Duration DRAIN_CHECK = Duration.ofMillis(100);

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final Rail rail;
  private final int index;
  private final TransportContext context;
  private final ActorRef<RdmaContext.Command> parent;
  private final OwnerBoard board;
  private CqLane lane;
  private String detail = "";
  private long replaced;
  private long faults;

  private CqLaneOwner(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      Rail rail,
      CqLane lane,
      TransportContext context,
      ActorRef<RdmaContext.Command> parent) {
    this.ctx = ctx;
    this.timers = timers;
    this.rail = rail;
    this.index = lane.index;
    this.lane = lane;
    this.context = context;
    this.parent = parent;
    this.board = context.owners();
  }

  /**
   * The owner of {@code lane} (started already); it hands the lane its reference at once. Under the
   * engine's supervision ({@code CqLane <lane>}): a quarantined owner answers its context's close
   * saying so, and the context keeps the rail.
   */
  static Behavior<Command> create(
      Rail rail, CqLane lane, TransportContext context, ActorRef<RdmaContext.Command> parent) {
    int index = lane.index;
    Behavior<Command> owner =
        Behaviors.withTimers(
            timers ->
                Behaviors.setup(
                    ctx -> {
                      CqLaneOwner o = new CqLaneOwner(ctx, timers, rail, lane, context, parent);
                      timers.startTimerWithFixedDelay(Check.INSTANCE, DRAIN_CHECK);
                      return OwnerBoard.reporting(context.owners(), o::report, o.polling(lane));
                    }));
    return context
        .supervision()
        .supervise(
            "CqLane " + lane.name(),
            Command.class,
            owner,
            (m, why) -> {
              if (m instanceof Close c) {
                c.replyTo().tell(new Stopped(index, why));
              }
            });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "CqLane",
        Map.of(
            "qps",
            (long) lane.qps.live().size(),
            "index",
            (long) index,
            "cqes",
            (long) lane.qps.cqCapacity,
            "cqesReserved",
            (long) lane.qps.reservedCqes(),
            "faults",
            faults,
            "replaced",
            replaced,
            "completionChannel",
            lane.events.on() ? 1L : 0L,
            "cqEvents",
            lane.events.taken.sum()),
        lane.name() + (detail.isEmpty() ? "" : ": " + detail));
  }

  /** Tells the context the state this owner enters (the behaviour's, passed, never kept). */
  private void tellParent(OwnerState entering) {
    parent.tell(new RdmaContext.LaneStatus(index, entering, detail, replaced));
  }

  private Behavior<Command> polling(CqLane now) {
    lane = now;
    now.owner(ctx.getSelf());
    String already = now.faulted();
    if (already != null) {
      // It faulted before it knew this owner: the same as its message.
      return onFaulted(new Faulted(now, already));
    }
    tellParent(OwnerState.ACTIVE);
    return board.in(
        OwnerState.ACTIVE,
        Behaviors.receive(Command.class)
            .onMessage(Faulted.class, this::onFaulted)
            .onMessageEquals(Check.INSTANCE, Behaviors::same) // re-publishes the row's figures
            .onMessage(Close.class, this::onClose)
            .onMessage(Reclaimed.class, r -> Behaviors.same())
            .onMessage(Joined.class, j -> Behaviors.same())
            .build());
  }

  private Behavior<Command> onFaulted(Faulted m) {
    if (m.lane() != lane) {
      return Behaviors.same(); // a lane this owner replaced already
    }
    faults++;
    return faulted();
  }

  private Behavior<Command> faulted() {
    detail = lane.faulted() + " (waiting for its QPs' destroy)";
    tellParent(OwnerState.FENCED);
    return board.in(
        OwnerState.FENCED,
        Behaviors.receive(Command.class)
            .onMessageEquals(
                Check.INSTANCE,
                () -> {
                  if (!lane.nativelyDrained()) {
                    return Behaviors.same();
                  }
                  CqLane old = lane;
                  CompletableFuture<Reclaimed> r =
                      CompletableFuture.supplyAsync(() -> reclaim(old), context.blockingIo());
                  ctx.pipeToSelf(
                      r, (done, error) -> done != null ? done : new Reclaimed(null, "" + error));
                  return reclaiming(new ArrayList<>());
                })
            .onMessage(Faulted.class, f -> Behaviors.same())
            .onMessage(Close.class, this::onClose)
            .onMessage(Joined.class, j -> Behaviors.same())
            .build());
  }

  /**
   * On the blocking-I/O executor: stops and joins the faulted lane's thread, releases its native
   * objects, makes and starts a fresh lane; or says why the old one is kept.
   */
  private Reclaimed reclaim(CqLane old) {
    old.stop();
    if (!old.join(10_000)) {
      return new Reclaimed(null, "its thread did not end within 10 s");
    }
    if (!old.nativelyDrained()) {
      // A QP was adopted just as it faulted: the lane stays at its index, so that QP stays
      // counted (Rail#drained reads the lanes at their indexes).
      return new Reclaimed(null, "a QP on its CQ is not destroyed");
    }
    List<String> failed = old.release();
    if (!failed.isEmpty()) {
      return new Reclaimed(null, "its release failed: " + String.join("; ", failed));
    }
    var fresh = rail.freshLane(old.index);
    if (!fresh.ok()) {
      // Released, but not replaced: the index keeps the faulted lane, on which no QP is made.
      return new Reclaimed(null, "no fresh lane: " + fresh.describe());
    }
    fresh.value().start();
    return new Reclaimed(fresh.value(), null);
  }

  /**
   * The reclaim runs off the mailbox; {@code closers} are those of the closes that came meanwhile,
   * each answered once the reclaim is over.
   */
  private Behavior<Command> reclaiming(List<ActorRef<Stopped>> closers) {
    detail = lane.faulted() + " (natively drained; being reclaimed)";
    tellParent(OwnerState.FENCED);
    return board.in(
        OwnerState.FENCED,
        Behaviors.receive(Command.class)
            .onMessage(
                Reclaimed.class,
                r -> {
                  if (r.fresh() == null) {
                    Behavior<Command> keptNow = kept(r.kept());
                    closers.forEach(c -> c.tell(stopped()));
                    return keptNow;
                  }
                  rail.lanes.set(index, r.fresh());
                  replaced++;
                  detail = replaced + " faulted lane(s) replaced after their QPs were destroyed";
                  ctx.getLog().info("{} replaced after its native drain", lane.name());
                  Behavior<Command> next = polling(r.fresh());
                  return closers.isEmpty() ? next : onClose(closers);
                })
            .onMessage(
                Close.class,
                c -> {
                  closers.add(c.replyTo());
                  return Behaviors.same();
                })
            .onMessageEquals(Check.INSTANCE, Behaviors::same)
            .onMessage(Faulted.class, f -> Behaviors.same())
            .onMessage(Joined.class, j -> Behaviors.same())
            .build());
  }

  private Behavior<Command> kept(String why) {
    String fault = lane.faulted();
    // A lane kept at its close (its thread did not end) never faulted: nothing was to reclaim.
    detail = fault == null ? "kept: " + why : fault + " (kept, not reclaimed: " + why + ")";
    ctx.getLog().warn("{}: {}", lane.name(), detail);
    context
        .quarantine()
        .enter(
            new QuarantinedOwner(
                "CqLane " + lane.name(),
                QuarantinedOwner.Kind.LANE,
                detail + "; never retried",
                0,
                0,
                java.time.Instant.now()),
            () -> true);
    tellParent(OwnerState.QUARANTINED);
    return board.in(
        OwnerState.QUARANTINED,
        Behaviors.receive(Command.class)
            .onMessage(
                Close.class,
                c -> {
                  c.replyTo().tell(stopped());
                  return Behaviors.same();
                })
            .onMessageEquals(Check.INSTANCE, Behaviors::same)
            .onMessage(Faulted.class, f -> Behaviors.same())
            .onMessage(Reclaimed.class, r -> Behaviors.same())
            .onMessage(Joined.class, j -> Behaviors.same())
            .build());
  }

  /**
   * A kept lane's answer to the close: its thread ended (the context then releases the rail, this
   * lane's release answering what it answered before), or it did not, and the context keeps the
   * whole rail.
   */
  private Stopped stopped() {
    return new Stopped(
        index, lane.ended() ? null : lane.name() + " is kept and its thread is alive");
  }

  private Behavior<Command> onClose(Close m) {
    return onClose(List.of(m.replyTo()));
  }

  /** Stops the lane's thread; {@code closers} are answered once it ended, or why not. */
  private Behavior<Command> onClose(List<ActorRef<Stopped>> closers) {
    tellParent(OwnerState.CLOSING);
    CqLane closing = lane;
    CompletableFuture<String> joined =
        CompletableFuture.supplyAsync(
            () -> {
              closing.stop();
              return closing.join(10_000) ? null : closing.name() + " did not end within 10 s";
            },
            context.blockingIo());
    ctx.pipeToSelf(joined, (failure, error) -> new Joined(error != null ? "" + error : failure));
    List<ActorRef<Stopped>> waiting = new ArrayList<>(closers);
    return board.in(
        OwnerState.CLOSING,
        Behaviors.receive(Command.class)
            .onMessage(
                Joined.class,
                j -> {
                  waiting.forEach(w -> w.tell(new Stopped(index, j.failure())));
                  if (j.failure() != null) {
                    return kept(j.failure());
                  }
                  timers.cancelAll();
                  return Behaviors.stopped();
                })
            .onMessage(
                Close.class,
                c -> {
                  waiting.add(c.replyTo());
                  return Behaviors.same();
                })
            .onMessageEquals(Check.INSTANCE, Behaviors::same)
            .onMessage(Faulted.class, f -> Behaviors.same())
            .onMessage(Reclaimed.class, r -> Behaviors.same())
            .build());
  }
}
