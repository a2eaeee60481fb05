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
    Ordering ordering, int maxBatchTasks, Duration batchWindow, int maxInflightTasks, long maxInflightBytes) {

  /** Order of results relative to requests. */
  public enum Ordering {
    /** Results leave in the order their requests arrived. */
    IN_ORDER,
    /** Results leave as soon as their batch completes. */
    AS_COMPLETED
  }

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

  /** In order, 256 tasks per batch, a 1 ms window, bounded by the engine's budgets. */
  public static StreamSettings defaults() {
    return new StreamSettings(Ordering.IN_ORDER, 256, Duration.ofMillis(1), 0, 0);
  }

  public StreamSettings withOrdering(Ordering value) {
    return new StreamSettings(value, maxBatchTasks, batchWindow, maxInflightTasks, maxInflightBytes);
  }

  public StreamSettings withMaxBatchTasks(int value) {
    return new StreamSettings(ordering, value, batchWindow, maxInflightTasks, maxInflightBytes);
  }

  public StreamSettings withBatchWindow(Duration value) {
    return new StreamSettings(ordering, maxBatchTasks, value, maxInflightTasks, maxInflightBytes);
  }

  public StreamSettings withMaxInflightTasks(int value) {
    return new StreamSettings(ordering, maxBatchTasks, batchWindow, value, maxInflightBytes);
  }

  public StreamSettings withMaxInflightBytes(long value) {
    return new StreamSettings(ordering, maxBatchTasks, batchWindow, maxInflightTasks, value);
  }
}
