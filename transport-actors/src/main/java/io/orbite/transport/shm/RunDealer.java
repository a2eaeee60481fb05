package io.orbite.transport.shm;

/**
 * Which lane each task of a run goes to: the run is cut into contiguous parts of whole tasks, and
 * the parts go to the lanes in turn, from the lane whose turn it is. A part ends with the task that
 * takes the run's bytes so far past the next multiple of {@code min(maxPartBytes, run / lanes)}, so
 * a run of at least as many equal tasks as lanes gives every lane a part, and a larger run goes in
 * parts of about {@code maxPartBytes}.
 *
 * <p>Why parts and not one task per lane in turn: two threads that copy alternate 4 KiB pieces of
 * neighbouring memory run 25-40 % slower on this machine kind than two that each copy contiguous
 * stretches of 128 KiB or more (docs/qualification.md). A run smaller than {@code lanes *
 * maxPartBytes} is still split across every lane, so a small batch keeps its parallel copies.
 *
 * <p>Not thread-safe: its owner calls it under its own lock.
 */
final class RunDealer {
  private final int lanes;
  private final long maxPartBytes;

  /** The lane the next run (or lone task) starts on. */
  private int turn;

  private int lane;
  private long spacing;
  private long boundary;
  private long dealt;
  private long inPart;

  RunDealer(int lanes, long maxPartBytes) {
    if (lanes < 1 || maxPartBytes < 1) {
      throw new IllegalArgumentException(
          "lanes and maxPartBytes must be positive, got " + lanes + " and " + maxPartBytes);
    }
    this.lanes = lanes;
    this.maxPartBytes = maxPartBytes;
  }

  /** Starts a run of {@code runBytes} in all. */
  void start(long runBytes) {
    spacing = Math.max(1, Math.min(maxPartBytes, runBytes / lanes));
    boundary = spacing;
    dealt = 0;
    inPart = 0;
    lane = turn;
  }

  /** The lane of the run's next task, of {@code lengthBytes}. */
  int next(long lengthBytes) {
    int mine = lane;
    dealt += lengthBytes;
    inPart += lengthBytes;
    if (dealt >= boundary) {
      while (dealt >= boundary) {
        boundary += spacing;
      }
      lane = following(lane);
      inPart = 0;
    }
    // The next run starts on the lane after the last one this run used.
    turn = inPart > 0 ? following(lane) : lane;
    return mine;
  }

  /** A task outside any run takes the turn's lane and passes the turn on. */
  int single() {
    int mine = turn;
    turn = following(turn);
    return mine;
  }

  private int following(int i) {
    return i + 1 == lanes ? 0 : i + 1;
  }
}
