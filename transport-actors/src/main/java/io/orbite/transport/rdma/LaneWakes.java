package io.orbite.transport.rdma;

import java.util.ArrayList;
import java.util.List;

/**
 * The lanes a control connection's reader handed work to since it last woke them: a reader hands
 * each message to its lane without waking it ({@link CqLane#offer}) and wakes every lane it touched
 * once nothing more is buffered to read ({@link ControlLink#drained}), so a burst of GRANTs, ACKs
 * or grant requests costs each lane one wake-up, not one per message. Confined to the reader's
 * thread.
 */
final class LaneWakes {
  private final List<CqLane> touched = new ArrayList<>(8);

  /**
   * Hands {@code work} to {@code lane}, to be woken by {@link #wakeAll}.
   *
   * @return false when the lane no longer takes work
   */
  boolean hand(CqLane lane, Runnable work) {
    if (!lane.offer(work)) {
      return false;
    }
    for (int i = 0; i < touched.size(); i++) {
      if (touched.get(i) == lane) {
        return true;
      }
    }
    touched.add(lane);
    return true;
  }

  /** Wakes every lane handed work since the last call. */
  void wakeAll() {
    for (int i = 0; i < touched.size(); i++) {
      touched.get(i).wake();
    }
    touched.clear();
  }
}
