package io.orbite.engine.batch;

import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.registry.Registration;
import io.orbite.engine.spi.EngineCounters;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.TaskWork;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * One batch: owns its tasks' states, the drain ledger and their budget charges. Child of the
 * EngineGuardian, one per {@code allocateBatch}. Receipts arrive from transport lanes in bulk.
 *
 * <p>States: {@link #open} (accepts submissions; each is charged to the engine's {@link
 * AdmissionGate} on this actor's thread and dispatched at once, so submissions keep their order
 * without waiting on any other actor), {@link #quarantined} (some task's
 * workers did not let go within the destruction window after its deadline: those tasks are
 * reported UNQUIESCED, their loans and budget charges stay, the batch is listed in the engine's
 * quarantine; it returns to open if the late receipts arrive), and after {@code free} the actor
 * stops. A batch with pending or held tasks refuses {@code free} with BATCH_BUSY.
 */
public final class BatchActor {
  public sealed interface Command {}

  /**
   * Dispatch requests the caller already validated, fitted into the batch's capacity (task indexes
   * {@code firstIndex ..}) and charged to the {@link AdmissionGate}: nothing is answered, nothing
   * refused. The handle sends these in index order ({@code Batch.submit}), so the ledger learns of
   * every task before any receipt for it can arrive.
   */
  public record Dispatch(List<TransferRequest> requests, long totalBytes, int firstIndex) implements Command {}

  /** What {@code Free} is answered with. */
  public sealed interface SubmitReply {}

  /** The batch was freed; {@code tasks} tasks had been submitted to it. */
  public record Accepted(int tasks) implements SubmitReply {}

  public record Refused(ErrorKind kind, String detail) implements SubmitReply {}

  /** Answer with the status once no task is pending (at once if none is). */
  public record AwaitIdle(ActorRef<BatchStatus> replyTo) implements Command {}

  public record GetStatus(ActorRef<BatchStatus> replyTo) implements Command {}

  /** Stop sending this batch's queued frames; in-flight frames finish and are reported. */
  public enum Cancel implements Command {
    INSTANCE
  }

  public record Free(ActorRef<SubmitReply> replyTo) implements Command {}

  /** Receipts collected by one lane pass. */
  public record Deliver(List<Receipt> receipts) implements Command {}



  /** Time to look for tasks whose workers did not drain within the window after their deadline. */
  private enum Watchdog implements Command {
    INSTANCE
  }

  /** The sink lanes report into; cancellation is a volatile flag they check before sending. */
  static final class Sink implements ReceiptSink {
    private final ActorRef<Command> batch;
    private volatile boolean cancelled;

    Sink(ActorRef<Command> batch) {
      this.batch = batch;
    }

    @Override
    public void deliver(List<Receipt> receipts) {
      batch.tell(new Deliver(receipts));
    }

    @Override
    public boolean cancelled() {
      return cancelled;
    }
  }

  private final ActorContext<Command> ctx;
  private final AdmissionGate gate;
  private final EngineCounters counters;
  private final long defaultDeadlineNanos;
  private final long destructionWindowNanos;
  private final QuarantineLedger quarantine;
  private final TimerScheduler<Command> timers;
  private final TaskLedger ledger;
  private final Sink sink;
  private final List<ActorRef<BatchStatus>> idleWaiters = new ArrayList<>();
  /** UNQUIESCED tasks still held, readable by the quarantine ledger from any thread. */
  private final AtomicInteger heldTasks = new AtomicInteger();
  private long watchdogAtNanos = Long.MAX_VALUE;
  /** The transport each task was handed to, by task index ({@code null}: it never reached one). */
  private final List<io.orbite.engine.Transport> taskTransports = new ArrayList<>();
  /** What this batch last reported to the owner view, and when. */
  private String reportedState = "";
  private long reportedAtNanos;

