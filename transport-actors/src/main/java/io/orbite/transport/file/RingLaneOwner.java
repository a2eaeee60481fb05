package io.orbite.transport.file;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The owner of one file ring lane ({@code transport-file/ring-lane-<i>}, kind {@code RingLane}),
 * child of the {@link FileTransport}, under the engine's {@link
 * io.orbite.engine.spi.OwnerSupervision}. The lane's duty cycle runs on a thread of its own ({@link
 * RingLane}, started here); this actor owns its lifecycle, and the lane tells it what it needs (a
 * cancel overdue, its end). States, each a behaviour:
 *
 * <ul>
 *   <li>{@link #running}: the lane takes work.
 *   <li>{@link #draining}, on {@link Close}: nothing new starts, operations in flight are cancelled
 *       and waited for; once the lane has closed its {@code FileIo} and ended, the closers are
 *       answered and the owner stops. If the lane has said nothing {@link #drainBackstop} after the
 *       close, its thread cannot be shown to have let go: quarantined until it ends.
 *   <li>{@link #quarantined}: a cancelled operation's completion did not come within the
 *       destruction window, or the lane failed with operations still in the kernel. Listed as a
 *       {@code LANE}, sticky: the ring, the memory loan and the task's charges are kept for the
 *       process's life; a close is answered {@code quarantined}.
 * </ul>
 *
 * <p>A lane that ends by itself with nothing in flight (a broken invariant) has closed its {@code
 * FileIo}; the owner stops, and channels skip the lane. When the owner stops for any other reason
 * (its system is going away) it abandons the lane: the lane ends, keeping a ring that still has
 * operations in the kernel.
 */
final class RingLaneOwner {
  /** The owner's protocol. */
  sealed interface Command {}

  /**
   * Close the lane; sent by the FileTransport, answered with {@link Closed} once it drained or was
   * quarantined.
   *
   * @param replyTo told {@link Closed}
   */
  record Close(ActorRef<Closed> replyTo) implements Command {}

  /**
   * The lane drained and closed its {@code FileIo}, or ({@code quarantined}) could not and keeps
   * it.
   *
   * @param lane the lane's name
   * @param quarantined whether it is quarantined
   */
  record Closed(String lane, boolean quarantined) {}

  /** From the lane: a cancel went unanswered for a destruction window. */
  private record CancelOverdue(QuarantinedOwner entry, String cancelReason) implements Command {}

  /** From the lane: its thread ended, keeping {@code kept} in the kernel (null: nothing). */
  private record Ended(String kept, Throwable cause) implements Command {}

  private static final String KEPT = "its thread ended with operations in the kernel";

  private enum DrainOverdue implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final RingLane lane;
  private final TransportContext context;
  private final OwnerBoard board;
  private final Duration drainBackstop;

  private RingLaneOwner(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      RingLane lane,
      TransportContext context) {
    this.ctx = ctx;
    this.timers = timers;
    this.lane = lane;
    this.context = context;
    this.board = context.owners();
    Duration window = Duration.ofMillis(context.config().timeouts().destructionWindowMillis());
    // Past the lane's own verdict (cancels asked within a pass of the close, answered or
    // overdue a window later), with room for a loaded machine.
    this.drainBackstop = window.multipliedBy(2).plusSeconds(1);
  }

  /**
   * The owner of {@code lane}, which it starts.
   *
   * @param lane the lane, not started
   * @param context the transport's context (board, counters, quarantine, supervision, window)
   * @return the behaviour, supervised
   */
  static Behavior<Command> create(RingLane lane, TransportContext context) {
    Behavior<Command> owner =
        Behaviors.setup(
            ctx ->
                Behaviors.withTimers(
                    timers -> {
                      RingLaneOwner o = new RingLaneOwner(ctx, timers, lane, context);
                      ActorRef<Command> self = ctx.getSelf();
                      lane.start(
                          new RingLane.Owner() {
                            @Override
                            public void cancelOverdue(QuarantinedOwner entry, String why) {
                              self.tell(new CancelOverdue(entry, why));
                            }

                            @Override
                            public void ended(String kept, Throwable cause) {
                              self.tell(new Ended(kept, cause));
                            }
                          });
                      return OwnerBoard.reporting(context.owners(), o::report, o.running());
                    }));
    String name = lane.name();
    Behavior<Command> supervised =
        context
            .supervision()
            .supervise(
                "RingLane " + name,
                Command.class,
                owner,
                (m, why) -> {
                  if (m instanceof Close c) {
                    c.replyTo().tell(new Closed(name, true));
                  }
                });
    return Behaviors.intercept(() -> new AbandonOnStop(lane), supervised);
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "RingLane", Map.of("inflightOps", (long) lane.inflight()), lane.name());
  }

  private Behavior<Command> running() {
    return board.in(
        OwnerState.RUNNING,
        Behaviors.receive(Command.class)
            .onMessage(
                Close.class,
                m -> {
                  lane.close();
                  timers.startSingleTimer(DrainOverdue.INSTANCE, drainBackstop);
                  return draining(new ArrayList<>(List.of(m)));
                })
            .onMessage(CancelOverdue.class, m -> overdue(m, List.of()))
            .onMessage(Ended.class, m -> ended(m, List.of()))
            .onMessageEquals(DrainOverdue.INSTANCE, Behaviors::same)
            .build());
  }

  private Behavior<Command> draining(List<Close> closers) {
    return board.in(
        OwnerState.DRAINING,
        Behaviors.receive(Command.class)
            .onMessage(
                Close.class,
                m -> {
                  closers.add(m);
                  return Behaviors.same();
                })
            .onMessage(CancelOverdue.class, m -> overdue(m, closers))
            .onMessage(Ended.class, m -> ended(m, closers))
            .onMessageEquals(DrainOverdue.INSTANCE, () -> drainOverdue(closers))
            .build());
  }

  /**
   * Quarantined. {@code forGood}: a cancel overdue, or operations left in the kernel; otherwise the
   * lane's thread was late to end, and the owner stops once it has ended with its ring closed.
   */
  private Behavior<Command> quarantined(boolean forGood) {
    return board.in(
        OwnerState.QUARANTINED,
        Behaviors.receive(Command.class)
            .onMessage(
                Close.class,
                m -> {
                  m.replyTo().tell(new Closed(lane.name(), true));
                  return Behaviors.same();
                })
            .onMessage(
                CancelOverdue.class,
                m -> {
                  if (forGood) {
                    return Behaviors.same();
                  }
                  list(m.entry(), m.cancelReason(), () -> true);
                  return quarantined(true);
                })
            .onMessage(
                Ended.class,
                m -> {
                  if (forGood) {
                    return Behaviors.same();
                  }
                  if (m.kept() != null) {
                    list(keptEntry(m), KEPT, () -> true);
                    return quarantined(true);
                  }
                  context.quarantine().leave(entryName());
                  ctx.getLog()
                      .info("file ring lane {} ended late; no longer quarantined", lane.name());
                  return Behaviors.stopped();
                })
            .onMessageEquals(DrainOverdue.INSTANCE, Behaviors::same)
            .build());
  }

  /** The lane ended: after its close (stopped), by itself, or with operations in the kernel. */
  private Behavior<Command> ended(Ended m, List<Close> closers) {
    timers.cancel(DrainOverdue.INSTANCE);
    if (m.kept() != null) {
      return quarantine(keptEntry(m), KEPT, closers, () -> true, true);
    }
    if (m.cause() != null && closers.isEmpty()) {
      ctx.getLog()
          .error(
              "file ring lane {} ended by itself ({}); its FileIo is closed and no work goes to it",
              lane.name(),
              m.cause().toString());
    }
    closers.forEach(c -> c.replyTo().tell(new Closed(lane.name(), false)));
    return Behaviors.stopped();
  }

  private QuarantinedOwner keptEntry(Ended m) {
    return new QuarantinedOwner(
        entryName(),
        QuarantinedOwner.Kind.LANE,
        "the lane ended ("
            + (m.cause() == null ? "closed" : m.cause().toString())
            + ") with "
            + m.kept(),
        0,
        0,
        Instant.now());
  }

  private Behavior<Command> overdue(CancelOverdue m, List<Close> closers) {
    timers.cancel(DrainOverdue.INSTANCE);
    return quarantine(m.entry(), m.cancelReason(), closers, () -> true, true);
  }

  /** The lane said nothing long after its close: held until its thread ends. */
  private Behavior<Command> drainOverdue(List<Close> closers) {
    return quarantine(
        new QuarantinedOwner(
            entryName(),
            QuarantinedOwner.Kind.LANE,
            "its thread has not ended "
                + drainBackstop.toMillis()
                + " ms after the close; the ring stays mapped",
            0,
            0,
            Instant.now()),
        "no end reported after the close",
        closers,
        () -> !lane.ended(),
        false);
  }

  private Behavior<Command> quarantine(
      QuarantinedOwner entry,
      String why,
      List<Close> closers,
      BooleanSupplier stillHeld,
      boolean forGood) {
    context.counters().increment(Count.OWNERS_QUARANTINED);
    list(entry, why, stillHeld);
    closers.forEach(c -> c.replyTo().tell(new Closed(lane.name(), true)));
    return quarantined(forGood);
  }

  /** Lists the lane in the quarantine (replacing what it listed before) and logs why. */
  private void list(QuarantinedOwner entry, String why, BooleanSupplier stillHeld) {
    context.quarantine().enter(entry, stillHeld);
    ctx.getLog()
        .error(
            "{} ({}) is QUARANTINED: {} ({}); the memory stays on loan and the task's budget "
                + "charges stay held for the life of the process",
            entry.owner(),
            lane.io(),
            entry.reason(),
            why);
  }

  private String entryName() {
    return "file ring lane " + lane.name();
  }

  /** Abandons the lane when the owner stops, however it stops (supervised or not). */
  private static final class AbandonOnStop extends BehaviorInterceptor<Command, Command> {
    private final RingLane lane;

    AbandonOnStop(RingLane lane) {
      super(Command.class);
      this.lane = lane;
    }

    @Override
    public Behavior<Command> aroundReceive(
        TypedActorContext<Command> ctx, Command msg, ReceiveTarget<Command> target) {
      return target.apply(ctx, msg);
    }

    @Override
    public Behavior<Command> aroundSignal(
        TypedActorContext<Command> ctx, Signal signal, SignalTarget<Command> target) {
      if (signal instanceof PostStop) {
        lane.abandon();
      }
      return target.apply(ctx, signal);
    }
  }
}
