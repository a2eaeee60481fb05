package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.lane.LaneRuntime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Remakes the failed QPs of one RDMA channel's array, one repair per slot at a time, each on a
 * blocking thread of its own ({@code orbite-rdma-repair-<slot>}, made by {@link
 * LaneRuntime#startBlocking}): a slice admitted to a slot whose QP failed waits here ({@link
 * #await}) and is queued on the fresh QP, or fails unsent when the repair fails.
 */
final class QpRepairer {
  private static final long REPAIR_TIMEOUT_MILLIS = 10_000;

  private final RdmaChannel channel;
  private final ConcurrentHashMap<Integer, Repair> repairs = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Integer, CompletableFuture<RdmaWire.Repaired>> replies =
      new ConcurrentHashMap<>();

  /** One slot's repair and the slices waiting for it. */
  private static final class Repair {
    final int slot;
    final List<Slice> waiting = new ArrayList<>();
    boolean done;

    Repair(int slot) {
      this.slot = slot;
    }
  }

  QpRepairer(RdmaChannel channel) {
    this.channel = channel;
  }

  /** A slice waiting for slot {@code slot}'s QP to be made again. */
  void await(int slot, Slice s) {
    s.awaitsRepair = true;
    while (true) {
      Repair fresh = new Repair(slot);
      Repair rp = repairs.putIfAbsent(slot, fresh);
      if (rp == null) {
        rp = fresh;
        Repair started = rp;
        LaneRuntime.startBlocking("orbite-rdma-repair-" + slot, () -> repair(started));
      }
      synchronized (rp) {
        if (!rp.done) {
          rp.waiting.add(s);
          return;
        }
      }
      // That repair has just finished: the slot may be live again, or need another.
      RcQp now = channel.qps().at(slot);
      if (!now.broken()) {
        s.qp = now;
        s.awaitsRepair = false;
        channel.queueOnLane(s);
        return;
      }
    }
  }

  /** The source answered a REPAIR (the control reader). */
  void answered(RdmaWire.Repaired r) {
    CompletableFuture<RdmaWire.Repaired> waiting = replies.get(r.qp());
    if (waiting != null) {
      waiting.complete(r);
    }
  }

  /**
   * Makes slot {@code rp.slot}'s QP again: waits until the failed one settled (destroyed on its
   * lane), makes a fresh QP on the same rail and lane, asks the source for its fresh end (REPAIR),
   * connects, and queues the waiting slices on it. A failure fails them unsent, counted against
   * their rail pair.
   */
  private void repair(Repair rp) {
    RcQp old = channel.qps().at(rp.slot);
    Rail rail = old.rail;
    Verbs.Qp made = null;
    String failure;
    try {
      old.life.settled().get(REPAIR_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
      if (!old.destroyed()) {
        throw new IllegalStateException("the failed QP could not be destroyed");
      }
      if (rail.fenced()) {
        throw new IllegalStateException(
            rail.device
                + " is paused (route generation "
                + rail.generation()
                + "): its monitor has not validated a route yet");
      }
      // The lane at the old one's index: a faulted lane is replaced there once drained.
      CqLane lane = rail.lanes.get(old.lane.index);
      Rail.Route route = rail.route();
      VerbsResult<Verbs.Qp> q = rail.connector.createQp(lane, false);
      if (!q.ok()) {
        throw new IllegalStateException(q.describe());
      }
      made = q.value();
      CompletableFuture<RdmaWire.Repaired> reply = new CompletableFuture<>();
      replies.put(rp.slot, reply);
      int qpn = made.qpNum();
      RdmaWire.Address here = rail.address(route);
      ControlLink link = channel.link();
      if (!link.write(out -> RdmaWire.writeRepair(out, rp.slot, qpn, here))) {
        throw new IllegalStateException("the control link closed");
      }
      link.flush();
      RdmaWire.Repaired answer = reply.get(REPAIR_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
      if (answer.status() != 0) {
        throw new IllegalStateException("the source refused: " + answer.detail());
      }
      RdmaWire.Rail there = answer.at().applyTo(channel.qps().remoteRail(old.remoteRail));
      channel.qps().remoteRail(old.remoteRail, there);
      // Connected under the route it was made for: refused (EAGAIN) once the monitor fenced it.
      int rc = rail.connector.connect(made, route, there, answer.qpn());
      if (rc != 0) {
        throw new IllegalStateException("ibv_modify_qp: errno " + rc);
      }
      RcQp fresh = new RcQp(made, lane, rail, rp.slot, old.remoteRail, route);
      fresh.connected(answer.qpn());
      made = null; // counted on its lane now: destroyed through it
      fresh.owner = channel;
      if (!channel.qps().install(rp.slot, fresh)) {
        lane.closer.destroyUnused(fresh);
        throw new IllegalStateException("the endpoint closed: " + channel.gate().refusal());
      }
      channel.counters().qpsRepaired.increment();
      for (Slice s : finish(rp)) {
        s.qp = fresh;
        s.awaitsRepair = false;
        channel.queueOnLane(s);
      }
      return;
    } catch (TimeoutException e) {
      failure = "no answer within " + REPAIR_TIMEOUT_MILLIS + " ms";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = "interrupted";
    } catch (ExecutionException e) {
      failure = String.valueOf(e.getCause());
    } catch (RuntimeException e) {
      failure = e.getMessage();
    } finally {
      replies.remove(rp.slot);
    }
    if (made != null && rail.verbs.destroyQp(made) == 0) {
      // Never adopted by a lane, never posted on.
      rail.lanes.get(old.lane.index).qps.releaseCqes(made);
    }
    for (Slice s : finish(rp)) {
      channel.failUnqueued(
          s,
          "RDMA QP "
              + rp.slot
              + " to "
              + channel.peer()
              + " on "
              + rail.device
              + " could not be repaired: "
              + failure
              + " (never sent)",
          true);
    }
  }

  /** Ends {@code rp}: later slices start another; the ones that waited are returned. */
  private List<Slice> finish(Repair rp) {
    List<Slice> waiting;
    synchronized (rp) {
      rp.done = true;
      waiting = List.copyOf(rp.waiting);
    }
    repairs.remove(rp.slot, rp);
    return waiting;
  }
}
