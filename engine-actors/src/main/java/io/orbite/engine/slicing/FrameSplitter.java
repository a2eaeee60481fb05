package io.orbite.engine.slicing;

/**
 * Turns slices and their lanes into wire frames: consecutive slices on the same lane are carried by
 * one frame, and no frame is longer than {@code maxFrameBytes} (a longer run is cut). Every byte of
 * the task is covered exactly once, in order.
 */
public final class FrameSplitter {
  /** Receives each frame: its lane, its offset from the task's start and its length. */
  @FunctionalInterface
  public interface FrameConsumer {
    void frame(int lane, long offset, long length);
  }

  private FrameSplitter() {}

  /** Emits the frames of {@code plan} and returns how many there are. */
  public static int split(
      SlicePlan plan, int[] laneOfSlice, long maxFrameBytes, FrameConsumer out) {
    if (maxFrameBytes <= 0) {
      throw new IllegalArgumentException("maxFrameBytes must be positive");
    }
    int frames = 0;
    int i = 0;
    while (i < plan.count()) {
      int lane = laneOfSlice[i];
      long runStart = plan.offset(i);
      long runEnd = runStart + plan.length(i);
      int j = i + 1;
      while (j < plan.count() && laneOfSlice[j] == lane) {
        runEnd += plan.length(j);
        j++;
      }
      long at = runStart;
      while (at < runEnd) {
        // Step by the emitted length, not maxFrameBytes: a huge cap must not overflow the offset.
        long length = Math.min(maxFrameBytes, runEnd - at);
        out.frame(lane, at, length);
        frames++;
        at += length;
      }
      i = j;
    }
    return frames;
  }
}
