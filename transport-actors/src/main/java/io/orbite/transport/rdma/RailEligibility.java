package io.orbite.transport.rdma;

import io.orbite.engine.rail.RailHealth;

/**
 * Which of a channel's local rails a task may use: those the selection policy allows ({@link
 * RailPolicy}, {@code rdma.selection}: fixed when the transport starts), narrowed by the task's
 * rail mask ({@code policies[i].choose.railMask}, carried as {@code TaskWork.railMask}: bit {@code
 * i} is this engine's rail {@code i}, 0 restricts nothing), and of those, the ones whose pair to
 * the peer is healthy or admits work now (C13) and whose route is not paused. A mask narrows what
 * the policy allows, never widens it. Reads the channel's QPs and the rail circuits; keeps no
 * state.
 */
final class RailEligibility {
  private final long epoch;
  private final ChannelQps qps;
  private final int rails;
  private final RailPolicy policy;
  private final RailHealth health;

  RailEligibility(long epoch, ChannelQps qps, RailPolicy policy, RailHealth health) {
    this.epoch = epoch;
    this.qps = qps;
    this.rails = qps.railCount;
    this.policy = policy;
    this.health = health;
  }

  /** Whether {@code mask} lets a slice go to rail {@code rail}. */
  static boolean inMask(long mask, int rail) {
    return mask == 0 || (mask >>> rail & 1) != 0;
  }

  /** Whether a slice of a task of {@code mask} may be admitted on rail {@code r} at all. */
  boolean allowed(long mask, int r) {
    return policy.allowed(r) && inMask(mask, r);
  }

  private RailHealth.Pair pair(RcQp qp) {
    return new RailHealth.Pair(epoch, qp.rail.index, qp.remoteRail);
  }

  /** Whether rail {@code r}'s pair to the peer is healthy now and its route not paused. */
  private boolean healthy(int r) {
    RcQp qp = qps.first(r);
    return !qp.rail.fenced() && health.healthy(pair(qp));
  }

  /** Whether some rail the policy allows has a healthy pair now (it only looks). */
  boolean anyHealthy() {
    for (int r = 0; r < rails; r++) {
      if (policy.allowed(r) && healthy(r)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The rails a task of {@code mask} is spread over: allowed, and admitting work now; when none
   * admits, every allowed one, so that admission refuses each slice naming why.
   */
  boolean[] forSlices(long mask) {
    boolean[] eligible = new boolean[rails];
    boolean any = false;
    for (int r = 0; r < rails; r++) {
      RcQp qp = qps.first(r);
      eligible[r] = allowed(mask, r) && !qp.rail.fenced() && health.admissible(pair(qp));
      any |= eligible[r];
    }
    if (!any) {
      for (int r = 0; r < rails; r++) {
        eligible[r] = allowed(mask, r);
      }
    }
    return eligible;
  }

  /**
   * Why a task of {@code mask} cannot run here now, or null when a rail it names is allowed and, if
   * {@code needHealthy}, has a healthy pair: it names none of the rails, only rails the selection
   * excludes, or no rail with a healthy pair now (C13).
   */
  String maskRefusal(long mask, boolean needHealthy) {
    boolean allowed = false;
    for (int r = 0; r < rails; r++) {
      if ((mask >>> r & 1) != 0 && policy.allowed(r)) {
        if (!needHealthy || healthy(r)) {
          return null;
        }
        allowed = true;
      }
    }
    if (allowed) {
      return "names no rail whose pair to the peer is healthy now (C13)";
    }
    if (rails < Long.SIZE && (mask & -1L << rails) == mask) {
      return "names none of the " + rails + " rails of this engine (rails 0.." + (rails - 1) + ")";
    }
    return "names only rails rdma.selection does not allow";
  }

  /**
   * Why no slice of a task of {@code mask} can go anywhere, whatever the health: the policy allows
   * no rail, or none of those the mask names; null otherwise.
   */
  String noRail(long mask) {
    String none = policy.noneAllowed();
    if (none != null || mask == 0) {
      return none;
    }
    String why = maskRefusal(mask, false);
    return why == null ? null : "its rail mask " + Long.toUnsignedString(mask) + " " + why;
  }
}
