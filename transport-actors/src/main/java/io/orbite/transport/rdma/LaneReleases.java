package io.orbite.transport.rdma;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * What the slices and parents that ended in one lane pass give back to their channels' budgets
 * ({@link ChannelBudget}: direct bytes, and a parent's two {@code rdma.maxGrants} units), given
 * back once per channel at the pass's end ({@link CqLane#endPass}), before the pass's receipts are
 * delivered. Each budget is a lock shared by every lane of the engine and the submitting threads;
 * given back per slice, the lanes met on it once per slice, and each task it started (when tasks
 * wait for room) woke its lane on its own. Given back per pass, a lane takes each lock once, and
 * the tasks that start are dispatched as one run ({@link RdmaChannel#asOneRun}): one wake-up per
 * lane. Lane thread only.
 */
final class LaneReleases {
  /** Per budget: bytes given back, then parents ended. */
  private Map<ChannelBudget, long[]> freed = new IdentityHashMap<>();

  /**
   * The map {@link #giveBack} works through, while a release it makes may add to {@link #freed}.
   */
  private Map<ChannelBudget, long[]> giving = new IdentityHashMap<>();

  /** A slice's share of its task's bytes, given back at the end of the pass. */
  void bytes(ChannelBudget budget, long bytes) {
    freed.computeIfAbsent(budget, b -> new long[2])[0] += bytes;
  }

  /** A parent's two units, given back at the end of the pass. */
  void parent(ChannelBudget budget) {
    freed.computeIfAbsent(budget, b -> new long[2])[1]++;
  }

  /**
   * Gives everything back: each budget's units first, then its bytes (a task that waited for bytes
   * then finds its units), the tasks started meanwhile dispatched as one run. A task started here
   * that fails on this lane at once (its lane closing) adds its own share, given back in turn; no
   * share is given back twice, also when a release throws (the lane then fails).
   */
  void giveBack() {
    if (freed.isEmpty()) {
      return;
    }
    RdmaChannel.asOneRun(
        () -> {
          while (!freed.isEmpty()) {
            Map<ChannelBudget, long[]> now = freed;
            freed = giving;
            giving = now;
            try {
              for (Map.Entry<ChannelBudget, long[]> e : now.entrySet()) {
                long[] f = e.getValue();
                if (f[1] > 0) {
                  e.getKey().releaseParents((int) f[1]);
                }
                if (f[0] > 0) {
                  e.getKey().releaseBytes(f[0]);
                }
              }
            } finally {
              now.clear();
            }
          }
        });
  }
}
