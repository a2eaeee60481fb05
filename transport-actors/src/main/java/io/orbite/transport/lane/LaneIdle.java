package io.orbite.transport.lane;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * How a lane thread waits when a duty cycle found no work: a bounded spin, then yields, then parks
 * with a period that doubles up to a ceiling (Agrona's {@link BackoffIdleStrategy}). Work handed to
 * the lane unparks it at once ({@link java.util.concurrent.locks.LockSupport#unpark}), so the
 * ceiling bounds only how often an idle lane looks at its own timers (a liveness check, a
 * deadline), never how long arrived work waits. The spin is short: on a machine of two cores a
 * spinning lane takes the core its caller needs.
 */
public final class LaneIdle {
  /** Busy spins after a cycle with work. */
  public static final int MAX_SPINS = 64;

  /** Then yields. */
  public static final int MAX_YIELDS = 8;

  /** Then parks from this period, doubling. */
  public static final long MIN_PARK_NANOS = 1_000L;

  private LaneIdle() {}

  /**
   * A fresh strategy for one lane thread (strategies keep state: confine each to its thread).
   *
   * @param maxParkNanos the longest park: how often an idle lane must run its duty cycle anyway
   */
  public static IdleStrategy strategy(long maxParkNanos) {
    return new BackoffIdleStrategy(MAX_SPINS, MAX_YIELDS, MIN_PARK_NANOS, maxParkNanos);
  }
}
