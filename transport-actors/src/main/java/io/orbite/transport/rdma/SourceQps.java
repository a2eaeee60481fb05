package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The QPs of one source session and their completion receives: one QP per requester QP, made and
 * connected on this engine's rail of the index it names (lanes in turn), each with a slab of {@code
 * max(32, rdma.maxSendWr / 4)} posted receives; a QP retired alone (it erred, or the monitor fenced
 * its route) or replaced at the requester's REPAIR; all of them closed with the session, after
 * which the slabs are deregistered. The session's reader thread makes and repairs them; their lanes
 * close them.
 */
final class SourceQps {
  private final SourceSession session;
  private final SourceGrants grants;
  private final List<Rail> rails;
  private final RdmaCounters counters;
  private final Arena arena = Arena.ofShared();
  private MemorySegment[] slabs = new MemorySegment[0];
  private Verbs.Mr[] slabMrs = new Verbs.Mr[0];

  /** The requester's rails, each where it is reached now (a REPAIR names a rail's new address). */
  private List<RdmaWire.Rail> theirs = List.of();

  private volatile RcQp[] qps = new RcQp[0];

  SourceQps(SourceSession session, SourceGrants grants, List<Rail> rails, RdmaCounters counters) {
    this.session = session;
    this.grants = grants;
    this.rails = rails;
    this.counters = counters;
  }

  /** How many QPs the session has. */
  int count() {
    return qps.length;
  }

  /** The QP at {@code index}. */
  RcQp at(int index) {
    return qps[index];
  }

  /**
   * Makes and connects one QP per end the requester named ({@code theirs}: its rails), writing each
   * one's number into {@code qpns}; then registers the receive slabs and posts the receives.
   *
   * @return why the QPs could not be made (what was made is destroyed), or null
   */
  String make(List<RdmaWire.Rail> requesterRails, List<RdmaWire.QpEnd> ends, int[] qpns) {
    theirs = new ArrayList<>(requesterRails);
    List<RcQp> made = new ArrayList<>();
    String failure = null;
    for (RdmaWire.QpEnd end : ends) {
      if (end.remoteRail() >= rails.size() || end.localRail() >= theirs.size()) {
        failure = "a QP names rail " + end.remoteRail() + " here or " + end.localRail() + " there";
        break;
      }
      Rail rail = rails.get(end.remoteRail());
      CqLane lane = laneFor(rail, made.size());
      VerbsResult<Verbs.Qp> qp = rail.connector.createQp(lane, true);
      if (!qp.ok()) {
        failure = qp.describe();
        break;
      }
      RcQp rc = new RcQp(qp.value(), lane, rail, made.size(), end.localRail());
      rc.owner = session;
      made.add(rc);
      int err = rc.connect(theirs.get(end.localRail()), end.qpn());
      if (err != 0 && rail.fenced()) {
        // This rail is paused: the QP stays unconnected and its monitor retires it; the
        // requester's QP fails when used and is repaired once the rail recovered.
        rc.life.stop(
            rail.device + " is paused (route generation " + rail.generation() + ")",
            ErrorKind.UNAVAILABLE);
      } else if (err != 0) {
        failure = "ibv_modify_qp on " + rail.device + ": errno " + err;
        break;
      }
      qpns[rc.index] = qp.value().qpNum();
    }
    if (failure != null) {
      for (RcQp qp : made) {
        qp.lane.closer.destroyUnused(qp);
      }
      return failure;
    }
    RcQp[] all = made.toArray(RcQp[]::new);
    slabs = new MemorySegment[all.length];
    slabMrs = new Verbs.Mr[all.length];
    qps = all;
    for (RcQp qp : all) {
      MemorySegment slab =
          arena.allocate(
              qp.rail.connector.receivesPerQp() * (long) RdmaWire.COMPLETION_RECEIVE_BYTES, 64);
      VerbsResult<Verbs.Mr> mr = qp.rail.verbs.regMr(qp.rail.pd, slab, Ibv.ACCESS_LOCAL_WRITE);
      if (!mr.ok()) {
        return "receive slab: " + mr.describe();
      }
      slabs[qp.index] = slab;
      slabMrs[qp.index] = mr.value();
      if (!qp.broken()) {
        postReceives(qp);
      }
    }
    return null;
  }

  /** Lanes in turn ({@code n}-th QP), skipping a faulted lane while another one is not. */
  private static CqLane laneFor(Rail rail, int n) {
    List<CqLane> lanes = rail.lanes;
    for (int k = 0; k < lanes.size(); k++) {
      CqLane lane = lanes.get((n + k) % lanes.size());
      if (lane.faulted() == null) {
        return lane;
      }
    }
    return lanes.get(n % lanes.size()); // every lane faulted: createQp names why
  }

  /** Posts {@code qp}'s completion receives, on its lane (the only thread that posts on it). */
  private void postReceives(RcQp qp) {
    MemorySegment slab = slabs[qp.index];
    Verbs.Mr mr = slabMrs[qp.index];
    qp.lane.submit(
        () -> {
          for (int slot = 0; slot < qp.rail.connector.receivesPerQp(); slot++) {
            if (!qp.lane.windows.postReceive(grants, qp, slab, mr, slot)) {
              session.qpFailed(qp, "ibv_post_recv refused a completion receive");
              return;
            }
          }
        });
  }

