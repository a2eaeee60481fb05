package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Closes the QPs of one CQ lane, on the lane's thread: nothing more is posted on them, they move to
 * ERR so the provider flushes their work requests, and each is destroyed once all of them came back
 * (or after 5 s: a completion that never comes); their unanswered WRs are then abandoned. A QP's
 * destroy is claimed once ({@link QpLifecycle#claimDestroy}), by this lane or by its owner for a QP
 * never posted on ({@link #destroyUnused}); a destroy that fails keeps the QP for good, with its
 * WRs pending (spec 001: never retried).
 */
final class QpCloser {
  private static final long CLOSE_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final CqLane lane;
  private final Map<RcQp, Long> closing = new IdentityHashMap<>();
  private final List<Waiter> afterClose = new ArrayList<>();

  /** The QPs whose destroy failed: kept, never destroyed twice (lane thread). */
  final List<RcQp> undestroyed = new ArrayList<>();

  /** What runs once every QP of one {@link #close} call was destroyed or kept. */
  private record Waiter(List<RcQp> qps, Runnable then) {}

  QpCloser(CqLane lane) {
    this.lane = lane;
  }

  /** Whether a QP is closing on the lane. */
  boolean busy() {
    return !closing.isEmpty();
  }

  /**
   * Closes {@code qps} (on the lane thread); {@code then} runs on the lane after the last one was
   * destroyed (or its destroy failed and it was kept). Slices still queued on them fail, never
   * sent.
   */
  void close(List<RcQp> qps, String reason, Runnable then) {
    long deadline = System.nanoTime() + CLOSE_DEADLINE_NANOS;
    for (RcQp qp : qps) {
      qp.life.stop(reason, ErrorKind.UNAVAILABLE);
      if (qp.life.destroyClaimed() || closing.containsKey(qp)) {
        continue; // destroyed (or kept after a failed destroy) already, or on its way: never twice
      }
      lane.verbs.modifyQp(qp.qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE);
      closing.put(qp, deadline);
      lane.requester.dropQueued(qp, reason);
    }
    afterClose.add(new Waiter(List.copyOf(qps), then));
    finishClosing();
    runFinishedWaiters();
  }

  /**
   * Destroys {@code qp}, on which nothing was ever posted (its owner could not connect it), from
   * the owner's thread; a failed destroy keeps it counted on its lane (never retried). A QP whose
   * lane claimed its destroy first (the lane faulted, or the monitor had it retired) is left to the
   * lane.
   *
   * @return 0, or the errno of the destroy
   */
  int destroyUnused(RcQp qp) {
    if (!qp.life.claimDestroy()) {
      return 0; // its lane is closing it (it faulted, or the monitor retired it): not twice
    }
    int rc = lane.verbs.destroyQp(qp.qp);
    qp.life.destroyEnded(rc == 0);
    if (rc == 0) {
      lane.qps.destroyed(qp);
    }
    return rc;
  }

  /** Destroys the closing QPs whose WRs all came back (or whose deadline passed). */
  int finishClosing() {
    int done = 0;
    long now = System.nanoTime();
    var it = closing.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      RcQp qp = e.getKey();
      if (qp.debt > 0 && now - e.getValue() < 0 && lane.faulted() == null) {
        continue;
      }
      it.remove();
      done++;
      if (!qp.life.claimDestroy()) {
        continue; // its owner destroyed it unused meanwhile (it never carried work)
      }
      int rc = lane.verbs.destroyQp(qp.qp);
      qp.life.destroyEnded(rc == 0);
      if (rc != 0) {
        // The QP lives on, and may still touch its WRs' memory: they stay pending, with no
        // receipt, so their tasks go UNQUIESCED (loans and charges kept) unless a completion
        // still comes.
        undestroyed.add(qp);
        continue;
      }
      lane.qps.destroyed(qp);
      abandonAll(qp);
    }
    if (done > 0) {
      runFinishedWaiters();
    }
    return done;
  }

  /** The pending WRs of {@code qp}, just destroyed: abandoned, in post order. */
  private void abandonAll(RcQp qp) {
    for (long id : lane.pendingOf(qp)) {
      lane.take(id).abandoned(lane, "its QP was destroyed before this work request completed");
    }
  }

  private void runFinishedWaiters() {
    List<Waiter> ready = new ArrayList<>();
    var waiters = afterClose.iterator();
    while (waiters.hasNext()) {
      Waiter w = waiters.next();
      if (w.qps().stream().noneMatch(closing::containsKey)) {
        waiters.remove();
        ready.add(w);
      }
    }
    // Run after the scan: a waiter may close more QPs on this lane.
    for (Waiter w : ready) {
      w.then().run();
    }
  }
}
