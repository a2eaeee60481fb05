package io.orbite.transport.rdma;

import java.util.Arrays;

/**
 * Bandwidth-aware rail selection (spec 002, after TENT's DeviceSelector), shared by every endpoint
 * of one RDMA transport: a rail's charges are the bytes of its slices in flight to any peer.
 *
 * <p>For each eligible rail, {@code score = (charged + sliceBytes) / selectionBandwidth *
 * tierWeight}, the bandwidth at most the link rate the peer published for the rail it reaches
 * ({@link #assign(int, long, boolean[], double[])}). A single slice takes the lowest score, ties
 * taking turns. A multi-slice parent gives each rail {@code floor(weight / totalWeight * slices)}
 * slices with {@code weight = 1 / (score + 1e-12)}, the leftovers to the best rail; every 100th
 * multi-slice parent instead deals its slices round-robin over the eligible rails (a probe, so an
 * idle rail's estimate stays fresh). Ineligible rails (their pair's circuit open) are never chosen,
 * probes included.
 *
 * <p>Two estimates per rail, each clamped to 0.1..10 times its seed (the port's link rate, or 400
 * Gb/s when the port reports none): the selection estimate, an EWMA of a slice's payload bytes over
 * the time from its post to its confirmation (a READ's payload completion, a WRITE's completion
 * SEND: what its receipt waits for; old-value weight 0.01), and the transmit bandwidth, confirmed
 * payload bytes over time while payload was outstanding (old-value weight 0.9, updated at most
 * every 10 ms, each sample over a window of at most 50 ms: the latest update segments, each at
 * least 10 ms of outstanding payload, whose spans add up to at most 50 ms, or the latest one alone
 * when it is longer; idle time between segments is not counted). Only the selection estimate
 * decides; the transmit one is reported ({@code nicLoadStats}). Tier weights are [1, 5, 10]; each
 * rail's tier is fixed when the transport starts ({@link RailPolicy}: its NUMA locality or its rank
 * in the priority matrix).
 *
 * <p>Thread-safe: one lock, held for a few arithmetic steps; nothing is allocated per slice but the
 * returned assignment of a multi-slice parent.
 */
final class RailSelector {
  static final double[] TIER_WEIGHTS = {1, 5, 10};
  static final double DEFAULT_GBPS = 400;
  static final int PROBE_EVERY = 100;
  private static final double SELECTION_OLD_WEIGHT = 0.01;
  private static final double TRANSMIT_OLD_WEIGHT = 0.9;
  private static final long TRANSMIT_MIN_NANOS = 10_000_000L;
  private static final long TRANSMIT_WINDOW_NANOS = 50_000_000L;

  /** Segments one transmit window can hold: each spans at least 10 ms, the window at most 50. */
  private static final int SEGMENTS = (int) (TRANSMIT_WINDOW_NANOS / TRANSMIT_MIN_NANOS);

  private final int rails;
  private final RailPolicy policy;
  private final double[] seed;
  private final double[] selection;
  private final double[] transmit;
  private final long[] charged;
  private final long[] posted;
  private final long[] completed;
  private final long[] allocated;
  private final long[] windowStart;
  private final long[] windowBytes;
  private final int[] tier;
  private final long[][] segmentBytes;
  private final long[][] segmentNanos;
  private final int[] segmentsHeld;
  private final int[] segmentNext;
  private int turn;
  private long multiSliceParents;

  /**
   * A selector for rails whose ports report {@code gbps} (0 when unknown), every rail in tier 0.
   *
   * @param gbps each rail's link rate in Gb/s
   */
  RailSelector(double[] gbps) {
    this(gbps, RailPolicy.open(java.util.Collections.nCopies(gbps.length, "rail")));
  }

