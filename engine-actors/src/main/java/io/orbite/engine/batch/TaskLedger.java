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
 * its memory (C5).
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
  private int size;
  private int pending;

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

  /** Adds a pending task and returns its index; the caller then sets its owed receipts. */
  int add(Op taskOp, long taskLength, Registration localLoan) {
    int i = size++;
    op[i] = taskOp;
    length[i] = taskLength;
    state[i] = TaskState.PENDING;
    loan[i] = localLoan;
    admittedNanos[i] = System.nanoTime();
    pending++;
    return i;
  }

  void owe(int i, int receipts) {
    owed[i] = receipts;
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
    }
    pending--;
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

  private TaskResult result(int i) {
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
    return new TaskResult(i, state[i], bytes, error[i], effect, terminal, detail[i] == null ? "" : detail[i],
        elapsedNanos[i]);
  }
}
