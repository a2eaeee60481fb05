package io.orbite.observability;

import io.orbite.engine.Op;
import io.orbite.engine.Transport;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The latencies of the tasks that ended in the last {@link #windowTicks} ticks, per transport and
 * op, for the dashboard's latency panel: counts in log-linear buckets (each power of two split in
 * {@link #SUB} parts, so a percentile is known within 1/{@link #SUB} of its value), recorded
 * lock-free by the threads that end tasks and rolled into the window once per tick. Kamon's
 * histograms are reset by its reporter each tick and cannot be read back here, hence this one.
 * Bounded: {@link #BUCKETS} counters per series and, per tick in the window, only its non-zero
 * buckets.
 */
final class LatencyWindow {
  static final int SUB_BITS = 3;
  static final int SUB = 1 << SUB_BITS;

  /** Values of 2^41 ns (about 37 minutes) and more share the last bucket. */
  static final int MAX_EXPONENT = 40;

  static final int BUCKETS = (MAX_EXPONENT - SUB_BITS + 2) * SUB;

  private static final int SERIES = Transport.values().length * Op.values().length;

  /** The bucket of {@code nanos}: exact below {@link #SUB}, then log-linear. */
  static int index(long nanos) {
    if (nanos < SUB) {
      return (int) Math.max(0, nanos);
    }
    int e = 63 - Long.numberOfLeadingZeros(nanos);
    if (e > MAX_EXPONENT) {
      return BUCKETS - 1;
    }
    int sub = (int) ((nanos >>> (e - SUB_BITS)) & (SUB - 1));
    return (e - SUB_BITS + 1) * SUB + sub;
  }

  /** The largest value bucket {@code i} holds (what a percentile that falls in it reports). */
  static long upper(int i) {
    if (i < SUB) {
      return i;
    }
    int e = i / SUB + SUB_BITS - 1;
    long low = ((long) (SUB + i % SUB)) << (e - SUB_BITS);
    return low + (1L << (e - SUB_BITS)) - 1;
  }

  /** One tick's non-zero buckets. */
  private record Tick(int[] index, long[] count, long failed) {}

  private final int windowTicks;
  private final AtomicLongArray[] current = new AtomicLongArray[SERIES];
  private final LongAdder[] failedNow = new LongAdder[SERIES];
  private final long[][] sum = new long[SERIES][BUCKETS];
  private final long[] failedSum = new long[SERIES];
  private final List<ArrayDeque<Tick>> ticks = new ArrayList<>();

  /**
   * @param windowTicks how many ticks the window holds (at least one)
   */
  LatencyWindow(int windowTicks) {
    this.windowTicks = Math.max(1, windowTicks);
    for (int s = 0; s < SERIES; s++) {
      current[s] = new AtomicLongArray(BUCKETS);
      failedNow[s] = new LongAdder();
      ticks.add(new ArrayDeque<>());
    }
  }

  private static int series(Transport transport, Op op) {
    Transport t = transport == null ? Transport.UNSPEC : transport;
    return t.ordinal() * Op.values().length + op.ordinal();
  }

  /** A task ended: a completed one's latency is counted, a failed one only counted as failed. */
  void record(Transport transport, Op op, boolean completed, long nanos) {
    int s = series(transport, op);
    if (completed) {
      current[s].incrementAndGet(index(nanos));
    } else {
      failedNow[s].increment();
    }
  }

  /**
   * Ends a tick: what was recorded since the last one enters the window, the oldest tick leaves.
   */
  synchronized void roll() {
    for (int s = 0; s < SERIES; s++) {
      int n = 0;
      int[] idx = new int[8];
      long[] cnt = new long[8];
      for (int i = 0; i < BUCKETS; i++) {
        if (current[s].get(i) == 0) {
          continue;
        }
        long c = current[s].getAndSet(i, 0);
        if (c == 0) {
          continue;
        }
        if (n == idx.length) {
          idx = java.util.Arrays.copyOf(idx, n * 2);
          cnt = java.util.Arrays.copyOf(cnt, n * 2);
        }
        idx[n] = i;
        cnt[n++] = c;
        sum[s][i] += c;
      }
      long failed = failedNow[s].sumThenReset();
      failedSum[s] += failed;
      ArrayDeque<Tick> window = ticks.get(s);
      window.addLast(
          new Tick(java.util.Arrays.copyOf(idx, n), java.util.Arrays.copyOf(cnt, n), failed));
      while (window.size() > windowTicks) {
        Tick old = window.pollFirst();
        for (int k = 0; k < old.index().length; k++) {
          sum[s][old.index()[k]] -= old.count()[k];
        }
        failedSum[s] -= old.failed();
      }
    }
  }

  /**
   * One row per transport and op with a task in the window: {@code transport}, {@code op}, {@code
   * completed} and {@code failed} counts, and the completed tasks' {@code p50Nanos}, {@code
   * p90Nanos}, {@code p99Nanos} and {@code maxNanos} (each the upper bound of its bucket).
   */
  synchronized List<Map<String, Object>> report() {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Transport t : Transport.values()) {
      for (Op op : Op.values()) {
        int s = series(t, op);
        long total = 0;
        int highest = -1;
        for (int i = 0; i < BUCKETS; i++) {
          if (sum[s][i] > 0) {
            total += sum[s][i];
            highest = i;
          }
        }
        if (total == 0 && failedSum[s] == 0) {
          continue;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("transport", EngineMetrics.label(t == Transport.UNSPEC ? null : t));
        m.put("op", EngineMetrics.label(op));
        m.put("completed", total);
        m.put("failed", failedSum[s]);
        m.put("p50Nanos", percentile(s, total, 0.50));
        m.put("p90Nanos", percentile(s, total, 0.90));
        m.put("p99Nanos", percentile(s, total, 0.99));
        m.put("maxNanos", highest < 0 ? 0 : upper(highest));
        out.add(m);
      }
    }
    return out;
  }

  /**
   * The smallest bucket bound that at least {@code q} of the {@code total} values lie at or below.
   */
  private long percentile(int s, long total, double q) {
    if (total == 0) {
      return 0;
    }
    long rank = Math.max(1, (long) Math.ceil(q * total));
    long seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
      seen += sum[s][i];
      if (seen >= rank) {
        return upper(i);
      }
    }
    return upper(BUCKETS - 1);
  }
}