  /**
   * A selector for rails whose ports report {@code gbps} (0 when unknown), under {@code policy}:
   * the rails it excludes are never chosen, and its tiers weigh the scores.
   *
   * @param gbps each rail's link rate in Gb/s
   * @param policy which rails may carry slices, and their tiers
   */
  RailSelector(double[] gbps, RailPolicy policy) {
    if (policy.rails() != gbps.length) {
      throw new IllegalArgumentException(
          "a policy of " + policy.rails() + " rails for " + gbps.length + " rails");
    }
    this.policy = policy;
    this.rails = gbps.length;
    this.seed = new double[rails];
    for (int r = 0; r < rails; r++) {
      double g = gbps[r] > 0 ? gbps[r] : DEFAULT_GBPS;
      seed[r] = g * 1e9 / 8;
    }
    this.selection = seed.clone();
    this.transmit = seed.clone();
    this.charged = new long[rails];
    this.posted = new long[rails];
    this.completed = new long[rails];
    this.allocated = new long[rails];
    this.windowStart = new long[rails];
    this.windowBytes = new long[rails];
    this.tier = policy.tiers();
    this.segmentBytes = new long[rails][SEGMENTS];
    this.segmentNanos = new long[rails][SEGMENTS];
    this.segmentsHeld = new int[rails];
    this.segmentNext = new int[rails];
  }

  /** Which rails may carry slices at all (fixed at start): hard limits, never widened here. */
  RailPolicy policy() {
    return policy;
  }

  /** Rail {@code r}'s tier (0..2). */
  int tier(int r) {
    return tier[r];
  }

  int rails() {
    return rails;
  }

  /** No cap: every rail's own estimate decides. */
  static final double[] UNCAPPED = null;

  private double score(int r, long sliceBytes, double[] peerCap) {
    double bandwidth = peerCap == null ? selection[r] : Math.min(selection[r], peerCap[r]);
    return (charged[r] + sliceBytes) / bandwidth * TIER_WEIGHTS[tier[r]];
  }

  /**
   * Chooses a rail for each of {@code slices} slices of {@code sliceBytes} (the block size; a
   * folded tail is charged as its own length by {@link #charge}) among the rails {@code eligible}
   * marks that the policy allows, and charges nothing yet.
   *
   * @return the rail of each slice, or null when no rail is both eligible and allowed
   */
  synchronized int[] assign(int slices, long sliceBytes, boolean[] eligible) {
    return assign(slices, sliceBytes, eligible, UNCAPPED);
  }

  /**
   * {@link #assign(int, long, boolean[])} towards one peer, each rail's bandwidth in the score at
   * most {@code peerCap[r]} (bytes per second: the link rate the peer published for the rail that
   * rail {@code r} reaches), so a slower peer NIC weighs its pair down; null caps nothing. The
   * estimates themselves stay this engine's own.
   */
  synchronized int[] assign(int slices, long sliceBytes, boolean[] eligible, double[] peerCap) {
    int start = Math.floorMod(turn++, rails);
    int best = -1;
    double bestScore = Double.MAX_VALUE;
    for (int k = 0; k < rails; k++) {
      int r = (start + k) % rails;
      if (eligible(eligible, r)) {
        double s = score(r, sliceBytes, peerCap);
        if (s < bestScore) {
          best = r;
          bestScore = s;
        }
      }
    }
    if (best < 0) {
      return null;
    }
    int[] out = new int[slices];
    if (slices == 1) {
      out[0] = best;
      return out;
    }
    if (++multiSliceParents % PROBE_EVERY == 0) {
      int at = 0;
      for (int i = 0; at < slices; i++) {
        int r = (start + i) % rails;
        if (eligible(eligible, r)) {
          out[at++] = r;
        }
      }
      return out;
    }
    double total = 0;
    double[] weight = new double[rails];
    for (int r = 0; r < rails; r++) {
      if (eligible(eligible, r)) {
        weight[r] = 1 / (score(r, sliceBytes, peerCap) + 1e-12);
        total += weight[r];
      }
    }
    int at = 0;
    for (int k = 0; k < rails; k++) {
      int r = (start + k) % rails;
      int n = eligible(eligible, r) ? (int) Math.floor(weight[r] / total * slices) : 0;
      for (int j = 0; j < n && at < slices; j++) {
        out[at++] = r;
      }
    }
    while (at < slices) {
      out[at++] = best;
    }
    return out;
  }

  private boolean eligible(boolean[] candidates, int r) {
    return candidates[r] && policy.allowed(r);
  }

  /** {@code bytes} of a slice assigned to rail {@code r} are in flight now. */
  synchronized void charge(int r, long bytes) {
    charged[r] += bytes;
    allocated[r] += bytes;
  }

