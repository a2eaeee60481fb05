package io.orbite.engine.streams;

import java.time.Duration;

/**
 * How a transfer stream groups, orders and bounds its work.
 *
 * @param ordering whether results leave in request order or as their batches complete
 * @param maxBatchTasks most requests one engine batch carries (requests are grouped into batches)
 * @param batchWindow how long a partial group waits for more requests before it is submitted
 * @param maxInflightTasks most requests admitted and not yet emitted downstream; 0 means the
 *     engine's {@code budgets.maxTasksInFlight}
 * @param maxInflightBytes most bytes admitted and not yet emitted downstream; 0 means the engine's
 *     {@code budgets.maxInflightBytes}
 */
public record StreamSettings(
    Ordering ordering,
    int maxBatchTasks,
    Duration batchWindow,
    int maxInflightTasks,
    long maxInflightBytes) {

  /** Order of results relative to requests. */
  public enum Ordering {
    /** Results leave in the order their requests arrived. */
    IN_ORDER,
    /** Results leave as soon as their batch completes. */
    AS_COMPLETED
  }

  /**
   * Checks the settings.
   *
   * @throws IllegalArgumentException if {@code ordering} is null, {@code maxBatchTasks} is below 1,
   *     {@code batchWindow} is null or negative, or an in-flight bound is negative
   */
  public StreamSettings {
    if (ordering == null) {
      throw new IllegalArgumentException("ordering must not be null");
    }
    if (maxBatchTasks < 1) {
      throw new IllegalArgumentException("maxBatchTasks must be >= 1, got " + maxBatchTasks);
    }
    if (batchWindow == null || batchWindow.isNegative()) {
      throw new IllegalArgumentException("batchWindow must be >= 0, got " + batchWindow);
    }
    if (maxInflightTasks < 0 || maxInflightBytes < 0) {
      throw new IllegalArgumentException("in-flight bounds must be >= 0 (0 = the engine's budget)");
    }
  }

  /**
   * In order, 256 tasks per batch, a 1 ms window, bounded by the engine's budgets.
   *
   * @return {@code new StreamSettings(IN_ORDER, 256, 1 ms, 0, 0)}
   */
  public static StreamSettings defaults() {
    return new StreamSettings(Ordering.IN_ORDER, 256, Duration.ofMillis(1), 0, 0);
  }

  /**
   * These settings with another ordering.
   *
   * @param value the ordering of results; not null
   * @return a copy that differs only in {@code ordering}
   * @throws IllegalArgumentException if {@code value} is null
   */
  public StreamSettings withOrdering(Ordering value) {
    return new StreamSettings(
        value, maxBatchTasks, batchWindow, maxInflightTasks, maxInflightBytes);
  }

  /**
   * These settings with another batch size.
   *
   * @param value most requests one engine batch carries; at least 1
   * @return a copy that differs only in {@code maxBatchTasks}
   * @throws IllegalArgumentException if {@code value} is below 1
   */
  public StreamSettings withMaxBatchTasks(int value) {
    return new StreamSettings(ordering, value, batchWindow, maxInflightTasks, maxInflightBytes);
  }

  /**
   * These settings with another batch window.
   *
   * @param value how long a partial group waits for more requests; zero or more
   * @return a copy that differs only in {@code batchWindow}
   * @throws IllegalArgumentException if {@code value} is null or negative
   */
  public StreamSettings withBatchWindow(Duration value) {
    return new StreamSettings(ordering, maxBatchTasks, value, maxInflightTasks, maxInflightBytes);
  }

  /**
   * These settings with another bound on requests held.
   *
   * @param value most requests admitted and not yet emitted; 0 for the engine's {@code
   *     budgets.maxTasksInFlight}
   * @return a copy that differs only in {@code maxInflightTasks}
   * @throws IllegalArgumentException if {@code value} is negative
   */
  public StreamSettings withMaxInflightTasks(int value) {
    return new StreamSettings(ordering, maxBatchTasks, batchWindow, value, maxInflightBytes);
  }

  /**
   * These settings with another bound on bytes held.
   *
   * @param value most bytes admitted and not yet emitted; 0 for the engine's {@code
   *     budgets.maxInflightBytes}
   * @return a copy that differs only in {@code maxInflightBytes}
   * @throws IllegalArgumentException if {@code value} is negative
   */
  public StreamSettings withMaxInflightBytes(long value) {
    return new StreamSettings(ordering, maxBatchTasks, batchWindow, maxInflightTasks, value);
  }
}
