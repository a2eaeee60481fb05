package io.orbite.engine.batch;

import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The owner of one batch's lifecycle; child of the EngineGuardian. Its data path is its {@link
 * BatchCore}: callers admit, dispatch, await and free there, and lanes deliver receipts there,
 * without a message to this actor. What stays here is what needs time and a mailbox: the watchdog
 * that reports tasks UNQUIESCED once their workers did not let go within the destruction window
 * after their deadline (and quarantines the batch, keeping their loans and charges), the owner
 * view's refresh, and the batch's end.
 *
 * <p>States: {@link #open}, {@link #quarantined} (some tasks are held past the destruction window;
 * {@code free} and {@code reset} answer BATCH_BUSY until their late receipts arrive, then it is
 * open again), and stopped once the engine retires the batch (it is freed and not kept for reuse,
 * or the engine closes). A batch kept for reuse stays open with nothing leased.
 */
public final class BatchActor {
  public sealed interface Command {}

  /**
   * A task's deadline asks for the watchdog at {@code atNanos} ({@link System#nanoTime()}) at the
   * latest.
   */
  public record Arm(long atNanos) implements Command {}

  /** The core skipped an owner-view report: refresh it in a moment. */
  public enum Refresh implements Command {
    INSTANCE
  }

  /** The late receipts of every UNQUIESCED task arrived: the batch is no longer quarantined. */
  public enum QuarantineEnded implements Command {
    INSTANCE
  }

  /** The batch was freed and is not kept for reuse: stop. */
  public enum Retire implements Command {
    INSTANCE
  }

  private enum Watchdog implements Command {
    INSTANCE
  }

  /**
   * The coalesced refresh of the owner row, scheduled once per burst. It may arrive after the batch
   * stopped (its engine closing within the delay): it is then a suppressed dead letter, neither
   * published as a {@code DeadLetter} nor logged, as a timer's message would be.
   */
  private enum RefreshTick implements Command, org.apache.pekko.actor.DeadLetterSuppression {
    INSTANCE
  }

  private static final Duration REFRESH_DELAY = Duration.ofMillis(50);

  private final ActorContext<Command> ctx;
  private final BatchCore core;
  private final TimerScheduler<Command> timers;
  private final LongSupplier nanoClock;
  private long watchdogAtNanos = Long.MAX_VALUE;
  private boolean refreshScheduled;

  private BatchActor(
      ActorContext<Command> ctx,
      BatchCore core,
      TimerScheduler<Command> timers,
      LongSupplier nanoClock) {
    this.ctx = ctx;
    this.core = core;
    this.timers = timers;
    this.nanoClock = nanoClock;
  }

  /**
   * The owner of {@code core}'s lifecycle; the caller binds it to the core before the first lease.
   */
  public static Behavior<Command> create(BatchCore core, OwnerBoard board) {
    return create(core, board, System::nanoTime);
  }

  /**
   * {@link #create(BatchCore, OwnerBoard)} reading the time from {@code nanoClock} instead of
   * {@link System#nanoTime()}: a test moves it on together with its ManualTime scheduler, so the
   * watchdog finds a task overdue without the test waiting a real destruction window.
   */
  static Behavior<Command> create(BatchCore core, OwnerBoard board, LongSupplier nanoClock) {
    return OwnerBoard.retiredOnStop(
        board,
        Behaviors.withTimers(
            timers ->
                Behaviors.setup(
                    (ActorContext<Command> ctx) ->
                        new BatchActor(ctx, core, timers, nanoClock).open())));
  }

  private Behavior<Command> open() {
    return common().build();
  }

  /**
   * Some tasks' workers did not let go within the destruction window: their loans and charges stay.
   */
  private Behavior<Command> quarantined() {
    return common().build();
  }

  private BehaviorBuilder<Command> common() {
    return Behaviors.receive(Command.class)
        .onMessage(
            Arm.class,
            m -> {
              arm(m.atNanos());
              return Behaviors.same();
            })
        .onMessageEquals(Watchdog.INSTANCE, this::onWatchdog)
        .onMessageEquals(
            Refresh.INSTANCE,
            () -> {
              if (!refreshScheduled) {
                refreshScheduled = true;
                ctx.scheduleOnce(REFRESH_DELAY, ctx.getSelf(), RefreshTick.INSTANCE);
              }
              return Behaviors.same();
            })
        .onMessageEquals(
            RefreshTick.INSTANCE,
            () -> {
              refreshScheduled = false;
              core.refreshReport();
              return Behaviors.same();
            })
        .onMessageEquals(
            QuarantineEnded.INSTANCE, () -> core.quarantined() ? quarantined() : open())
        .onMessageEquals(Retire.INSTANCE, Behaviors::stopped);
  }

  /**
   * Makes the watchdog fire at {@code at} at the latest. Finishing tasks never move it later: a
   * watchdog that fires with nothing overdue just sets the next one, so receipts cost no rescan.
   */
  private void arm(long at) {
    if (watchdogAtNanos != Long.MAX_VALUE
        && watchdogAtNanos - at <= 0
        && timers.isTimerActive(Watchdog.INSTANCE)) {
      return;
    }
    watchdogAtNanos = at;
    long delay = Math.max(1_000_000L, at - nanoClock.getAsLong() + 1_000_000L);
    timers.startSingleTimer(Watchdog.INSTANCE, Duration.ofNanos(delay));
  }

  private Behavior<Command> onWatchdog() {
    watchdogAtNanos = Long.MAX_VALUE;
    long next = core.watchdog(nanoClock.getAsLong());
    if (next != Long.MAX_VALUE) {
      arm(next);
    }
    return core.quarantined() ? quarantined() : open();
  }
}
