package io.orbite.engine.admission;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The tasks-in-flight and in-flight-bytes budgets (C9) and the requester fence, packed into one
 * atomic word, so that a charge is a single compare-and-set on the submitting thread: tasks and
 * bytes are charged together or not at all, and a charge decided after {@link #fence} can only see
 * the fence. Releases are never refused.
 *
 * <p>The word: bit 63 is the fence, bits 38-62 count tasks (25 bits: the largest tasks budget,
 * 16,777,216, fits), bits 0-37 count bytes in units of {@code 2^unitShift} bytes. The unit is one
 * byte for any bytes budget up to 256 GiB (the default is 8 GiB); above that it is the smallest
 * power of two that fits the budget into 38 bits, and each charge is rounded up to whole units.
 */
final class TaskBudget {
  private static final long FENCE = 1L << 63;
  private static final int TASK_SHIFT = 38;
  private static final long UNIT_MASK = (1L << TASK_SHIFT) - 1;
  private static final long TASK_MASK = (1L << 25) - 1;

  private final AtomicLong word = new AtomicLong();
  private final long maxTasks;
  private final long maxBytes;
  private final int unitShift;
  private final long maxUnits;

  TaskBudget(long maxTasks, long maxBytes) {
    if (maxTasks < 0 || maxTasks > TASK_MASK || maxBytes < 0) {
      throw new IllegalArgumentException(
          "task budget out of range: " + maxTasks + " tasks, " + maxBytes + " B");
    }
    int shift = 0;
    while ((maxBytes >>> shift) > UNIT_MASK) {
      shift++;
    }
    this.maxTasks = maxTasks;
    this.maxBytes = maxBytes;
    this.unitShift = shift;
    this.maxUnits = maxBytes >>> shift;
  }

  /** What {@code bytes} costs in units, rounded up; MAX_VALUE for a charge no budget can hold. */
  private long units(long bytes) {
    long u = (bytes >>> unitShift) + ((bytes & ((1L << unitShift) - 1)) != 0 ? 1 : 0);
    return u > UNIT_MASK ? Long.MAX_VALUE : u;
  }

  /** Sentinel: the charge was refused because the budget is fenced. */
  static final String FENCED = "fenced";

  /**
   * Charges {@code tasks} and {@code bytes} together.
   *
   * @return null when granted, {@link #FENCED} once fenced, else the refusal naming the budget
   */
  String tryCharge(int tasks, long bytes) {
    if (tasks < 0 || bytes < 0) {
      throw new IllegalArgumentException("negative charge: " + tasks + " tasks, " + bytes + " B");
    }
    long units = units(bytes);
    while (true) {
      long w = word.get();
      if ((w & FENCE) != 0) {
        return FENCED;
      }
      long t = (w >>> TASK_SHIFT) & TASK_MASK;
      long u = w & UNIT_MASK;
      if (tasks > maxTasks - t) {
        return "tasks in flight: " + t + " + " + tasks + " exceeds the budget of " + maxTasks;
      }
      if (units > maxUnits - u) {
        return "in-flight bytes: "
            + (u << unitShift)
            + " + "
            + bytes
            + " exceeds the budget of "
            + maxBytes;
      }
      if (word.compareAndSet(w, w + ((long) tasks << TASK_SHIFT) + units)) {
        return null;
      }
    }
  }

  /**
   * Gives back what {@link #tryCharge} charged; more than is charged is a broken invariant. True
   * when this release left a fenced budget with no task: nothing can be charged again.
   */
  boolean release(int tasks, long bytes) {
    long units = units(bytes);
    while (true) {
      long w = word.get();
      long t = (w >>> TASK_SHIFT) & TASK_MASK;
      long u = w & UNIT_MASK;
      if (tasks < 0 || tasks > t || units > u) {
        throw new IllegalStateException(
            "admission released more than it charged: "
                + tasks
                + " of "
                + t
                + " tasks, "
                + bytes
                + " of "
                + (u << unitShift)
                + " B");
      }
      long next = w - ((long) tasks << TASK_SHIFT) - units;
      if (word.compareAndSet(w, next)) {
        return (next & FENCE) != 0 && ((next >>> TASK_SHIFT) & TASK_MASK) == 0;
      }
    }
  }

  /** From now on every charge is refused; releases still count. */
  void fence() {
    word.getAndUpdate(w -> w | FENCE);
  }

  boolean fenced() {
    return (word.get() & FENCE) != 0;
  }

  /** Tasks charged now. */
  long tasks() {
    return (word.get() >>> TASK_SHIFT) & TASK_MASK;
  }

  /** Bytes charged now (in whole units: exact for a budget up to 256 GiB). */
  long bytes() {
    return (word.get() & UNIT_MASK) << unitShift;
  }

  /** Tasks and bytes charged now, read together. */
  long[] usage() {
    long w = word.get();
    return new long[] {(w >>> TASK_SHIFT) & TASK_MASK, (w & UNIT_MASK) << unitShift};
  }
}
