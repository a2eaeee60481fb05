package io.orbite.transport.rdma;

import io.orbite.engine.priority.PostQueue;
import io.orbite.nativebind.verbs.Verbs;

/**
 * One connected RC QP of an endpoint (requester side) or of a source session, and what its lane
 * knows about it. Its state is its {@link QpLifecycle} ({@link #life}, any thread); its
 * work-request accounting is confined to the lane thread that polls its CQ.
 */
final class RcQp {
  final Verbs.Qp qp;
  final CqLane lane;
  final Rail rail;

  /** Its index in its endpoint's (or session's) QP array: the number the control protocol uses. */
  final int index;

  /** The peer's rail this QP is connected to. */
  final int remoteRail;

  /** The rail's route when this QP was made: the one it connects over. */
  final Rail.Route route;

  /** {@link #route}'s generation: a QP older than the rail's generation is retired (monitor). */
  final long generation;

  /**
   * The owner of a QP: an endpoint's channel (requester) or a source session. It is asked to retire
   * the QP when the QP erred, when its lane faulted ({@link CqLane}) and when the monitor fenced
   * the route it was made under ({@link Rail#retireOld}).
   */
  interface QpOwner {
    /** Retires {@code qp} alone (call on its lane); idempotent. */
    void qpFailed(RcQp qp, String why);
  }

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

  /**
   * Requester slices whose payload was posted in this lane pass and whose completion SEND is still
   * to be posted: the lane posts one SEND for all of them at the end of its pass (or once {@link
   * RdmaWire#MAX_COMPLETION_IDS} are waiting). Lane thread only.
   */
  final java.util.ArrayList<Slice> awaitingSend = new java.util.ArrayList<>();

  /**
   * Source window binds waiting for room on this QP's send queue (a requester may ask more grants
   * at once than the queue holds): posted, oldest first, as earlier binds complete. Lane thread
   * only.
   */
  final java.util.ArrayDeque<Runnable> bindBacklog = new java.util.ArrayDeque<>();

  /**
   * Its lifecycle: connecting, ready, broken, retiring, destroy claimed, destroyed or kept. The one
   * place its state is kept and moved (any thread reads it).
   */
  final QpLifecycle life = new QpLifecycle();

  /**
   * Who retires this QP when it fails, its lane faults or its route is fenced (the endpoint's
   * channel or the source session that made it); set once it has one. Null meanwhile: a faulted
   * lane then closes the QP itself, and the monitor asks again at its next scan.
   */
  volatile QpOwner owner;

  /** A QP made just now, under the rail's published route; counted on its lane at once. */
  RcQp(Verbs.Qp qp, CqLane lane, Rail rail, int index, int remoteRail) {
    this(qp, lane, rail, index, remoteRail, rail.route());
  }

  /**
   * A QP made under {@code route} (a repair names its address before it connects, then adopts the
   * QP once connected); counted on its lane from now on.
   */
  RcQp(Verbs.Qp qp, CqLane lane, Rail rail, int index, int remoteRail, Rail.Route route) {
    this.qp = qp;
    this.lane = lane;
    this.rail = rail;
    this.index = index;
    this.remoteRail = remoteRail;
    this.queue = new PostQueue<>(lane.aging, lane.agingPerEntry);
    this.route = route;
    this.generation = route.generation();
    lane.adopt(this);
  }

  /**
   * Connects this QP over {@link #route} and moves it to READY; 0 or the errno ({@code EAGAIN}: the
   * route is fenced).
   */
  int connect(RdmaWire.Rail remote, int remoteQpn) {
    int rc = rail.connector.connect(qp, route, remote, remoteQpn);
    if (rc == 0) {
      connected(remoteQpn);
    }
    return rc;
  }

  /** It was connected to the peer's QP {@code remoteQpn}: READY. */
  void connected(int remoteQpn) {
    this.remoteQpn = remoteQpn;
    life.connected();
  }

  /** The number of the peer's QP it was connected to (0 before it was): data, not its state. */
  volatile int remoteQpn;

  /** Whether nothing new may be posted on it (it stopped taking work: BROKEN or later). */
  boolean broken() {
    return life.stopped();
  }

  /** Why it stopped taking work; null while it takes work. */
  String brokenWhy() {
    return life.reason();
  }

  /** Whether it was destroyed (the native proof that none of its work can touch memory). */
  boolean destroyed() {
    return life.destroyed();
  }

  void posted(int wrs) {
    debt += wrs;
    maxDebt = Math.max(maxDebt, debt);
  }
}
