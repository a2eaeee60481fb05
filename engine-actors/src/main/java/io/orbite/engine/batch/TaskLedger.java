package io.orbite.engine.batch;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.registry.Registration;
import io.orbite.engine.spi.Receipt;
import java.util.ArrayList;
import java.util.List;

/**
 * The per-task drain ledger of one batch: how many receipts each task still owes, what they said,
 * and the local loan it holds. Plain data owned by the Batch actor; a task turns terminal only
 * when its last receipt arrives, so a failure is never reported while a worker may still touch
 * its memory (C5). A task whose receipts have not all arrived within the destruction window after
 * its deadline is reported UNQUIESCED: terminal for the caller, but it keeps its loan (and the
 * batch keeps its charge) until the late receipts prove its workers let go.
 */
final class TaskLedger {
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
  private int size;
  private int pending;
  /** UNQUIESCED tasks whose workers have not let go yet. */
  private int held;
  private long heldBytes;
  /** Bytes of pending tasks, receipts still owed, and local loans held: the batch's charges, for the owner view. */
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

  /** Adds a pending task and returns its index; the caller then sets its owed receipts. */
  int add(Op taskOp, long taskLength, Registration localLoan, long taskDeadlineNanos) {
    int i = size++;
    op[i] = taskOp;
    length[i] = taskLength;
    state[i] = TaskState.PENDING;
    loan[i] = localLoan;
    admittedNanos[i] = System.nanoTime();
    deadlineNanos[i] = taskDeadlineNanos;
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
      if (state[i] == TaskState.PENDING && owed[i] > 0 && (!any || deadlineNanos[i] - earliest < 0)) {
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
    int n = 0;
    for (int i = 0; i < size; i++) {
      if (state[i] == TaskState.PENDING && owed[i] > 0 && now - deadlineNanos[i] - windowNanos > 0) {
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
      }
    }
    return n;
  }

  /** Whether task {@code i} is UNQUIESCED and still owes receipts. */
  boolean isHeld(int i) {
    return i >= 0 && i < size && state[i] == TaskState.UNQUIESCED && owed[i] > 0;
  }

  /**
   * Applies a late receipt of an UNQUIESCED task; its reported outcome does not change.
   *
   * @return the task's length once its last receipt arrived (its loan is returned), else -1
   */
  long applyLate(Receipt r) {
    int i = r.taskIndex();
    if (!isHeld(i)) {
      throw new IllegalStateException("late receipt for task " + i + " that owes nothing: " + r);
    }
    owedReceipts--;
    if (--owed[i] > 0) {
      return -1;
    }
    if (loan[i] != null) {
      loan[i].returnLoan();
      loan[i] = null;
      loansHeld--;
    }
    held--;
    heldBytes -= length[i];
    return length[i];
  }

  void owe(int i, int receipts) {
    owed[i] = receipts;
    owedReceipts += receipts;
  }

  /** Fails a task that never reached a worker. */
  void failUnsent(int i, ErrorKind kind, String why) {
    error[i] = kind;
    detail[i] = why;
    owed[i] = 0;
    finish(i);
  }

  /**
   * Applies one receipt.
   *
   * @return the length of the task if this receipt made it terminal, else -1
   */
  long apply(Receipt r) {
    int i = r.taskIndex();
    if (i < 0 || i >= size || state[i] != TaskState.PENDING || owed[i] <= 0) {
      throw new IllegalStateException("receipt for task " + i + " that owes nothing: " + r);
    }
    if (r.error() == null) {
      confirmed[i] += r.bytes();
    } else if (error[i] == null || error[i] == ErrorKind.CANCELLED) {
      error[i] = r.error();
      detail[i] = r.detail();
    }
    if (r.effect() == RemoteEffect.APPLIED) {
      applied[i] = true;
    } else if (r.effect() == RemoteEffect.UNKNOWN) {
      ambiguous[i] = true;
    }
    owedReceipts--;
    if (--owed[i] > 0) {
      return -1;
    }
    finish(i);
    return length[i];
  }

  private void finish(int i) {
    if (error[i] == null && confirmed[i] != length[i]) {
      error[i] = ErrorKind.PROTOCOL;
      detail[i] = "confirmed " + confirmed[i] + " of " + length[i] + " bytes";
    }
    state[i] = error[i] == null ? TaskState.COMPLETED : TaskState.FAILED;
    elapsedNanos[i] = System.nanoTime() - admittedNanos[i];
    if (loan[i] != null) {
      loan[i].returnLoan();
      loan[i] = null;
      loansHeld--;
    }
    pending--;
    pendingBytes -= length[i];
  }

  boolean succeeded(int i) {
    return state[i] == TaskState.COMPLETED;
  }

  List<TaskResult> results() {
    List<TaskResult> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      out.add(result(i));
    }
    return out;
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
    boolean drained = terminal && owed[i] == 0;
    return new TaskResult(i, state[i], bytes, error[i], effect, drained, detail[i] == null ? "" : detail[i],
        elapsedNanos[i]);
  }
}
