package io.orbite.observability;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Errors seen so far by kind, each with when it was first and last seen (epoch milliseconds), for
 * the dashboard: failed tasks as their batches report them, and the engine's error counts as each
 * tick finds them grown (then the tick's time is the time seen). At most one entry per kind; the
 * kinds are a fixed set (error kinds and the names in docs/operations.md).
 */
final class ErrorsSeen {
  /** One kind's count and times. */
  static final class Seen {
    final LongAdder count = new LongAdder();
    volatile long firstMillis;
    volatile long lastMillis;

    void add(long n, long nowMillis) {
      count.add(n);
      if (firstMillis == 0) {
        firstMillis = nowMillis;
      }
      lastMillis = nowMillis;
    }
  }

  private final Map<String, Seen> byKind = new ConcurrentHashMap<>();

  /** The entry of {@code kind}, made on first use (a task series keeps it). */
  Seen of(String kind) {
    return byKind.computeIfAbsent(kind, k -> new Seen());
  }

  /** A cumulative error count sampled by the tick: the counter and the entry grow by its delta. */
  void sample(Instruments in, String kind, long cumulative) {
    long d = in.delta("err " + kind, cumulative);
    if (d > 0) {
      in.counter(Metric.ERRORS, "kind", kind).increment(d);
      of(kind).add(d, System.currentTimeMillis());
    }
  }

  /** {@code kind -> count}, sorted. */
  Map<String, Long> counts() {
    Map<String, Long> out = new TreeMap<>();
    byKind.forEach((k, v) -> out.put(k, v.count.sum()));
    return out;
  }

  /** {@code kind -> {count, firstMillis, lastMillis}}, sorted by kind. */
  Map<String, Map<String, Long>> detail() {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    byKind.forEach(
        (k, v) -> {
          Map<String, Long> m = new LinkedHashMap<>();
          m.put("count", v.count.sum());
          m.put("firstMillis", v.firstMillis);
          m.put("lastMillis", v.lastMillis);
          out.put(k, m);
        });
    return out;
  }
}
