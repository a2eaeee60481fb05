package io.orbite.engine.batch;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Registration;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * The per-task drain ledger of one batch: how many receipts each task still owes, what they said,
 * and the local loan it holds. Plain data owned by the Batch actor; a task turns terminal only when
 * its last receipt arrives, so a failure is never reported while a worker may still touch its
 * memory (C5). A task whose receipts have not all arrived within the destruction window after its
 * deadline is reported UNQUIESCED: terminal for the caller, but it keeps its loan (and the batch
 * keeps its charge) until the late receipts prove its workers let go.
 *
 * <p>A task the engine routed to SHM or RDMA may run once more over TCP when that transport failed
 * it drained ({@link TransportFailover}): its last receipt then leaves it {@link
 * Outcome#DRAINED_FAILED}, still pending with its loan, and the batch either starts it over ({@link
 * #failOver}) or ends it ({@link #end}) under the same lock.
 *
 * <p>Why this file is over 500 lines: every per-task column (a plain array, so that a task costs no
 * object) and every move of a task's state is here, the failover's, a merged transfer's members'
 * (which end, quarantine and drain with their leader) and the policy rule's included, so that the
 * drain rules (C5) read in one place.
 */
final class TaskLedger {
  /** {@link Transport#values()} and {@link Route#values()} once: each call would copy them. */
  private static final Transport[] TRANSPORTS = Transport.values();

  private static final Route[] ROUTES = Route.values();

  /** {@link #transport}'s value for a task that never reached a transport. */
  private static final byte NO_TRANSPORT = -1;

  private final Op[] op;
  private final long[] length;
  private final int[] owed;
  private final long[] confirmed;
  private final TaskState[] state;
  private final ErrorKind[] error;
  private final String[] detail;
  private final boolean[] applied;
  private final boolean[] ambiguous;
  private final Registration[] loan;
  private final long[] admittedNanos;
  private final long[] elapsedNanos;
  private final long[] deadlineNanos;

  /**
   * Whether the task's receipt count is known ({@link #owe}); until then it cannot turn terminal.
   */
  private final boolean[] sealed;

  /**
   * The ordinal of the transport each task was handed to ({@link #NO_TRANSPORT}: it never reached
   * one), and of the {@link Route} that chose it: a byte each, so a task costs no object.
   */
  private final byte[] transport;

  private final byte[] route;

  /**
   * The index of the policy rule that chose each task's transport ({@link TaskResult#NO_RULE}:
   * none); a short each, since there are at most 64 rules.
   */
  private final short[] rule;

  /**
   * How many transports each task was handed to (0: none yet); a byte each, since a failover adds
   * at most one ({@link #failOver}).
   */
  private final byte[] attempts;

  /**
   * Whether the task may run again on another transport once its last receipt says it failed
   * ({@link #mayFailOver}); such a task ends {@link Outcome#DRAINED_FAILED}, not FINISHED.
   */
  private final boolean[] candidate;

  /**
   * Whether a failure receipt of the task named a kind that never fails over ({@link
   * TransportFailover#kindFailsOver}): a later receipt's kind cannot undo it.
   */
  private final boolean[] vetoed;

  /** The failed attempt's transport and detail, for the detail of a retry that fails too. */
  private final String[] priorDetail;

  /** The submission each task belongs to: a reference each, shared by its tasks. */
  private final SubmissionState[] owner;

  /**
   * Request merging: how many tasks the physical transfer led by task {@code i} carries (1: its own
   * bytes only), and the bytes it carries. The tasks after a leader in its group are {@link
   * #member}s: they owe no receipt of their own, and end when their leader ends, with its outcome.
   */
  private final int[] span;

  private final long[] physical;
  private final boolean[] member;

  private int size;
  private int pending;

  /** UNQUIESCED tasks whose workers have not let go yet. */
  private int held;

  private long heldBytes;

  /**
   * Bytes of pending tasks, receipts still owed, and local loans held: the batch's charges, for the
   * owner view.
   */
  private long pendingBytes;

  private long owedReceipts;
  private int loansHeld;

  TaskLedger(int capacity) {
    op = new Op[capacity];
    length = new long[capacity];
    owed = new int[capacity];
    confirmed = new long[capacity];
    state = new TaskState[capacity];
    error = new ErrorKind[capacity];
    detail = new String[capacity];
    applied = new boolean[capacity];
    ambiguous = new boolean[capacity];
    loan = new Registration[capacity];
    admittedNanos = new long[capacity];
    elapsedNanos = new long[capacity];
    deadlineNanos = new long[capacity];
    sealed = new boolean[capacity];
    transport = new byte[capacity];
    route = new byte[capacity];
    rule = new short[capacity];
    attempts = new byte[capacity];
    candidate = new boolean[capacity];
    vetoed = new boolean[capacity];
    priorDetail = new String[capacity];
    owner = new SubmissionState[capacity];
    span = new int[capacity];
    physical = new long[capacity];
    member = new boolean[capacity];
  }

  /** What applying a receipt or a receipt count did to its task. */
  enum Outcome {
    /** The task still owes receipts (or was already terminal and still is). */
    NONE,
    /** The task turned terminal now: its loan was returned. */
    FINISHED,
    /**
     * An UNQUIESCED task's workers let go at last: its loan was returned, its outcome unchanged.
     */
    LATE_DRAINED,
    /**
     * A task marked {@link #mayFailOver} got its last receipt, and it failed: it owes nothing (its
     * transport drained it) but is still PENDING, loan and charges held. The caller, under the same
     * lock and before releasing it, either runs it again ({@link #failOver}) or ends it ({@link
     * #end}).
     */
    DRAINED_FAILED
  }

  int size() {
    return size;
  }

  int capacity() {
    return op.length;
  }

  int pending() {
    return pending;
  }

  /** UNQUIESCED tasks still waiting for their workers to let go (loans and charges retained). */
  int held() {
    return held;
  }

  long heldBytes() {
    return heldBytes;
  }

  /** {@link #add(Op, long, Registration, long, long, SubmissionState)} outside any submission. */
  int add(
      Op taskOp,
      long taskLength,
      Registration localLoan,
      long taskDeadlineNanos,
      long submittedNanos) {
    return add(taskOp, taskLength, localLoan, taskDeadlineNanos, submittedNanos, null);
  }

  /** Adds a pending task and returns its index; the caller then sets its owed receipts. */
  int add(
      Op taskOp,
      long taskLength,
      Registration localLoan,
      long taskDeadlineNanos,
      long submittedNanos,
      SubmissionState submission) {
    int i = size++;
    owner[i] = submission;
    span[i] = 1;
    physical[i] = taskLength;
    member[i] = false;
    op[i] = taskOp;
    length[i] = taskLength;
    state[i] = TaskState.PENDING;
    loan[i] = localLoan;
    admittedNanos[i] = submittedNanos;
    deadlineNanos[i] = taskDeadlineNanos;
    owed[i] = 0;
    confirmed[i] = 0;
    error[i] = null;
    detail[i] = null;
    applied[i] = false;
    ambiguous[i] = false;
    elapsedNanos[i] = 0;
    sealed[i] = false;
    transport[i] = NO_TRANSPORT;
    route[i] = (byte) Route.NOT_DISPATCHED.ordinal();
    rule[i] = TaskResult.NO_RULE;
    attempts[i] = 0;
    candidate[i] = false;
    vetoed[i] = false;
    priorDetail[i] = null;
    pending++;
    pendingBytes += taskLength;
    if (localLoan != null) {
      loansHeld++;
    }
    return i;
  }

  /** The earliest deadline among pending tasks, or {@link Long#MAX_VALUE} if none is pending. */
  long earliestPendingDeadline() {
    long earliest = Long.MAX_VALUE;
    boolean any = false;
    for (int i = 0; i < size; i++) {
      if (state[i] == TaskState.PENDING && owing(i) && (!any || deadlineNanos[i] - earliest < 0)) {
        earliest = deadlineNanos[i];
        any = true;
      }
    }
    return any ? earliest : Long.MAX_VALUE;
  }

  /**
   * Reports UNQUIESCED every pending task whose deadline passed more than {@code windowNanos} ago:
   * its workers could not be shown to have stopped touching its memory. Its loan stays held.
   *
   * @return how many tasks were quarantined now
   */
  int quarantineOverdue(long now, long windowNanos, String why) {
    return quarantineOverdue(now, windowNanos, i -> {}, why);
  }

  /**
   * {@link #quarantineOverdue(long, long, String)}, telling {@code ended} each task it turned
   * UNQUIESCED.
   */
  int quarantineOverdue(long now, long windowNanos, IntConsumer ended, String why) {
    int n = 0;
    for (int i = 0; i < size; i++) {
      if (state[i] == TaskState.PENDING && owing(i) && now - deadlineNanos[i] - windowNanos > 0) {
        state[i] = TaskState.UNQUIESCED;
        error[i] = ErrorKind.UNQUIESCED;
        detail[i] = why;
        if (op[i] == Op.WRITE) {
          // Its bytes may or may not have reached the peer, and may still be on their way.
          ambiguous[i] = true;
        }
        elapsedNanos[i] = now - admittedNanos[i];
        pending--;
        pendingBytes -= length[i];
        held++;
        heldBytes += length[i];
        n++;
        ended.accept(i);
        for (int j = i + 1; j < i + span[i]; j++) {
          // A member's memory is its leader's transfer's: held with it, until it lets go.
          state[j] = TaskState.UNQUIESCED;
          error[j] = ErrorKind.UNQUIESCED;
          detail[j] = why;
          ambiguous[j] = ambiguous[i];
          elapsedNanos[j] = now - admittedNanos[j];
          pending--;
          pendingBytes -= length[j];
          held++;
          heldBytes += length[j];
          n++;
          ended.accept(j);
        }
      }
    }
    return n;
  }

  /**
   * Whether task {@code i} may still get receipts: its count is not known yet, or some are owed.
   */
  private boolean owing(int i) {
    return !sealed[i] || owed[i] > 0;
  }

  /** Whether task {@code i} is UNQUIESCED and its workers have not let go yet. */
  boolean isHeld(int i) {
    return i >= 0 && i < size && state[i] == TaskState.UNQUIESCED && owing(i);
  }

  /**
   * A late receipt (or receipt count) left an UNQUIESCED task owing nothing: its workers let go.
   */
  private Outcome lateDrained(int i) {
    for (int j = i; j < i + span[i]; j++) {
      if (loan[j] != null) {
        loan[j].returnLoan();
        loan[j] = null;
        loansHeld--;
      }
      held--;
      heldBytes -= length[j];
    }
    return Outcome.LATE_DRAINED;
  }

  /**
   * Merges tasks {@code head .. head + count - 1}, adjacent tasks of one submission not dispatched
   * yet, into one physical transfer of {@code bytes} led by {@code head}: its receipts confirm the
   * group's bytes, and when it ends, every member ends with its outcome. The group's deadline is
   * its earliest member's. A member is no candidate for failover on its own: its leader fails over
   * with the whole group.
   */
  void group(int head, int count, long bytes) {
    if (count < 2 || head + count > size || sealed[head] || member[head]) {
      throw new IllegalStateException(
          "cannot merge tasks " + head + ".." + (head + count - 1) + " of " + size);
    }
    span[head] = count;
    physical[head] = bytes;
    long deadline = deadlineNanos[head];
    for (int j = head + 1; j < head + count; j++) {
      if (state[j] != TaskState.PENDING || sealed[j]) {
        throw new IllegalStateException("task " + j + " merged after it was sealed");
      }
      member[j] = true;
      sealed[j] = true;
      candidate[j] = false;
      if (deadlineNanos[j] - deadline < 0) {
        deadline = deadlineNanos[j];
      }
    }
    deadlineNanos[head] = deadline;
  }

  /** How many tasks the physical transfer task {@code i} leads carries (1: itself alone). */
  int span(int i) {
    return span[i];
  }

  /** Records the transport task {@code i} is being handed to, and why it was chosen. */
  void handedTo(int i, Transport t, Route why) {
    transport[i] = (byte) t.ordinal();
    route[i] = (byte) why.ordinal();
    attempts[i] = 1;
  }

  /** Records the policy rule that chose task {@code i}'s transport ({@code -1}: none). */
  void ruled(int i, int policyRule) {
    rule[i] = (short) policyRule;
  }

  /**
   * Marks task {@code i} as one that may run again on another transport: when its last receipt says
   * it failed, {@link #apply} and {@link #owe} answer {@link Outcome#DRAINED_FAILED} instead of
   * ending it.
   */
  void mayFailOver(int i) {
    candidate[i] = true;
  }

  /**
   * Ends a task that {@link Outcome#DRAINED_FAILED} left pending, with the failure it has.
   *
   * @return FINISHED
   */
  Outcome end(int i, long now) {
    requireDrainedFailed(i);
    finish(i, now);
    return Outcome.FINISHED;
  }

  /**
   * Starts a task that {@link Outcome#DRAINED_FAILED} left pending over on transport {@code t}:
   * what the failed attempt said is forgotten (its confirmed bytes, error and effect; it posted
   * nothing and its transport drained it), its loan, charges and deadline stay, and it owes
   * receipts again once {@link #owe} gives the new attempt's count. It is no longer a candidate.
   */
  void failOver(int i, Transport t, Route why) {
    requireDrainedFailed(i);
    priorDetail[i] =
        transport(i) + " failed it " + error[i] + (detail[i] == null ? "" : ": " + detail[i]);
    sealed[i] = false;
    confirmed[i] = 0;
    error[i] = null;
    detail[i] = null;
    applied[i] = false;
    ambiguous[i] = false;
    vetoed[i] = false;
    candidate[i] = false;
    transport[i] = (byte) t.ordinal();
    route[i] = (byte) why.ordinal();
    attempts[i]++;
  }

  private void requireDrainedFailed(int i) {
    if (i < 0
        || i >= size
        || state[i] != TaskState.PENDING
        || owing(i)
        || error[i] == null
        || !candidate[i]) {
      throw new IllegalStateException("task " + i + " is not a drained failure left pending");
    }
  }

  /** Whether a failure receipt of task {@code i} named a kind that never fails over. */
  boolean vetoed(int i) {
    return vetoed[i];
  }

  /** Whether task {@code i}'s receipts so far left the peer's bytes untouched (effect NONE). */
  boolean effectNone(int i) {
    return !applied[i] && !ambiguous[i];
  }

  int attempts(int i) {
    return attempts[i];
  }

  long deadlineNanos(int i) {
    return deadlineNanos[i];
  }

  /** The transport task {@code i} was handed to, or {@code null} if it never reached one. */
  Transport transport(int i) {
    return transport[i] == NO_TRANSPORT ? null : TRANSPORTS[transport[i]];
  }

  Route route(int i) {
    return ROUTES[route[i]];
  }

  /**
   * Records how many receipts task {@code i} will produce, once its transport said so. Receipts may
   * already have arrived (a lane can answer before {@code dispatch} returns): they were counted.
   */
  Outcome owe(int i, int receipts) {
    return owe(i, receipts, System.nanoTime());
  }

  /** {@link #owe(int, int)}, with {@code now} the clock a task that ends here ends at. */
  Outcome owe(int i, int receipts, long now) {
    if (i < 0 || i >= size || sealed[i]) {
      throw new IllegalStateException(
          "receipt count for task " + i + " given twice (or for no task)");
    }
    sealed[i] = true;
    owed[i] += receipts;
    owedReceipts += receipts;
    if (owed[i] < 0) {
      throw new IllegalStateException(
          "task " + i + " got " + (receipts - owed[i]) + " receipts, but owes " + receipts);
    }
    if (owed[i] > 0) {
      return Outcome.NONE;
    }
    if (state[i] == TaskState.UNQUIESCED) {
      return lateDrained(i);
    }
    if (state[i] == TaskState.PENDING) {
      return drainedFailed(i) ? Outcome.DRAINED_FAILED : finishNow(i, now);
    }
    return Outcome.NONE;
  }

  /** Whether task {@code i}, owing nothing more, failed and may run again elsewhere. */
  private boolean drainedFailed(int i) {
    return candidate[i] && error[i] != null;
  }

  private Outcome finishNow(int i, long now) {
    finish(i, now);
    return Outcome.FINISHED;
  }

  /** Fails a task that never reached a worker (it owes no receipt). */
  void failUnsent(int i, ErrorKind kind, String why) {
    error[i] = kind;
    detail[i] = why;
    owed[i] = 0;
    sealed[i] = true;
    finish(i, System.nanoTime());
  }

  /**
   * Applies one receipt. An UNQUIESCED task's late receipt leaves its reported outcome unchanged.
   *
   * @return what the receipt did to its task
   */
  Outcome apply(Receipt r) {
    return apply(r.taskIndex(), r.bytes(), r.error(), r.effect(), r.detail(), System.nanoTime());
  }

  /**
   * Applies one receipt given by its parts ({@code kind} null: confirmed); see {@link
   * #apply(Receipt)}. A task that ends here ends at {@code now}: one clock read serves a whole
   * delivery.
   */
  Outcome apply(int i, long bytes, ErrorKind kind, RemoteEffect effect, String why, long now) {
    boolean late = isHeld(i);
    if (!late && (i < 0 || i >= size || state[i] != TaskState.PENDING || !owing(i))) {
      throw new IllegalStateException(
          "receipt for task "
              + i
              + " that owes nothing: "
              + new Receipt(i, bytes, kind, effect, why));
    }
    owedReceipts--;
    owed[i]--;
    if (late) {
      return sealed[i] && owed[i] == 0 ? lateDrained(i) : Outcome.NONE;
    }
    if (kind == null) {
      confirmed[i] += bytes;
    } else {
      if (error[i] == null || error[i] == ErrorKind.CANCELLED) {
        error[i] = kind;
        detail[i] = why;
      }
      if (candidate[i] && !TransportFailover.kindFailsOver(transport(i), kind)) {
        vetoed[i] = true;
      }
    }
    if (effect == RemoteEffect.APPLIED) {
      applied[i] = true;
    } else if (effect == RemoteEffect.UNKNOWN) {
      ambiguous[i] = true;
    }
    if (!sealed[i] || owed[i] > 0) {
      return Outcome.NONE;
    }
    return drainedFailed(i) ? Outcome.DRAINED_FAILED : finishNow(i, now);
  }

  /**
   * Forgets every task, so that the batch holds its capacity again. Only for a ledger with nothing
   * pending and nothing held.
   */
  void reset() {
    if (pending != 0 || held != 0) {
      throw new IllegalStateException(
          "reset of a ledger with " + pending + " pending and " + held + " held task(s)");
    }
    Arrays.fill(owner, 0, size, null);
    size = 0;
    owedReceipts = 0;
  }

  private void finish(int i, long now) {
    if (error[i] == null && confirmed[i] != physical[i]) {
      error[i] = ErrorKind.PROTOCOL;
      detail[i] = "confirmed " + confirmed[i] + " of " + physical[i] + " bytes";
    }
    state[i] = error[i] == null ? TaskState.COMPLETED : TaskState.FAILED;
    if (error[i] != null && priorDetail[i] != null) {
      detail[i] =
          (detail[i] == null ? "" : detail[i]) + " (after a failover: " + priorDetail[i] + ")";
    }
    priorDetail[i] = null;
    candidate[i] = false;
    elapsedNanos[i] = now - admittedNanos[i];
    if (loan[i] != null) {
      loan[i].returnLoan();
      loan[i] = null;
      loansHeld--;
    }
    pending--;
    pendingBytes -= length[i];
    for (int j = i + 1; j < i + span[i]; j++) {
      finishMember(j, i, now);
    }
  }

  /**
   * Ends member {@code j} of the group {@code head} leads, as its leader ended: every task of a
   * merged transfer reports the transfer's outcome with its effect (a transfer that failed part-way
   * leaves no member known to be whole, so every member reports the failure).
   */
  private void finishMember(int j, int head, long now) {
    error[j] = error[head];
    detail[j] =
        error[head] == null
            ? null
            : "merged with tasks "
                + head
                + ".."
                + (head + span[head] - 1)
                + " into one transfer: "
                + (detail[head] == null ? error[head] : detail[head]);
    applied[j] = applied[head];
    ambiguous[j] = ambiguous[head];
    confirmed[j] = error[head] == null ? length[j] : 0;
    state[j] = state[head];
    transport[j] = transport[head];
    route[j] = route[head];
    attempts[j] = attempts[head];
    elapsedNanos[j] = now - admittedNanos[j];
    if (loan[j] != null) {
      loan[j].returnLoan();
      loan[j] = null;
      loansHeld--;
    }
    pending--;
    pendingBytes -= length[j];
  }

  /** The submission task {@code i} belongs to. */
  SubmissionState owner(int i) {
    return owner[i];
  }

  boolean succeeded(int i) {
    return state[i] == TaskState.COMPLETED;
  }

  List<TaskResult> results() {
    TaskResult[] out = new TaskResult[size];
    for (int i = 0; i < size; i++) {
      out[i] = result(i);
    }
    return Arrays.asList(out);
  }

  long pendingBytes() {
    return pendingBytes;
  }

  long owedReceipts() {
    return owedReceipts;
  }

  int loansHeld() {
    return loansHeld;
  }

  Op op(int i) {
    return op[i];
  }

  TaskState state(int i) {
    return state[i];
  }

  ErrorKind error(int i) {
    return error[i];
  }

  long elapsedNanos(int i) {
    return elapsedNanos[i];
  }

  long length(int i) {
    return length[i];
  }

  TaskResult result(int i) {
    boolean terminal = state[i] != TaskState.PENDING;
    RemoteEffect effect;
    if (ambiguous[i]) {
      effect = RemoteEffect.UNKNOWN;
    } else if (applied[i]) {
      effect = RemoteEffect.APPLIED;
    } else {
      effect = RemoteEffect.NONE;
    }
    long bytes = state[i] == TaskState.COMPLETED ? length[i] : 0;
    boolean drained = terminal && !owing(i);
    return new TaskResult(
        i,
        state[i],
        bytes,
        error[i],
        effect,
        drained,
        detail[i] == null ? "" : detail[i],
        elapsedNanos[i],
        transport(i),
        route(i),
        attempts[i],
        rule[i]);
  }
}
