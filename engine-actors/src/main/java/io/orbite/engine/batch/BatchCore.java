package io.orbite.engine.batch;

import io.orbite.config.RetryConfig;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.NotificationSender;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data-path state of one batch: its task ledger, guarded by this object's monitor, and the
 * receipt sink its tasks carry. It is what makes a small transfer cheap. The caller's thread admits
 * and dispatches ({@link #admit}, {@link #dispatch}); lane threads (or the caller's own thread, for
 * a copy it ran itself) apply receipts ({@link ReceiptSink#deliver}); {@link #await} and {@link
 * #status} read the ledger; {@link #free} and {@link #reset} decide on it. None of them waits on an
 * actor.
 *
 * <p>The {@link BatchActor} stays the owner of the batch's lifecycle: it runs the watchdog that
 * turns overdue tasks UNQUIESCED and quarantines the batch, it refreshes the owner view, and it
 * stops when the batch is retired. This object tells it what it needs to know, and only then: a
 * deadline earlier than any watchdog it has armed, an owner-view report it skipped, the end of a
 * quarantine. A batch reused for one small transfer after another sends none of these most of the
 * time.
 *
 * <p>A ledger generation begins at allocation and at each {@link #reset}: its tasks carry that
 * generation's sink, so a receipt can never be applied to a later generation's task.
 *
 * <p>Why this file is over 500 lines: one monitor guards the ledger, the lease, the sink and the
 * waiters, and every method that takes it is here, so that what happens under that lock (admit,
 * apply, await, cancel, reset, free, the watchdog, and since per-submission completion each
 * submission's count-down, settling, notification hand-off and its own await, completion and
 * status, which wait on the same monitor and read the same rows) reads in one place. Merged
 * transfers are recorded here too ({@link #merged}), before dispatch, under that lock. What runs
 * outside it lives elsewhere: the dispatch in runs ({@link RunDispatcher}), the owner-view reports
 * ({@link BatchReporter}), the ledger's rows ({@link TaskLedger}), the lease's state ({@link
 * BatchLease}) and the failover rule and hand-off ({@link TransportFailover}).
 */
public final class BatchCore {
  private static final Logger LOG = LoggerFactory.getLogger(BatchCore.class);

  private final String name;
  private final AdmissionGate gate;
  private final EngineTally counters;
  private final OwnerBoard board;
  private final QuarantineLedger quarantine;
  private final Executor completions;
  private final long defaultDeadlineNanos;
  private final long destructionWindowNanos;
  private final TaskLedger ledger;

  /** Which tasks may run again over TCP after SHM or RDMA failed them drained, and how. */
  private final TransportFailover failover;

  /**
   * Retries decided under this monitor and not yet handed to their channel: the thread that decided
   * them takes them before it releases the monitor and hands them over after ({@link
   * #takeRetries}), so this is empty whenever the monitor is free.
   */
  private final List<TransportFailover.Retry> retries = new ArrayList<>(0);

  /**
   * Submissions whose last task ended in the change being applied now, settled by {@link
   * #afterChange}; empty whenever the monitor is free.
   */
  private final List<SubmissionState> settled = new ArrayList<>(0);

  /**
   * Notifications whose submissions completed under this monitor and that are not sent yet: the
   * thread that decided them sends them after it releases the monitor ({@link #takeNotifications}),
   * so this is empty whenever the monitor is free.
   */
  private final List<SubmissionState> toNotify = new ArrayList<>(0);

  /**
   * The ledger's generation: a new lease and every {@link #reset} begin one, and a submission of an
   * earlier one can no longer read its tasks.
   */
  private long generation;

  /** UNQUIESCED tasks still held, readable by the quarantine ledger from any thread. */
  private final AtomicInteger heldTasks = new AtomicInteger();

  private ActorRef<BatchActor.Command> actor;

  /**
   * The batch's latest allocation (null before the first): while LEASED its handle holds the batch;
   * a handle of an earlier one finds it freed. Written under this object's monitor.
   */
  private volatile BatchLease lease;

  // Everything below is guarded by this object's monitor.
  /** How many leases the batch has had: the next one's id. */
  private long leases;

  private Sink sink;
  private final List<CompletableFuture<BatchStatus>> idleWaiters = new ArrayList<>();
  private int blockedAwaits;

  /** The earliest watchdog the actor was asked to arm, or MAX_VALUE. */
  private long watchdogAtNanos = Long.MAX_VALUE;

  /** Publishes the batch's state and charges to the owner view (under this monitor). */
  private final BatchReporter reporter;

  /** What the receipts being applied now ended, settled by {@link #afterChange}. */
  private int finished;

  private long finishedBytes;
  private int completed;
  private long completedBytes;
  private int lateTasks;
  private long lateBytes;

  /**
   * A batch's data-path state, not yet leased, failing over as {@code retry.maxTransportFailovers}
   * does by default.
   *
   * @param completions where {@link #completion} futures are completed, so that no caller's
   *     continuation ever runs on a lane thread
   */
  public BatchCore(
      String name,
      int capacity,
      AdmissionGate gate,
      EngineTally counters,
      OwnerBoard board,
      Duration defaultDeadline,
      Duration destructionWindow,
      QuarantineLedger quarantine,
      Executor completions) {
    this(
        name,
        capacity,
        gate,
        counters,
        board,
        defaultDeadline,
        destructionWindow,
        quarantine,
        completions,
        RetryConfig.DEFAULT_MAX_TRANSPORT_FAILOVERS);
  }

  /**
   * A batch's data-path state, not yet leased.
   *
   * @param completions where {@link #completion} futures are completed, so that no caller's
   *     continuation ever runs on a lane thread
   * @param maxTransportFailovers {@code retry.maxTransportFailovers}: 0 turns failover off
   */
  public BatchCore(
      String name,
      int capacity,
      AdmissionGate gate,
      EngineTally counters,
      OwnerBoard board,
      Duration defaultDeadline,
      Duration destructionWindow,
      QuarantineLedger quarantine,
      Executor completions,
      int maxTransportFailovers) {
    this.name = name;
    this.gate = gate;
    this.counters = counters;
    this.board = board;
    this.quarantine = quarantine;
    this.completions = completions;
    this.defaultDeadlineNanos = defaultDeadline.toNanos();
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.ledger = new TaskLedger(capacity);
    this.failover = new TransportFailover(maxTransportFailovers, capacity, counters);
    this.reporter = new BatchReporter(board, ledger);
  }

  /** The sink of one ledger generation; cancellation is a flag that lanes read before sending. */
  private final class Sink implements ReceiptSink {
    private volatile boolean cancelled;

    @Override
    public void deliver(Receipts receipts) {
      apply(this, receipts);
    }

    @Override
    public boolean cancelled() {
      return cancelled;
    }
  }

  /** The actor that owns this batch's lifecycle; set once, before the first lease. */
  public void bind(ActorRef<BatchActor.Command> owner) {
    this.actor = owner;
  }

  /** Stops the batch's actor: the batch was freed and is not kept for reuse. */
  public void retire() {
    BatchLease last = lease;
    if (last != null) {
      last.state.moveTo(BatchLease.State.RETIRED);
    }
    actor.tell(BatchActor.Retire.INSTANCE);
  }

  /** Whether {@link #retire} was called: its actor's stop is then expected. */
  public boolean retired() {
    BatchLease last = lease;
    return last != null && last.state.is(BatchLease.State.RETIRED);
  }

  public String name() {
    return name;
  }

  public int capacity() {
    return ledger.capacity();
  }

  /**
   * Starts an allocation: the caller has charged the batch slot.
   *
   * @return the lease its handle presents on every call
   */
  public synchronized long lease() {
    BatchLease last = lease;
    if (last != null && !last.state.is(BatchLease.State.FREED)) {
      throw new IllegalStateException("batch " + name + " leased while " + last.state);
    }
    lease = new BatchLease(++leases);
    sink = new Sink();
    report(true);
    return lease.id;
  }

  /** Whether {@code handleLease} still holds this batch (it was not freed). */
  public synchronized boolean holds(long handleLease) {
    BatchLease current = lease;
    return current != null
        && current.id == handleLease
        && current.state.is(BatchLease.State.LEASED);
  }

  /**
   * Tasks the caller admitted: indexes {@code first ..}, each with its work, or null if it failed
   * unsent, and the routing the validator chose for it (its channel is the one it is handed to: no
   * second array of channels per submission).
   */
  public record Admitted(
      int first, TaskWork[] work, PeerSegment.Routing[] routings, SubmissionState submission) {}

  /**
   * {@link #admit(long, List, RequestValidator.Routed, long, Notification, PeerSegment,
   * NotificationSender)} without a notification.
   */
  public Admitted admit(
      long handleLease,
      List<TransferRequest> requests,
      RequestValidator.Routed routed,
      long submittedNanos) {
    return admit(handleLease, requests, routed, submittedNanos, null, null, null);
  }

  /**
   * Fits {@code requests} into the batch, charges the budgets for all of them and takes their local
   * loans, on the caller's thread; a refusal has had no side effect. The caller then calls {@link
   * #dispatch} with the result, outside this monitor.
   *
   * @param routed the requests' byte total and routing, from {@link RequestValidator#validate}
   * @param submittedNanos when the caller called submit: a task's latency is measured from there
   * @param notification sent to {@code notifyPeer} by {@code sender} once every task completed;
   *     null for none
   * @throws TransferException INVALID_ARGUMENT if the lease ended; RESOURCE_EXHAUSTED for capacity
   *     or a budget; UNAVAILABLE when the requester side is fenced
   */
  public Admitted admit(
      long handleLease,
      List<TransferRequest> requests,
      RequestValidator.Routed routed,
      long submittedNanos,
      Notification notification,
      PeerSegment notifyPeer,
      NotificationSender sender) {
    int n = requests.size();
    long total = routed.totalBytes();
    synchronized (this) {
      if (!holds(handleLease)) {
        throw freed("submit");
      }
      if (n > ledger.capacity() - ledger.size()) {
        throw new TransferException(
            ErrorKind.RESOURCE_EXHAUSTED,
            "batch capacity "
                + ledger.capacity()
                + ": "
                + ledger.size()
                + " tasks submitted, "
                + n
                + " more do not fit"
                + (ledger.pending() == 0 && ledger.held() == 0
                    ? " (reset() makes the room of finished tasks usable again)"
                    : ""));
      }
      Admission.Decision decision = gate.tryTasks(n, total);
      if (!decision.granted()) {
        throw new TransferException(
            decision.fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED,
            decision.refusal());
      }
      long now = System.nanoTime();
      int first = ledger.size();
      SubmissionState submission =
          new SubmissionState(first, n, generation, notification, notifyPeer, sender);
      TaskWork[] work = new TaskWork[n];
      int releasedTasks = 0;
      long releasedBytes = 0;
      long earliestDeadline = Long.MAX_VALUE;
      for (int k = 0; k < n; k++) {
        TransferRequest r = requests.get(k);
        Registration local = (Registration) r.local(); // checked by RequestValidator
        boolean loaned = local.tryLoan();
        long deadline =
            now + (r.deadline() != null ? r.deadline().toNanos() : defaultDeadlineNanos);
        int i =
            ledger.add(
                r.op(),
                r.lengthBytes(),
                loaned ? local : null,
                deadline,
                submittedNanos,
                submission);
        if (!loaned) {
          ledger.failUnsent(
              i,
              ErrorKind.INVALID_ARGUMENT,
              "local region " + local.regionId() + " was unregistered");
          reportEnded(i);
          countDown(i);
          releasedTasks++;
          releasedBytes += r.lengthBytes();
          continue;
        }
        earliestDeadline = Math.min(earliestDeadline, deadline);
        // The channel the validator routed the request to (C13 health was read then, once).
        PeerSegment.Routing routing = routed.routings()[k];
        PeerChannel channel = routing.channel();
        ledger.handedTo(i, channel.transport(), routing.route());
        ledger.ruled(i, routed.rule(k));
        work[k] =
            new TaskWork(
                sink,
                i,
                r.op(),
                local.segment(),
                r.localOffset(),
                r.regionId(),
                r.remoteOffset(),
                r.lengthBytes(),
                deadline,
                routed.priority(k, r.priority()),
                routed.laneMask(k),
                routed.railMask(k));
        if (failover.enabled()
            && TransportFailover.candidate(routing)
            && routed.mayFailOver(k, channel.transport())) {
          ledger.mayFailOver(i);
          failover.remember(i, work[k], (PeerSegment) r.remote(), channel);
        }
      }
      if (releasedTasks > 0) {
        counters.add(Count.TASKS_FAILED, releasedTasks);
        gate.releaseTasks(releasedTasks, releasedBytes);
      }
      if (earliestDeadline != Long.MAX_VALUE
          && earliestDeadline + destructionWindowNanos - watchdogAtNanos < 0) {
        watchdogAtNanos = earliestDeadline + destructionWindowNanos;
        actor.tell(new BatchActor.Arm(watchdogAtNanos));
      }
      report(false);
      notifyIfIdle();
      settleSubmissions();
      return new Admitted(first, work, routed.routings(), submission);
    }
  }

  /**
   * Hands admitted tasks to their channels, on the caller's thread and outside this monitor (see
   * {@link RunDispatcher}).
   */
  public void dispatch(Admitted admitted) {
    RunDispatcher.dispatch(this, admitted, counters);
  }

  /**
   * Records the groups of adjacent tasks {@link RequestMerger} merged, before any of them is
   * dispatched: each group's leader carries the whole group's bytes, and its members end with it.
   */
  synchronized void merged(RequestMerger.Plan plan) {
    for (int g = 0; g < plan.groups(); g++) {
      int head = plan.head(g);
      ledger.group(head, plan.count(g), plan.merged(g).lengthBytes());
      failover.merged(head, plan.merged(g), plan.count(g));
    }
    counters.add(Count.TASKS_MERGED, plan.tasksMerged());
    counters.add(Count.MERGED_TRANSFERS, plan.groups());
  }

  /** Fails task {@code i}, which its transport did not take, as never sent. */
  synchronized void failUnsent(int i, String why) {
    ledger.failUnsent(i, ErrorKind.UNAVAILABLE, why);
    ended(i, TaskLedger.Outcome.FINISHED);
    afterChange();
  }

  /** Records the receipt counts of the dispatched tasks ({@code owed[k] < 0}: not dispatched). */
  void sealed(TaskWork[] work, int[] owed) {
    List<TransportFailover.Retry> again;
    List<SubmissionState> notify;
    synchronized (this) {
      long now = System.nanoTime();
      for (int k = 0; k < work.length; k++) {
        if (work[k] != null && owed[k] >= 0) {
          ended(work[k].taskIndex(), ledger.owe(work[k].taskIndex(), owed[k], now));
        }
      }
      afterChange();
      again = takeRetries();
      notify = takeNotifications();
    }
    if (again != null) {
      retry(again);
    }
    if (notify != null) {
      sendNotifications(notify);
    }
  }

  /** Applies receipts from a lane (or from the caller's thread, for a copy it ran). */
  private void apply(Sink from, Receipts receipts) {
    List<TransportFailover.Retry> again;
    List<SubmissionState> notify;
    synchronized (this) {
      if (from != sink) {
        // A receipt for a generation that ended: the ledger had it drained, so a lane broke its
        // word.
        LOG.error(
            "batch {}: {} receipt(s) for an earlier generation of the batch dropped: {}",
            name,
            receipts.size(),
            receipts.size() > 0 ? receipts.get(0) : "none");
        return;
      }
      long now = System.nanoTime();
      for (int k = 0, n = receipts.size(); k < n; k++) {
        int i = receipts.taskIndex(k);
        ended(
            i,
            ledger.apply(
                i,
                receipts.bytes(k),
                receipts.error(k),
                receipts.effect(k),
                receipts.detail(k),
                now));
      }
      afterChange();
      again = takeRetries();
      notify = takeNotifications();
    }
    if (again != null) {
      retry(again);
    }
    if (notify != null) {
      sendNotifications(notify);
    }
  }

  /** The retries decided under this monitor, now to be handed over by the caller; or null. */
  private List<TransportFailover.Retry> takeRetries() {
    if (retries.isEmpty()) {
      return null;
    }
    List<TransportFailover.Retry> taken = List.copyOf(retries);
    retries.clear();
    return taken;
  }

  /** The notifications decided under this monitor, now to be sent by the caller; or null. */
  private List<SubmissionState> takeNotifications() {
    if (toNotify.isEmpty()) {
      return null;
    }
    List<SubmissionState> taken = List.copyOf(toNotify);
    toNotify.clear();
    return taken;
  }

  /**
   * Sends the notifications of submissions whose every task completed, outside this monitor; the
   * sender never blocks on I/O, and its answer settles the submission.
   */
  private void sendNotifications(List<SubmissionState> notify) {
    for (SubmissionState s : notify) {
      CompletableFuture<NotificationResult> sent;
      try {
        sent = s.sender.send(s.peer, s.notification);
      } catch (RuntimeException e) {
        sent =
            CompletableFuture.completedFuture(
                new NotificationResult(
                    NotificationResult.State.NOT_SENT,
                    ErrorKind.UNAVAILABLE,
                    "the notification sender failed: " + e));
      }
      sent.whenComplete((r, e) -> notified(s, r, e));
    }
  }

  /** The sender's answer for submission {@code s}'s notification. */
  private synchronized void notified(SubmissionState s, NotificationResult r, Throwable e) {
    s.notificationResult =
        r != null
            ? r
            : new NotificationResult(
                NotificationResult.State.UNKNOWN,
                ErrorKind.UNAVAILABLE,
                "the notification sender failed after sending: " + e);
    wake(s);
  }

  /**
   * Counts task {@code i} down in its submission, which it has just left pending; a submission
   * whose last task this was is settled by {@link #settleSubmissions}.
   */
  private void countDown(int i) {
    SubmissionState s = ledger.owner(i);
    if (!ledger.succeeded(i) && s.failed++ == 0) {
      s.firstFailed = i;
    }
    if (--s.pending == 0) {
      settled.add(s);
    }
  }

  /**
   * Decides the notification of every submission whose last task ended (sent only when every task
   * completed: C16) and wakes its waiters. Under the monitor.
   */
  private void settleSubmissions() {
    if (settled.isEmpty()) {
      return;
    }
    for (SubmissionState s : settled) {
      if (s.notificationResult.state() == NotificationResult.State.PENDING) {
        if (s.failed > 0) {
          s.notificationResult =
              new NotificationResult(
                  NotificationResult.State.NOT_SENT,
                  ledger.error(s.firstFailed),
                  "not sent: "
                      + s.failed
                      + " of its "
                      + s.count
                      + " task(s) did not complete, the first task "
                      + s.firstFailed
                      + " ("
                      + ledger.error(s.firstFailed)
                      + ")");
        } else {
          toNotify.add(s);
          continue;
        }
      }
      wake(s);
    }
    settled.clear();
  }

  /** Wakes the waiters of submission {@code s} once it is done. Under the monitor. */
  private void wake(SubmissionState s) {
    if (!s.done()) {
      return;
    }
    if (s.blockedAwaits > 0) {
      notifyAll();
    }
    if (s.completion != null && !s.completion.isDone()) {
      CompletableFuture<SubmissionStatus> f = s.completion;
      SubmissionStatus status = statusOf(s);
      completions.execute(() -> f.complete(status));
    }
  }

  /** Hands tasks that failed over to their channel ({@link TransportFailover#handOver}). */
  private void retry(List<TransportFailover.Retry> again) {
    TransportFailover.handOver(this, again, counters);
  }

  /**
   * Accounts what a receipt (or receipt count) did to task {@code i}; {@link #afterChange} settles
   * it.
   */
  private void ended(int i, TaskLedger.Outcome outcome) {
    switch (outcome) {
      case NONE -> {}
      case DRAINED_FAILED -> {
        long now = System.nanoTime();
        if (!failover.tryFailOver(ledger, i, sink.cancelled, now, retries)) {
          ended(i, ledger.end(i, now));
        }
      }
      case FINISHED -> {
        failover.forget(i);
        // A merged transfer's leader ends its members with it.
        for (int j = i, end = i + ledger.span(i); j < end; j++) {
          reportEnded(j);
          countDown(j);
          finished++;
          finishedBytes += ledger.length(j);
          if (ledger.succeeded(j)) {
            completed++;
            completedBytes += ledger.length(j);
          }
        }
      }
      case LATE_DRAINED -> {
        failover.forget(i);
        for (int j = i, end = i + ledger.span(i); j < end; j++) {
          lateTasks++;
          lateBytes += ledger.length(j);
        }
      }
    }
  }

  /**
   * Returns the charges of tasks that ended, wakes waiters, refreshes the owner view. Under the
   * monitor.
   */
  private void afterChange() {
    settleSubmissions();
    if (finished > 0) {
      gate.releaseTasks(finished, finishedBytes);
      counters.add(Count.TASKS_COMPLETED, completed);
      counters.add(Count.BYTES_COMPLETED, completedBytes);
      counters.add(Count.TASKS_FAILED, finished - completed);
      finished = 0;
      finishedBytes = 0;
      completed = 0;
      completedBytes = 0;
      notifyIfIdle();
      report(false);
    }
    if (lateTasks > 0) {
      // Workers of UNQUIESCED tasks let go at last: return their charges (their loans are back).
      gate.releaseTasks(lateTasks, lateBytes);
      lateTasks = 0;
      lateBytes = 0;
      heldTasks.set(ledger.held());
      if (ledger.held() == 0) {
        quarantine.leave(name);
        LOG.info(
            "batch {}: the workers of its UNQUIESCED tasks let go; no longer quarantined", name);
        actor.tell(BatchActor.QuarantineEnded.INSTANCE);
      }
      report(true);
    }
  }

  /** Tells the task observers (metrics) that task {@code i} ended. */
  private void reportEnded(int i) {
    counters.taskEnded(
        ledger.transport(i),
        ledger.op(i),
        ledger.state(i),
        ledger.error(i),
        ledger.length(i),
        ledger.elapsedNanos(i));
  }

  private void notifyIfIdle() {
    if (ledger.pending() != 0) {
      return;
    }
    if (blockedAwaits > 0) {
      notifyAll();
    }
    if (!idleWaiters.isEmpty()) {
      BatchStatus s = status();
      for (CompletableFuture<BatchStatus> w : idleWaiters) {
        completions.execute(() -> w.complete(s));
      }
      idleWaiters.clear();
    }
  }

  /**
   * Waits up to {@code timeoutNanos} for every task to be terminal.
   *
   * @return the status then; not done if the time passed first
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public synchronized BatchStatus await(long handleLease, long timeoutNanos)
      throws InterruptedException {
    if (!holds(handleLease)) {
      throw freed("await");
    }
    long end = System.nanoTime() + timeoutNanos;
    while (ledger.pending() > 0 && holds(handleLease)) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        break;
      }
      blockedAwaits++;
      try {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      } finally {
        blockedAwaits--;
      }
    }
    return status();
  }

  /**
   * A future completed (on the engine's dispatcher) once every task submitted so far is terminal.
   */
  public synchronized CompletableFuture<BatchStatus> completion(long handleLease) {
    if (!holds(handleLease)) {
      return CompletableFuture.failedFuture(freed("completion"));
    }
    if (ledger.pending() == 0) {
      return CompletableFuture.completedFuture(status());
    }
    CompletableFuture<BatchStatus> f = new CompletableFuture<>();
    idleWaiters.add(f);
    return f;
  }

  /**
   * Waits up to {@code timeoutNanos} for submission {@code s} to be done: its tasks terminal and
   * its notification decided. Costs what its own tasks cost, whatever the batch holds.
   *
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public synchronized SubmissionStatus await(long handleLease, SubmissionState s, long timeoutNanos)
      throws InterruptedException {
    if (!holds(handleLease)) {
      throw freed("await");
    }
    requireCurrent(s, "await");
    long end = System.nanoTime() + timeoutNanos;
    while (!s.done() && holds(handleLease)) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        break;
      }
      s.blockedAwaits++;
      try {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      } finally {
        s.blockedAwaits--;
      }
    }
    return statusOf(s);
  }

  /** A future completed (on the engine's dispatcher) once submission {@code s} is done. */
  public synchronized CompletableFuture<SubmissionStatus> completion(
      long handleLease, SubmissionState s) {
    if (!holds(handleLease)) {
      return CompletableFuture.failedFuture(freed("completion"));
    }
    if (s.generation != generation) {
      return CompletableFuture.failedFuture(resetSince(s, "completion"));
    }
    if (s.done()) {
      return CompletableFuture.completedFuture(statusOf(s));
    }
    if (s.completion == null) {
      s.completion = new CompletableFuture<>();
    }
    return s.completion;
  }

  /** Submission {@code s}'s tasks and notification now. */
  public synchronized SubmissionStatus status(long handleLease, SubmissionState s) {
    if (!holds(handleLease)) {
      throw freed("status");
    }
    requireCurrent(s, "status");
    return statusOf(s);
  }

  private SubmissionStatus statusOf(SubmissionState s) {
    TaskResult[] results = new TaskResult[s.count];
    for (int k = 0; k < s.count; k++) {
      results[k] = ledger.result(s.first + k);
    }
    return new SubmissionStatus(s.first, List.of(results), s.done(), s.notificationResult);
  }

  private void requireCurrent(SubmissionState s, String call) {
    if (s.generation != generation) {
      throw resetSince(s, call);
    }
  }

  private TransferException resetSince(SubmissionState s, String call) {
    return new TransferException(
        ErrorKind.INVALID_ARGUMENT,
        call
            + ": batch "
            + name
            + " was reset (or freed) after the submission of tasks "
            + s.first
            + ".."
            + (s.first + s.count - 1)
            + "; its task results are gone (read them before reset)");
  }

  /** Every task's state now. */
  public synchronized BatchStatus status(long handleLease) {
    if (!holds(handleLease)) {
      throw freed("status");
    }
    return status();
  }

  private BatchStatus status() {
    return new BatchStatus(ledger.results(), ledger.pending() == 0);
  }

  /** Frames of this generation not yet sent fail CANCELLED; frames in flight finish. */
  public synchronized void cancel(long handleLease) {
    if (holds(handleLease)) {
      sink.cancelled = true;
    }
  }

  /**
   * Forgets the batch's finished tasks so that its whole capacity can be submitted again; task
   * indexes start from 0. Refused while a task may still touch memory.
   *
   * @throws TransferException INVALID_ARGUMENT if the lease ended; BATCH_BUSY while a task is
   *     pending or held
   */
  public synchronized void reset(long handleLease) {
    if (!holds(handleLease)) {
      throw freed("reset");
    }
    refuseWhileBusy("reset");
    ledger.reset();
    generation++;
    sink = new Sink();
    report(false);
  }

  /**
   * Ends the lease: the batch slot is given back and the batch can be leased again.
   *
   * @throws TransferException INVALID_ARGUMENT if the lease already ended; BATCH_BUSY while a task
   *     is pending or held (the lease stays)
   */
  public synchronized void free(long handleLease) {
    if (!holds(handleLease)) {
      throw freed("free");
    }
    refuseWhileBusy("free");
    ledger.reset();
    generation++;
    lease.state.moveTo(BatchLease.State.FREED);
    sink = null;
    // Waiters of this lease see it freed.
    notifyAll();
    gate.releaseBatch();
    report(true);
  }

  private void refuseWhileBusy(String call) {
    if (ledger.held() > 0) {
      throw new TransferException(
          ErrorKind.BATCH_BUSY,
          call
              + ": batch "
              + name
              + " is quarantined: "
              + ledger.held()
              + " task(s) ("
              + ledger.heldBytes()
              + " B) whose workers did not let go within the destruction window; "
              + "their memory and charges are retained"
              + (ledger.pending() > 0
                  ? ", and " + ledger.pending() + " task(s) are still pending"
                  : ""));
    }
    if (ledger.pending() > 0) {
      throw new TransferException(
          ErrorKind.BATCH_BUSY,
          call
              + ": batch "
              + name
              + " has "
              + ledger.pending()
              + " task(s) that may still touch memory");
    }
  }

  synchronized boolean quarantined() {
    return ledger.held() > 0;
  }

  /**
   * The watchdog, on the actor's thread: tasks still pending a destruction window after their
   * deadline are reported UNQUIESCED and the batch is quarantined, keeping their loans and charges.
   *
   * @return when the watchdog should look again, or {@link Long#MAX_VALUE} if nothing is pending
   */
  synchronized long watchdog(long now) {
    int n =
        ledger.quarantineOverdue(
            now,
            destructionWindowNanos,
            this::countDown,
            "its worker did not let go of its memory within the destruction window ("
                + destructionWindowNanos / 1_000_000
                + " ms) after its deadline; memory and charges retained");
    if (n > 0) {
      heldTasks.set(ledger.held());
      counters.add(Count.TASKS_FAILED, n);
      counters.add(Count.TASKS_UNQUIESCED, n);
      LOG.error(
          "batch {}: {} task(s) UNQUIESCED; the batch is quarantined ({} task(s), {} B retained)",
          name,
          n,
          ledger.held(),
          ledger.heldBytes());
      quarantine.enter(
          new QuarantinedOwner(
              name,
              QuarantinedOwner.Kind.BATCH,
              ledger.held()
                  + " task(s) whose workers did not let go within the destruction window after their deadline",
              ledger.held(),
              ledger.heldBytes(),
              Instant.now()),
          () -> heldTasks.get() > 0);
      notifyIfIdle();
      settleSubmissions();
      report(true);
    }
    long earliest = ledger.earliestPendingDeadline();
    watchdogAtNanos =
        earliest == Long.MAX_VALUE ? Long.MAX_VALUE : earliest + destructionWindowNanos;
    return watchdogAtNanos;
  }

  /** The refresh the actor was asked for: publishes the owner view now. */
  synchronized void refreshReport() {
    reporter.refreshed();
    report(true);
  }

  /** Publishes this batch to the owner view ({@link BatchReporter}); under this monitor. */
  private void report(boolean force) {
    BatchLease current = lease;
    reporter.report(actor, current != null && current.state.is(BatchLease.State.LEASED), force);
  }

  private TransferException freed(String call) {
    return new TransferException(
        ErrorKind.INVALID_ARGUMENT, call + ": the batch was already freed");
  }
}
