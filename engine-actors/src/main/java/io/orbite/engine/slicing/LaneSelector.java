package io.orbite.engine.slicing;

/**
 * Picks a lane (rail) for every slice by the reference's score: {@code score = (charged in-flight
 * bytes + slice bytes) / bandwidth}. A single slice takes the lowest score, ties rotating. A
 * multi-slice task gives each lane {@code floor(weight / totalWeight * slices)} slices with {@code
 * weight = 1 / (score + 1e-12)}, leftovers to the best lane. Slices given to one lane are
 * contiguous, so a transport may carry a lane's run in fewer, larger frames.
 *
 * <p>Pure and allocation-free apart from the returned array; not thread-safe per call site only
 * because callers pass their own arrays.
 */
public final class LaneSelector {
  private LaneSelector() {}

  /**
   * @param chargedBytes in-flight bytes already charged to each lane
   * @param bandwidthBytesPerSecond each lane's bandwidth estimate (positive)
   * @param rotation a counter the caller advances per task, so ties and run order rotate
   * @return the lane of each slice of {@code plan}
   */
  public static int[] assign(
      SlicePlan plan, long[] chargedBytes, double[] bandwidthBytesPerSecond, int rotation) {
    int lanes = chargedBytes.length;
    if (lanes == 0 || bandwidthBytesPerSecond.length != lanes) {
      throw new IllegalArgumentException("need one bandwidth per lane and at least one lane");
    }
    int[] laneOfSlice = new int[plan.count()];
    int start = Math.floorMod(rotation, lanes);
    if (plan.count() == 1 || lanes == 1) {
      int best = best(chargedBytes, bandwidthBytesPerSecond, plan.length(0), start);
      java.util.Arrays.fill(laneOfSlice, best);
      return laneOfSlice;
    }
    double[] weight = new double[lanes];
    double total = 0;
    long sliceBytes = plan.blockBytes();
    for (int l = 0; l < lanes; l++) {
      double score = (chargedBytes[l] + sliceBytes) / bandwidthBytesPerSecond[l];
      weight[l] = 1.0 / (score + 1e-12);
      total += weight[l];
    }
    int[] share = new int[lanes];
    int given = 0;
    for (int l = 0; l < lanes; l++) {
      // The epsilon keeps rounding from turning an exact share (count/lanes) into one less.
      share[l] = (int) Math.floor(weight[l] / total * plan.count() + 1e-9);
      given += share[l];
    }
    if (given > plan.count()) {
      throw new IllegalStateException(
          "lane shares " + given + " exceed " + plan.count() + " slices");
    }
    share[best(chargedBytes, bandwidthBytesPerSecond, sliceBytes, start)] += plan.count() - given;
    int slice = 0;
    for (int k = 0; k < lanes; k++) {
      int lane = (start + k) % lanes;
      for (int j = 0; j < share[lane]; j++) {
        laneOfSlice[slice++] = lane;
      }
    }
    return laneOfSlice;
  }

  /**
   * The lane a single slice of {@code sliceBytes} takes: the lowest score, ties going to the first
   * lane from {@code rotation} on. The same choice {@link #assign} makes for a one-slice plan.
   */
  public static int single(
      long[] chargedBytes, double[] bandwidthBytesPerSecond, long sliceBytes, int rotation) {
    if (chargedBytes.length == 0 || bandwidthBytesPerSecond.length != chargedBytes.length) {
      throw new IllegalArgumentException("need one bandwidth per lane and at least one lane");
    }
    return best(
        chargedBytes,
        bandwidthBytesPerSecond,
        sliceBytes,
        Math.floorMod(rotation, chargedBytes.length));
  }

  private static int best(long[] charged, double[] bandwidth, long sliceBytes, int start) {
    int lanes = charged.length;
    int best = start;
    double bestScore = Double.MAX_VALUE;
    for (int k = 0; k < lanes; k++) {
      int lane = (start + k) % lanes;
      double score = (charged[lane] + sliceBytes) / bandwidth[lane];
      if (score < bestScore) {
        bestScore = score;
        best = lane;
      }
    }
    return best;
  }
}