  private BatchActor(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      int capacity,
      AdmissionGate gate,
      EngineCounters counters,
      Duration defaultDeadline,
      Duration destructionWindow,
      QuarantineLedger quarantine) {
    this.ctx = ctx;
    this.timers = timers;
    this.gate = gate;
    this.counters = counters;
    this.defaultDeadlineNanos = defaultDeadline.toNanos();
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.quarantine = quarantine;
    this.ledger = new TaskLedger(capacity);
    this.sink = new Sink(ctx.getSelf());
  }

  /**
   * A batch whose slot in the batches budget is already charged.
   *
   * @param destructionWindow how long after a task's deadline its workers may take to let go before
   *     the task is reported UNQUIESCED and the batch is quarantined
   */
  public static Behavior<Command> create(
      int capacity, AdmissionGate gate, EngineCounters counters, Duration defaultDeadline,
      Duration destructionWindow, QuarantineLedger quarantine) {
    return io.orbite.engine.view.OwnerBoard.retiredOnStop(counters.owners,
        Behaviors.withTimers(timers -> Behaviors.setup(ctx ->
            new BatchActor(ctx, timers, capacity, gate, counters, defaultDeadline, destructionWindow, quarantine)
                .ready())));
  }

  /**
   * Reports this batch's state and charges to the engine's owner view: at once on a state change,
   * otherwise at most every 50 ms (receipts arrive in bulk, many times a second under load).
   */
  private void report(String state) {
    long now = System.nanoTime();
    boolean idle = ledger.pending() == 0;
    if (state.equals(reportedState) && !idle && now - reportedAtNanos < 50_000_000L) {
      return;
    }
    reportedState = state;
    reportedAtNanos = now;
    counters.owners.publish(ctx.getSelf(), "BatchActor", state, java.util.Map.of(
        "tasks", (long) ledger.size(),
        "pendingTasks", (long) ledger.pending(),
        "inflightBytes", ledger.pendingBytes(),
        "owedReceipts", ledger.owedReceipts(),
        "loans", (long) ledger.loansHeld(),
        "heldTasks", (long) ledger.held()), "capacity " + ledger.capacity());
  }

  /** Tells the task observers (metrics) that task {@code i} ended. */
  private void reportEnded(int i) {
    io.orbite.engine.TaskResult t = ledger.result(i);
    counters.taskEnded(i < taskTransports.size() ? taskTransports.get(i) : null, ledger.op(i), t.state(),
        t.errorKind(), ledger.length(i), t.elapsedNanos());
  }

  /** {@link #open} or, while tasks are held past the destruction window, {@link #quarantined}. */
  private Behavior<Command> ready() {
    report(ledger.held() > 0 ? "quarantined" : "open");
    return ledger.held() > 0 ? quarantined() : open();
  }

  private Behavior<Command> open() {
    return accepting().onMessage(Free.class, this::onFree).build();
  }

  /** What {@link #open} and {@link #quarantined} both handle: everything but {@code free}. */
  private BehaviorBuilder<Command> accepting() {
    return Behaviors.receive(Command.class)
        .onMessage(Dispatch.class, this::onDispatch)
        .onMessage(Deliver.class, d -> onDeliver(d))
        .onMessage(AwaitIdle.class, this::onAwaitIdle)
        .onMessage(GetStatus.class, this::onGetStatus)
        .onMessageEquals(Cancel.INSTANCE, this::onCancel)
        .onMessageEquals(Watchdog.INSTANCE, () -> onWatchdog());
  }

