package io.orbite.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Op;
import io.orbite.engine.Transport;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The latency panel's histogram: every value lands in a bucket whose bounds hold it and whose width
 * is at most 1/8 of its value; percentiles are the bucket bound of the right rank; the window keeps
 * the last ticks only; failed tasks are counted apart.
 */
class LatencyWindowTest {
  @Test
  void eachValueLiesInItsBucketWithinAnEighthOfItself() {
    long[] samples = {0, 1, 7, 8, 15, 16, 17, 31, 32, 1000, 4093, 65_537, 1_000_000, 123_456_789L};
    for (long v : samples) {
      int i = LatencyWindow.index(v);
      long hi = LatencyWindow.upper(i);
      long lo = i == 0 ? 0 : LatencyWindow.upper(i - 1) + 1;
      assertTrue(lo <= v && v <= hi, v + " in [" + lo + ", " + hi + "]");
      assertTrue(hi - lo <= Math.max(0, v / 8), v + ": bucket [" + lo + ", " + hi + "] too wide");
    }
    for (long v = 0; v < 1 << 16; v++) {
      int i = LatencyWindow.index(v);
      assertTrue(LatencyWindow.upper(i) >= v && (i == 0 || LatencyWindow.upper(i - 1) < v), "" + v);
    }
    assertEquals(LatencyWindow.BUCKETS - 1, LatencyWindow.index(Long.MAX_VALUE));
    assertEquals(0, LatencyWindow.index(-5), "a negative latency counts as 0");
  }

  @Test
  void percentilesComeFromTheWindowAndFailuresAreCountedApart() {
    LatencyWindow w = new LatencyWindow(2);
    for (int i = 1; i <= 100; i++) {
      w.record(Transport.TCP, Op.READ, true, i * 1000L);
    }
    w.record(Transport.TCP, Op.READ, false, 5);
    w.record(Transport.SHM, Op.WRITE, true, 2_000_000L);
    assertEquals(List.of(), w.report(), "nothing is in the window before the tick ends");
    w.roll();
    List<Map<String, Object>> rows = w.report();
    assertEquals(2, rows.size(), rows.toString());
    Map<String, Object> tcp = rows.get(0);
    assertEquals("tcp", tcp.get("transport"));
    assertEquals("read", tcp.get("op"));
    assertEquals(100L, tcp.get("completed"));
    assertEquals(1L, tcp.get("failed"));
    assertEquals(LatencyWindow.upper(LatencyWindow.index(50_000)), tcp.get("p50Nanos"));
    assertEquals(LatencyWindow.upper(LatencyWindow.index(99_000)), tcp.get("p99Nanos"));
    assertEquals(LatencyWindow.upper(LatencyWindow.index(100_000)), tcp.get("maxNanos"));
    assertEquals("shm", rows.get(1).get("transport"));
    assertEquals("write", rows.get(1).get("op"));

    // Two ticks later the first tick has left the window.
    w.record(Transport.TCP, Op.READ, true, 7);
    w.roll();
    assertEquals(101L, w.report().get(0).get("completed"));
    w.roll();
    List<Map<String, Object>> later = w.report();
    assertEquals(1, later.size(), later.toString());
    assertEquals(1L, later.get(0).get("completed"));
    assertEquals(0L, later.get(0).get("failed"));
    assertEquals(7L, later.get(0).get("p50Nanos"));
    w.roll();
    assertEquals(List.of(), w.report());
  }
}
