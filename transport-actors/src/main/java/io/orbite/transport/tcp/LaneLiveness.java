package io.orbite.transport.tcp;

import io.orbite.engine.spi.EngineTally;
import java.io.IOException;

/**
 * One requester lane's liveness clock: when the peer was last heard, when request bytes last left,
 * and whether a KEEPALIVE awaits its answer. A lane that has sent and heard nothing for {@code
 * tcp.keepaliveIntervalMillis} is due a keepalive (which also reports the bytes this engine copied
 * over SHM out of and into the peer, so the source can count them); a lane that waits for an answer
 * (a keepalive or a request) and has heard nothing, and written nothing, for {@code
 * tcp.livenessTimeoutMillis} is lost ({@link LivenessLost}): a killed, stopped or unplugged peer is
 * noticed within that bound with no task running. Confined to the lane's thread.
 */
final class LaneLiveness {
  /**
   * What a keepalive reports: the bytes this engine copied over SHM out of ({@code [0]}) and into
   * ({@code [1]}) the peer's memory since the last report.
   */
  interface KeepaliveReport {
    /**
     * Fills {@code readWritten} and resets the counts; lane thread.
     *
     * @param readWritten where the two counts go
     */
    void take(long[] readWritten);
  }

  /** The peer answered nothing within the liveness bound: the lane is lost. */
  static final class LivenessLost extends IOException {
    private static final long serialVersionUID = 1L;

    LivenessLost(String message) {
      super(message);
    }
  }

  private final String lane;
  private final long keepaliveNanos;
  private final long livenessNanos;
  private final KeepaliveReport report;
  private final EngineTally counters;
  private final long[] reported = new long[2];
  private long heardNanos;
  private long wroteNanos;

  /** When the keepalive now awaiting its answer was sent; 0 when none is. */
  private long keepaliveSentNanos;

  LaneLiveness(
      String lane,
      long keepaliveMillis,
      long livenessMillis,
      KeepaliveReport report,
      EngineTally counters) {
    this.lane = lane;
    this.keepaliveNanos = keepaliveMillis * 1_000_000L;
    this.livenessNanos = livenessMillis * 1_000_000L;
    this.report = report;
    this.counters = counters;
    this.heardNanos = System.nanoTime();
    this.wroteNanos = heardNanos;
  }

  /** Bytes came from the peer (or a hook held the lane: not the peer's silence). */
  void heard(long nowNanos) {
    heardNanos = nowNanos;
  }

  /** Request bytes left for the peer (a keepalive's do not count: they prove nothing of it). */
  void wroteRequests(long nowNanos) {
    wroteNanos = nowNanos;
  }

  /** The peer answered the outstanding keepalive. */
  void answered() {
    keepaliveSentNanos = 0;
  }

  /**
   * Ends the lane if the peer has been silent past the bound while the lane waits for an answer.
   *
   * @param requestsInFlight whether requests await their responses
   * @throws LivenessLost when it has
   */
  void check(long nowNanos, boolean requestsInFlight) throws LivenessLost {
    boolean waiting = keepaliveSentNanos != 0 || requestsInFlight;
    if (waiting && nowNanos - heardNanos > livenessNanos && nowNanos - wroteNanos > livenessNanos) {
      counters.increment(EngineTally.Count.KEEPALIVE_MISSES);
      throw new LivenessLost(
          lane
              + ": the peer answered nothing for "
              + (nowNanos - heardNanos) / 1_000_000
              + " ms (tcp.livenessTimeoutMillis "
              + livenessNanos / 1_000_000
              + ")");
    }
  }

  /**
   * Whether an idle lane (nothing waiting, in flight or being written) is due a keepalive.
   *
   * @param nowNanos now
   * @return true when none awaits its answer and the lane was quiet for the interval
   */
  boolean keepaliveDue(long nowNanos) {
    return keepaliveSentNanos == 0 && nowNanos - Math.max(heardNanos, wroteNanos) >= keepaliveNanos;
  }

  /** Gathers a keepalive, with the SHM counts to report, on {@code writer} (after its begin). */
  void sendKeepalive(long nowNanos, RequestWriter writer) {
    if (report != null) {
      report.take(reported);
    }
    writer.appendKeepalive(reported[0], reported[1]);
    // Not counted as written: the liveness bound runs from the peer's last sign of life.
    keepaliveSentNanos = nowNanos;
  }

  /** Nanoseconds until {@link #check} or {@link #keepaliveDue} may change, for an idle sleep. */
  long untilNextNanos(long nowNanos) {
    if (keepaliveSentNanos != 0) {
      return Math.max(1_000_000L, heardNanos + livenessNanos - nowNanos + 1_000_000L);
    }
    return Math.max(1_000_000L, Math.max(heardNanos, wroteNanos) + keepaliveNanos - nowNanos);
  }
}
