package io.orbite.transport.rdma;

import io.orbite.engine.priority.PostQueue;
import io.orbite.nativebind.verbs.Verbs;

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

  /**
   * Requester slices queued for this QP and not yet asked for (C14: HIGH first, FIFO within a tier,
   * aged work promoted after {@code rdma.priorityAgingMillis}); taken while the QP has room.
   */
  final PostQueue<Slice> queue;

  /** Set once the QP erred or its owner started closing: nothing new is posted on it. */
  volatile String broken;

  /** Whether the QP was destroyed (its lane did it, after its WRs were flushed). */
  volatile boolean destroyed;

  /** Set (on the lane) once its destroy was called: it is never called twice (spec 001). */
  boolean destroyAttempted;

  /** Set (on the lane) once this QP alone is being retired after it failed. */
  boolean retiring;

  /**
   * Who retires this QP when its lane faults (the endpoint's channel or the source session that
   * made it); set once it has one. Null meanwhile: the lane then closes the QP itself.
   */
  volatile CqLane.QpOwner owner;

  /** Completes once the QP was retired alone: destroyed, or kept because its destroy failed. */
  final java.util.concurrent.CompletableFuture<Void> retired =
      new java.util.concurrent.CompletableFuture<>();

  RcQp(Verbs.Qp qp, CqLane lane, Rail rail, int index, int remoteRail) {
    this.qp = qp;
    this.lane = lane;
    this.rail = rail;
    this.index = index;
    this.remoteRail = remoteRail;
    this.queue = new PostQueue<>(lane.aging, lane.agingPerEntry);
    lane.adopt(this);
  }

  void posted(int wrs) {
    debt += wrs;
    maxDebt = Math.max(maxDebt, debt);
  }
}