  /** A slice's payload WR of {@code bytes} was posted on rail {@code r}. */
  synchronized void posted(int r, long bytes, long nowNanos) {
    if (posted[r] == completed[r]) {
      windowStart[r] = nowNanos; // payload outstanding again: a fresh transmit window
      windowBytes[r] = 0;
    }
    posted[r] += bytes;
  }

  /**
   * A slice of {@code bytes} on rail {@code r} ended: its charge is returned; when it moved its
   * bytes, its payload time ({@code postedAt} to {@code nowNanos}) feeds the estimates. A failed or
   * uncertain slice feeds nothing.
   */
  synchronized void finished(
      int r, long bytes, boolean moved, boolean wasPosted, long postedAt, long nowNanos) {
    charged[r] -= bytes;
    if (!wasPosted) {
      return;
    }
    completed[r] += bytes;
    if (!moved) {
      return;
    }
    long took = Math.max(1, nowNanos - postedAt);
    double sample = bytes * 1e9 / took;
    selection[r] =
        clamp(r, SELECTION_OLD_WEIGHT * selection[r] + (1 - SELECTION_OLD_WEIGHT) * sample);
    windowBytes[r] += bytes;
    long span = nowNanos - windowStart[r];
    if (span >= TRANSMIT_MIN_NANOS) {
      double tx = windowRate(r, windowBytes[r], span);
      transmit[r] = clamp(r, TRANSMIT_OLD_WEIGHT * transmit[r] + (1 - TRANSMIT_OLD_WEIGHT) * tx);
      windowStart[r] = nowNanos;
      windowBytes[r] = 0;
    }
  }

  /**
   * Adds the segment just ended ({@code bytes} over {@code nanos}) to rail {@code r}'s transmit
   * window and answers the window's rate: the newest segments whose spans add up to at most 50 ms,
   * or the newest alone when it is longer.
   */
  private double windowRate(int r, long bytes, long nanos) {
    long[] b = segmentBytes[r];
    long[] t = segmentNanos[r];
    b[segmentNext[r]] = bytes;
    t[segmentNext[r]] = nanos;
    segmentNext[r] = (segmentNext[r] + 1) % SEGMENTS;
    segmentsHeld[r] = Math.min(SEGMENTS, segmentsHeld[r] + 1);
    long sumBytes = 0;
    long sumNanos = 0;
    int kept = 0;
    for (int k = 1; k <= segmentsHeld[r]; k++) {
      int at = Math.floorMod(segmentNext[r] - k, SEGMENTS);
      if (kept > 0 && sumNanos + t[at] > TRANSMIT_WINDOW_NANOS) {
        break;
      }
      sumBytes += b[at];
      sumNanos += t[at];
      kept++;
    }
    segmentsHeld[r] = kept;
    return sumBytes * 1e9 / sumNanos;
  }

  /**
   * Rail {@code r}'s port now reports {@code gbps} (0: unknown, so 400 Gb/s): the new seed, and
   * both estimates scaled by the new seed over the old, so each keeps its ratio to the link (and so
   * stays within 0.1..10 times the new seed).
   */
  synchronized void linkRate(int r, double gbps) {
    double next = (gbps > 0 ? gbps : DEFAULT_GBPS) * 1e9 / 8;
    double scale = next / seed[r];
    seed[r] = next;
    selection[r] = clamp(r, selection[r] * scale);
    transmit[r] = clamp(r, transmit[r] * scale);
  }

  private double clamp(int r, double v) {
    return Math.max(0.1 * seed[r], Math.min(10 * seed[r], v));
  }

  /** One rail's figures, for the owner view and {@code nicLoadStats()}. */
  record Load(
      long linkBytesPerSecond,
      long selectionBytesPerSecond,
      long transmitBytesPerSecond,
      long chargedBytes,
      long postedBytes,
      long completedBytes,
      long allocatedBytes,
      int tier) {}

  synchronized Load load(int r) {
    return new Load(
        (long) seed[r],
        (long) selection[r],
        (long) transmit[r],
        charged[r],
        posted[r],
        completed[r],
        allocated[r],
        tier[r]);
  }

  @Override
  public synchronized String toString() {
    return "RailSelector(selection "
        + Arrays.toString(selection)
        + ", charged "
        + Arrays.toString(charged)
        + ")";
  }
}