  /**
   * Replaces QP {@code r.qp()} (on the reader thread, so no grant request for it is read
   * meanwhile): the old one is retired on its lane (to ERR, flushed, destroyed, its windows
   * released), a fresh one is made on the same rail and lane, connected to the requester's new QP,
   * given its receives, and named in the answer.
   *
   * @return the REPAIRED to write
   */
  RdmaWire.Repaired repair(RdmaWire.Repair r) {
    RcQp old = qps[r.qp()];
    String failure;
    try {
      retire(old, "the requester replaces it").get(10, TimeUnit.SECONDS);
      if (!old.destroyed()) {
        failure = "its QP " + old.qp.qpNum() + " could not be destroyed";
      } else if (old.rail.fenced()) {
        failure =
            old.rail.device + " is paused here (route generation " + old.rail.generation() + ")";
      } else {
        // The lane at the old one's index: a faulted lane is replaced there once drained.
        CqLane lane = old.rail.lanes.get(old.lane.index);
        Rail.Route route = old.rail.route();
        VerbsResult<Verbs.Qp> made = old.rail.connector.createQp(lane, true);
        if (!made.ok()) {
          failure = made.describe();
        } else {
          RdmaWire.Rail there = r.at().applyTo(theirs.get(old.remoteRail));
          theirs.set(old.remoteRail, there);
          // Connected under the route it was made for: refused (EAGAIN) once the monitor fenced it.
          int rc = old.rail.connector.connect(made.value(), route, there, r.qpn());
          if (rc != 0) {
            if (old.rail.verbs.destroyQp(made.value()) == 0) {
              lane.qps.releaseCqes(made.value()); // never adopted by a lane, never posted on
            }
            failure = "ibv_modify_qp on " + old.rail.device + ": errno " + rc;
          } else {
            RcQp fresh = new RcQp(made.value(), lane, old.rail, old.index, old.remoteRail, route);
            fresh.connected(r.qpn());
            fresh.owner = session;
            RcQp[] now = qps.clone();
            now[old.index] = fresh;
            qps = now;
            postReceives(fresh);
            counters.qpsRepaired.increment();
            return new RdmaWire.Repaired(
                r.qp(), 0, made.value().qpNum(), fresh.rail.address(fresh.route), "");
          }
        }
      }
    } catch (TimeoutException e) {
      failure = "its old QP was not destroyed within 10 s";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = "interrupted";
    } catch (ExecutionException e) {
      failure = String.valueOf(e.getCause());
    }
    return new RdmaWire.Repaired(r.qp(), ErrorKind.UNAVAILABLE.code(), 0, null, failure);
  }

  /**
   * Retires {@code qp} alone, on its lane: to ERR, flushed, destroyed; then its windows are
   * released (kept with their loans when the destroy failed). Idempotent.
   *
   * @return completes once the QP settled (destroyed or kept), or at once when its lane stopped
   */
  CompletableFuture<QpLifecycle.State> retire(RcQp qp, String why) {
    if (!qp.lane.submit(
        () -> {
          if (qp.life.retire(why, ErrorKind.UNAVAILABLE)) {
            qp.lane.closer.close(List.of(qp), why, () -> grants.releaseGrantsOf(qp));
          }
        })) {
      return CompletableFuture.completedFuture(qp.life.state());
    }
    return qp.life.settled();
  }

  /** Closes every QP on its lane; {@code then} runs once the last was destroyed or kept. */
  void closeAll(String reason, Runnable then) {
    Map<CqLane, List<RcQp>> byLane = new IdentityHashMap<>();
    for (RcQp qp : qps) {
      byLane.computeIfAbsent(qp.lane, l -> new ArrayList<>()).add(qp);
    }
    if (byLane.isEmpty()) {
      then.run();
      return;
    }
    AtomicInteger left = new AtomicInteger(byLane.size());
    for (Map.Entry<CqLane, List<RcQp>> e : byLane.entrySet()) {
      Runnable last =
          () -> {
            if (left.decrementAndGet() == 0) {
              then.run();
            }
          };
      CqLane lane = e.getKey();
      if (!lane.submit(() -> lane.closer.close(e.getValue(), reason, last))) {
        last.run();
      }
    }
  }

  /**
   * After {@link #closeAll}: the windows still held are released (or kept on a QP that could not be
   * destroyed), and the slabs deregistered where their QP was destroyed.
   *
   * @return whether everything was released (the slabs' memory then goes too)
   */
  boolean releaseAll() {
    boolean allReleased = true;
    for (RcQp qp : qps) {
      grants.releaseGrantsOf(qp);
      allReleased &= qp.destroyed();
    }
    for (int i = 0; i < slabMrs.length; i++) {
      Verbs.Mr mr = slabMrs[i];
      if (mr == null) {
        continue;
      }
      if (!qps[i].destroyed() || qps[i].rail.verbs.deregMr(mr) != 0) {
        allReleased = false;
      }
    }
    if (allReleased) {
      arena.close();
    }
    return allReleased;
  }
}
