package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;

/**
 * One connected RC QP of an endpoint (requester side) or of a source session, and what its lane
 * knows about it. Everything but {@link #broken} is confined to the lane thread that polls its CQ.
 */
final class RcQp {
  final Verbs.Qp qp;
  final CqLane lane;
  final Rail rail;

  /** Its index in its endpoint's (or session's) QP array: the number the control protocol uses. */
  final int index;

  /** The peer's rail this QP is connected to. */
  final int remoteRail;

  /** Work requests posted and not yet completed (every WR is signalled, so this is exact). */
  int debt;

  /** The most {@link #debt} ever reached. */
  int maxDebt;

  /** Requester slices asked for or posted on this QP and not yet finished. */
  int slicesInFlight;

  /** Requester slices queued for this QP while it had no room. */
  final ArrayDeque<Slice> waiting = new ArrayDeque<>();

  /** Set once the QP erred or its owner started closing: nothing new is posted on it. */
  volatile String broken;

  /** Whether the QP was destroyed (its lane did it, after its WRs were flushed). */
  boolean destroyed;

  RcQp(Verbs.Qp qp, CqLane lane, Rail rail, int index, int remoteRail) {
    this.qp = qp;
    this.lane = lane;
    this.rail = rail;
    this.index = index;
    this.remoteRail = remoteRail;
  }

  void posted(int wrs) {
    debt += wrs;
    maxDebt = Math.max(maxDebt, debt);
  }
}
