package io.orbite.transport.tcp;

import java.util.concurrent.atomic.AtomicLong;

/**
 * How long a source lane has gone without a data request, for {@code tcp.sourceIdleTimeoutMillis},
 * and the one race an idle close must win cleanly: a request that arrives as the lane is closed.
 * The lane's thread marks it serving when it takes a READ or WRITE and quiet when it next waits for
 * bytes (its answers written, its loans returned); anything else on the lane (a keepalive) leaves
 * it as it is. The transport's sweep closes it only if it has been quiet for the timeout, by one
 * compare-and-set, and a lane that finds itself closed when it takes a request serves none of it:
 * an idle close never cuts a request in the middle, and never touches memory for one.
 */
final class SourceIdleClock {
  private static final long SERVING = Long.MIN_VALUE;
  private static final long CLOSED = Long.MIN_VALUE + 1;

  /** When it went quiet ({@link System#nanoTime}), or {@link #SERVING} or {@link #CLOSED}. */
  private final AtomicLong quietSince = new AtomicLong(SERVING);

  /**
   * Lane thread: a data request was taken.
   *
   * @return false once the lane was closed idle: the request must not be served
   */
  boolean serving() {
    long q = quietSince.get();
    if (q == SERVING) {
      return true;
    }
    return q != CLOSED && quietSince.compareAndSet(q, SERVING);
  }

  /** Lane thread: it waits for bytes with nothing held; from now it may go idle. */
  void quiet() {
    // Only the lane moves it away from SERVING, so no race here; the clock is read only then.
    if (quietSince.get() == SERVING) {
      quietSince.set(System.nanoTime());
    }
  }

  /**
   * Any thread: closes the clock if the lane has been quiet for {@code timeoutNanos}.
   *
   * @return true if this call closed it: the caller closes the lane
   */
  boolean closeIfIdle(long nowNanos, long timeoutNanos) {
    long q = quietSince.get();
    if (q == SERVING || q == CLOSED || nowNanos - q < timeoutNanos) {
      return false;
    }
    return quietSince.compareAndSet(q, CLOSED);
  }
}
