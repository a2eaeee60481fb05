package io.orbite.transport.tcp;

import java.util.ArrayDeque;
import java.util.List;

/**
 * The frames of one peer channel, reused so that a small task costs no frame object. A lane gives a
 * frame back only once it has sent the frame's last receipt and no longer refers to it; the
 * dispatching thread takes frames out. The two sides meet at one lock, taken once per lane pass
 * that retired frames and once each time the dispatcher's side runs dry, not once per frame.
 */
final class FramePool {
  /**
   * Frames each side keeps at most ({@link #returned}, and so also {@link #ready}, which only ever
   * takes {@link #returned}'s frames): a channel holds at most twice this many idle frames, about
   * 80 B each, and frames of a burst beyond it are left to the collector.
   */
  static final int MAX_POOLED = 4096;

  /** Frames ready for the dispatcher; confined to the channel's monitor. */
  private ArrayDeque<LaneFrame> ready = new ArrayDeque<>();

  /** Frames lanes gave back since the dispatcher last looked; guarded by {@code this}. */
  private ArrayDeque<LaneFrame> returned = new ArrayDeque<>();

  /** A frame to fill; the caller holds its channel's monitor. */
  LaneFrame take() {
    LaneFrame f = ready.pollLast();
    if (f == null) {
      synchronized (this) {
        ArrayDeque<LaneFrame> swap = ready;
        ready = returned;
        returned = swap;
      }
      f = ready.pollLast();
    }
    return f != null ? f : new LaneFrame();
  }

  /**
   * Takes back {@code frames}, which their lane is done with; they are cleared here. Lane thread.
   */
  void giveBack(List<LaneFrame> frames) {
    for (LaneFrame f : frames) {
      f.clear();
    }
    synchronized (this) {
      for (LaneFrame f : frames) {
        if (returned.size() >= MAX_POOLED) {
          break;
        }
        returned.add(f);
      }
    }
  }
}