  /**
   * Some tasks' workers did not let go within the destruction window: their loans and budget
   * charges stay and {@code free} answers BATCH_BUSY. Other tasks and new submissions still run.
   */
  private Behavior<Command> quarantined() {
    return accepting()
        .onMessage(Free.class, m -> {
          m.replyTo().tell(new Refused(ErrorKind.BATCH_BUSY, "batch " + name() + " is quarantined: "
              + ledger.held() + " task(s) (" + ledger.heldBytes() + " B) whose workers did not let go within the "
              + "destruction window; their memory and charges are retained"
              + (ledger.pending() > 0 ? ", and " + ledger.pending() + " task(s) are still pending" : "")));
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> onDispatch(Dispatch m) {
    if (m.firstIndex() != ledger.size() || m.requests().size() > ledger.capacity() - ledger.size()) {
      // The handle reserves indexes under its lock and sends in that order; anything else is a bug.
      throw new IllegalStateException("batch " + name() + ": dispatch of tasks " + m.firstIndex() + ".. (" + m.requests().size()
          + ") does not follow the " + ledger.size() + " tasks of the ledger (capacity " + ledger.capacity() + ")");
    }
    long now = System.nanoTime();
    Map<PeerChannel, Boolean> touched = new IdentityHashMap<>();
    int releasedTasks = 0;
    long releasedBytes = 0;
    long earliestDeadline = Long.MAX_VALUE;
    for (TransferRequest r : m.requests()) {
      Registration local = r.local().registration();
      boolean loaned = local.tryLoan();
      long deadline = now + (r.deadline() != null ? r.deadline().toNanos() : defaultDeadlineNanos);
      int i = ledger.add(r.op(), r.lengthBytes(), loaned ? local : null, deadline);
      if (!loaned) {
        taskTransports.add(null);
        ledger.failUnsent(i, ErrorKind.INVALID_ARGUMENT, "local region " + local.regionId() + " was unregistered");
        reportEnded(i);
        releasedTasks++;
        releasedBytes += r.lengthBytes();
        continue;
      }
      earliestDeadline = Math.min(earliestDeadline, deadline);
      PeerChannel channel = r.remote().channelFor(r.transport(), r.regionId());
      taskTransports.add(channel.transport());
      counters.of(channel.transport()).tasksDispatched.increment();
      counters.of(channel.transport()).bytesDispatched.add(r.lengthBytes());
      TaskWork work = new TaskWork(sink, i, r.op(),
          local.segment().asSlice(r.localOffset(), r.lengthBytes()), r.regionId(), r.remoteOffset(),
          r.lengthBytes(), deadline, r.priority());
      ledger.owe(i, channel.dispatch(work));
      if (touched.put(channel, Boolean.TRUE) == null) {
        // Start the transport on the first task while the rest are dispatched: a large batch takes
        // milliseconds to dispatch (measured: 2 ms for 1024 tasks), which would otherwise pass before
        // the first byte moves.
        channel.flush();
      }
    }
    for (PeerChannel channel : touched.keySet()) {
      channel.flush();
    }
    if (releasedTasks > 0) {
      counters.tasksFailed.add(releasedTasks);
      gate.releaseTasks(releasedTasks, releasedBytes);
    }
    notifyIfIdle();
    if (earliestDeadline != Long.MAX_VALUE) {
      armWatchdog(earliestDeadline + destructionWindowNanos);
    }
    return ready();
  }

  /**
   * Makes the watchdog fire at {@code at} at the latest. Finishing tasks never move it later: a
   * watchdog that fires with nothing overdue just sets the next one, so receipts cost no rescan.
   */
  private void armWatchdog(long at) {
    if (watchdogAtNanos != Long.MAX_VALUE && watchdogAtNanos - at <= 0 && timers.isTimerActive(Watchdog.INSTANCE)) {
      return;
    }
    watchdogAtNanos = at;
    long delay = Math.max(1_000_000L, at - System.nanoTime() + 1_000_000L);
    timers.startSingleTimer(Watchdog.INSTANCE, Duration.ofNanos(delay));
  }

  /**
   * Tasks still pending a destruction window after their deadline: the lane that owns them could
   * not be shown to have stopped touching their memory (it did not even fail them at the deadline).
   * They are reported UNQUIESCED and the batch is quarantined, keeping their loans and charges.
   */
  private Behavior<Command> onWatchdog() {
    watchdogAtNanos = Long.MAX_VALUE;
    int n = ledger.quarantineOverdue(System.nanoTime(), destructionWindowNanos,
        "its worker did not let go of its memory within the destruction window (" + destructionWindowNanos / 1_000_000
            + " ms) after its deadline; memory and charges retained");
    if (n > 0) {
      heldTasks.set(ledger.held());
      counters.tasksFailed.add(n);
      counters.tasksUnquiesced.add(n);
      ctx.getLog().error("batch {}: {} task(s) UNQUIESCED; the batch is quarantined ({} task(s), {} B retained)",
          name(), n, ledger.held(), ledger.heldBytes());
      quarantine.enter(new QuarantinedOwner(name(), QuarantinedOwner.Kind.BATCH,
          ledger.held() + " task(s) whose workers did not let go within the destruction window after their deadline",
          ledger.held(), ledger.heldBytes(), Instant.now()), () -> heldTasks.get() > 0);
      notifyIfIdle();
    }
    long earliest = ledger.earliestPendingDeadline();
    if (earliest != Long.MAX_VALUE) {
      armWatchdog(earliest + destructionWindowNanos);
    }
    return ready();
  }

  private String name() {
    return ctx.getSelf().path().name();
  }

  private Behavior<Command> onDeliver(Deliver d) {
    int finished = 0;
    long finishedBytes = 0;
    long completedBytes = 0;
    int completed = 0;
    int lateTasks = 0;
    long lateBytes = 0;
    for (Receipt r : d.receipts()) {
      if (ledger.isHeld(r.taskIndex())) {
        long length = ledger.applyLate(r);
        if (length >= 0) {
          lateTasks++;
          lateBytes += length;
        }
        continue;
      }
      long length = ledger.apply(r);
      if (length >= 0) {
        reportEnded(r.taskIndex());
        finished++;
        finishedBytes += length;
        if (ledger.succeeded(r.taskIndex())) {
          completed++;
          completedBytes += length;
        }
      }
    }
    if (finished > 0) {
      gate.releaseTasks(finished, finishedBytes);
      counters.tasksCompleted.add(completed);
      counters.bytesCompleted.add(completedBytes);
      counters.tasksFailed.add(finished - completed);
      notifyIfIdle();
      report(ledger.held() > 0 ? "quarantined" : "open");
    }
    if (lateTasks > 0) {
      // Workers of UNQUIESCED tasks let go at last: return their charges (their loans are back).
      gate.releaseTasks(lateTasks, lateBytes);
      heldTasks.set(ledger.held());
      if (ledger.held() == 0) {
        quarantine.leave(name());
        ctx.getLog().info("batch {}: the workers of its UNQUIESCED tasks let go; no longer quarantined", name());
      }
      return ready();
    }
    return Behaviors.same();
  }

  private Behavior<Command> onAwaitIdle(AwaitIdle m) {
    idleWaiters.add(m.replyTo());
    notifyIfIdle();
    return Behaviors.same();
  }

  private Behavior<Command> onGetStatus(GetStatus m) {
    m.replyTo().tell(status());
    return Behaviors.same();
  }

  private Behavior<Command> onCancel() {
    sink.cancelled = true;
    return Behaviors.same();
  }

  private Behavior<Command> onFree(Free m) {
    if (ledger.pending() > 0) {
      m.replyTo().tell(new Refused(ErrorKind.BATCH_BUSY, "batch " + ctx.getSelf().path().name() + " has "
          + ledger.pending() + " task(s) that may still touch memory"));
      return Behaviors.same();
    }
    gate.releaseBatch();
    m.replyTo().tell(new Accepted(ledger.size()));
    return Behaviors.stopped();
  }

  private void notifyIfIdle() {
    if (ledger.pending() == 0 && !idleWaiters.isEmpty()) {
      BatchStatus s = status();
      idleWaiters.forEach(w -> w.tell(s));
      idleWaiters.clear();
    }
  }

  private BatchStatus status() {
    return new BatchStatus(ledger.results(), ledger.pending() == 0);
  }
}
