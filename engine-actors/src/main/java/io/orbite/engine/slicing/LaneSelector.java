package io.orbite.engine.slicing;

/**
 * Picks a lane (rail) for every slice by the reference's score: {@code score = (charged in-flight
 * bytes + slice bytes) / bandwidth}. A single slice takes the lowest score, ties rotating. A
 * multi-slice task gives each lane {@code floor(weight / totalWeight * slices)} slices with {@code
 * weight = 1 / (score + 1e-12)}, leftovers to the best lane. Slices given to one lane are
 * contiguous, so a transport may carry a lane's run in fewer, larger frames.
 *
 * <p>A task a policy rule keeps on some lanes ({@code policies[i].choose.laneMask}) is scored the
 * same way among those lanes only: the others get no slice, whatever their score ({@link
 * #assign(SlicePlan, long[], double[], int, long)}, {@link #single(long[], double[], long, int,
 * long)}).
 *
 * <p>Pure and allocation-free apart from the returned array; not thread-safe per call site only
 * because callers pass their own arrays.
 */
public final class LaneSelector {
  /** Every lane: the mask of a task no rule restricts. */
  public static final long EVERY_LANE = -1L;

  private LaneSelector() {}

  /**
   * The mask of lanes {@code 0 .. lanes - 1}.
   *
   * @param lanes how many lanes there are (1..64)
   * @return one bit per lane
   */
  public static long all(int lanes) {
    return lanes >= Long.SIZE ? -1L : (1L << lanes) - 1;
  }

  /**
   * {@link #assign(SlicePlan, long[], double[], int, long)} among every lane.
   *
   * @param chargedBytes in-flight bytes already charged to each lane
   * @param bandwidthBytesPerSecond each lane's bandwidth estimate (positive)
   * @param rotation a counter the caller advances per task, so ties and run order rotate
   * @return the lane of each slice of {@code plan}
   */
  public static int[] assign(
      SlicePlan plan, long[] chargedBytes, double[] bandwidthBytesPerSecond, int rotation) {
    return assign(plan, chargedBytes, bandwidthBytesPerSecond, rotation, EVERY_LANE);
  }

  /**
   * @param chargedBytes in-flight bytes already charged to each lane
   * @param bandwidthBytesPerSecond each lane's bandwidth estimate (positive)
   * @param rotation a counter the caller advances per task, so ties and run order rotate
   * @param mask the lanes that may take slices (bit {@code i}: lane {@code i}); {@link #EVERY_LANE}
   *     for all. It must name at least one of the lanes
   * @return the lane of each slice of {@code plan}, each a lane {@code mask} names
   */
  public static int[] assign(
      SlicePlan plan,
      long[] chargedBytes,
      double[] bandwidthBytesPerSecond,
      int rotation,
      long mask) {
    int lanes = chargedBytes.length;
    if (lanes == 0 || bandwidthBytesPerSecond.length != lanes) {
      throw new IllegalArgumentException("need one bandwidth per lane and at least one lane");
    }
    long allowed = mask & all(lanes);
    if (allowed == 0) {
      throw new IllegalArgumentException(
          "lane mask " + Long.toUnsignedString(mask) + " names none of " + lanes + " lanes");
    }
    int[] laneOfSlice = new int[plan.count()];
    int start = Math.floorMod(rotation, lanes);
    if (plan.count() == 1 || Long.bitCount(allowed) == 1) {
      int best = best(chargedBytes, bandwidthBytesPerSecond, plan.length(0), start, allowed);
      java.util.Arrays.fill(laneOfSlice, best);
      return laneOfSlice;
    }
    double[] weight = new double[lanes];
    double total = 0;
    long sliceBytes = plan.blockBytes();
    for (int l = 0; l < lanes; l++) {
      if ((allowed >>> l & 1) != 0) {
        double score = (chargedBytes[l] + sliceBytes) / bandwidthBytesPerSecond[l];
        weight[l] = 1.0 / (score + 1e-12);
        total += weight[l];
      }
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
    share[best(chargedBytes, bandwidthBytesPerSecond, sliceBytes, start, allowed)] +=
        plan.count() - given;
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
    return single(chargedBytes, bandwidthBytesPerSecond, sliceBytes, rotation, EVERY_LANE);
  }

  /**
   * {@link #single(long[], double[], long, int)} among the lanes {@code mask} names (bit {@code i}:
   * lane {@code i}), which must name at least one of them.
   */
  public static int single(
      long[] chargedBytes,
      double[] bandwidthBytesPerSecond,
      long sliceBytes,
      int rotation,
      long mask) {
    int lanes = chargedBytes.length;
    if (lanes == 0 || bandwidthBytesPerSecond.length != lanes) {
      throw new IllegalArgumentException("need one bandwidth per lane and at least one lane");
    }
    long allowed = mask & all(lanes);
    if (allowed == 0) {
      throw new IllegalArgumentException(
          "lane mask " + Long.toUnsignedString(mask) + " names none of " + lanes + " lanes");
    }
    return best(
        chargedBytes, bandwidthBytesPerSecond, sliceBytes, Math.floorMod(rotation, lanes), allowed);
  }

  private static int best(
      long[] charged, double[] bandwidth, long sliceBytes, int start, long allowed) {
    int lanes = charged.length;
    int best = -1;
    double bestScore = Double.MAX_VALUE;
    for (int k = 0; k < lanes; k++) {
      int lane = (start + k) % lanes;
      if ((allowed >>> lane & 1) == 0) {
        continue;
      }
      double score = (charged[lane] + sliceBytes) / bandwidth[lane];
      if (best < 0 || score < bestScore) {
        bestScore = score;
        best = lane;
      }
    }
    return best;
  }
}
