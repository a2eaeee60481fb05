package io.orbite.observability;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The last {@link #MAX_POINTS} samples of an engine's throughput: completed requester bytes per
 * transport, bytes served as a source per transport, and bytes per lane, each as bytes moved since
 * the sample before. Bounded; thread-safe.
 */
final class ThroughputHistory {
  /** Five minutes at the default one-second tick. */
  static final int MAX_POINTS = 300;

  /**
   * One sample.
   *
   * @param atMillis when it was taken
   * @param requesterBytes completed requester bytes since the previous sample, by transport
   * @param servedBytes bytes served to peers since the previous sample, by transport (SHM: as its
   *     requesters reported them)
   * @param laneBytes confirmed bytes since the previous sample, by lane
   */
  record Point(
      long atMillis,
      Map<String, Long> requesterBytes,
      Map<String, Long> servedBytes,
      Map<String, Long> laneBytes) {
    long total() {
      return requesterBytes.values().stream().mapToLong(Long::longValue).sum();
    }

    long sourceBytes() {
      return servedBytes.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  private final ArrayDeque<Point> points = new ArrayDeque<>();

  synchronized void add(
      long atMillis,
      Map<String, Long> requesterBytes,
      Map<String, Long> servedBytes,
      Map<String, Long> laneBytes) {
    points.addLast(
        new Point(
            atMillis, Map.copyOf(requesterBytes), Map.copyOf(servedBytes), Map.copyOf(laneBytes)));
    while (points.size() > MAX_POINTS) {
      points.pollFirst();
    }
  }

  synchronized List<Point> points() {
    return new ArrayList<>(points);
  }
}
