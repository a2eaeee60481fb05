package io.orbite.transport.rdma;

import io.orbite.engine.spi.ChannelGate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The fixed QP array of one RDMA channel: for each local rail and each of its lanes, one QP
 * connected to the peer's rail of the same index modulo the peer's rail count, at slot {@code rail
 * * lanesPerRail + lane}; and the peer's rails, each where it is reached now (a REPAIRED names a
 * rail's new address). A repaired QP is installed in its slot only while the channel's gate is
 * active, under the same lock the channel's close reads the array under, so a fresh QP is either
 * closed with the channel or destroyed by its repair.
 */
final class ChannelQps {
  private final AtomicReferenceArray<RcQp> qps;
  private final AtomicReferenceArray<RdmaWire.Rail> remoteRails;
  private final ChannelGate gate;

  /** QPs per local rail (the rail's lanes). */
  final int lanesPerRail;

  /** Local rails. */
  final int railCount;

  ChannelQps(
      RcQp[] qps,
      List<RdmaWire.Rail> remoteRails,
      int lanesPerRail,
      int railCount,
      ChannelGate gate) {
    this.qps = new AtomicReferenceArray<>(qps);
    this.remoteRails = new AtomicReferenceArray<>(remoteRails.toArray(RdmaWire.Rail[]::new));
    this.lanesPerRail = lanesPerRail;
    this.railCount = railCount;
    this.gate = gate;
  }

  /** The first QP of local rail {@code rail} (its rail and pair stand for the rail's). */
  RcQp first(int rail) {
    return qps.get(rail * lanesPerRail);
  }

  /** The slot a slice of turn {@code turn} takes on local rail {@code rail}. */
  int slot(int rail, int turn) {
    return rail * lanesPerRail + Math.floorMod(turn, lanesPerRail);
  }

  /** A QP of local rail {@code rail} that takes work, from turn {@code turn}'s on; or null. */
  RcQp live(int rail, int turn) {
    for (int j = 0; j < lanesPerRail; j++) {
      RcQp q = qps.get(rail * lanesPerRail + Math.floorMod(turn + j, lanesPerRail));
      if (!q.broken()) {
        return q;
      }
    }
    return null;
  }

  /** The QP at {@code slot} now. */
  RcQp at(int slot) {
    return qps.get(slot);
  }

  /** How many QPs the array holds. */
  int count() {
    return qps.length();
  }

  /** The array now, grouped by lane, read under the lock a repair installs a fresh QP under. */
  synchronized Map<CqLane, List<RcQp>> byLane() {
    Map<CqLane, List<RcQp>> byLane = new IdentityHashMap<>();
    for (int i = 0; i < qps.length(); i++) {
      RcQp qp = qps.get(i);
      byLane.computeIfAbsent(qp.lane, l -> new ArrayList<>()).add(qp);
    }
    return byLane;
  }

  /**
   * Installs a repaired QP at {@code slot} while the gate is active; false once it closed (the
   * caller destroys the fresh QP: the close may have read the array already).
   */
  synchronized boolean install(int slot, RcQp fresh) {
    if (!gate.active()) {
      return false;
    }
    qps.set(slot, fresh);
    return true;
  }

  /** The peer's rail {@code i}, where it is reached now. */
  RdmaWire.Rail remoteRail(int i) {
    return remoteRails.get(i);
  }

  /** A REPAIRED named rail {@code i}'s new address. */
  void remoteRail(int i, RdmaWire.Rail now) {
    remoteRails.set(i, now);
  }

  /**
   * The rails the peer published (Describe's RAILS: device, port, link rate, NUMA node), each at
   * the address its last REPAIRED named.
   */
  List<RdmaWire.Rail> remoteRails() {
    List<RdmaWire.Rail> now = new ArrayList<>(remoteRails.length());
    for (int i = 0; i < remoteRails.length(); i++) {
      now.add(remoteRails.get(i));
    }
    return now;
  }

  /** The QPs not destroyed or kept yet, named for a quarantine's reason. */
  List<String> unsettled() {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < qps.length(); i++) {
      RcQp qp = qps.get(i);
      if (!qp.life.state().terminal()) {
        names.add("QP " + qp.qp.qpNum() + " on " + qp.rail.device);
      }
    }
    return names;
  }

  /** The highest send-queue debt any QP reached (read after it closed). */
  int maxDebt() {
    int m = 0;
    for (int i = 0; i < qps.length(); i++) {
      m = Math.max(m, qps.get(i).maxDebt);
    }
    return m;
  }

  /** Queued slices moved up a priority tier by aging (C14), over the QPs. */
  long promotions() {
    long n = 0;
    for (int i = 0; i < qps.length(); i++) {
      n += qps.get(i).queue.promotions();
    }
    return n;
  }

  /**
   * Closes every QP on its lane (to ERR, flushed, destroyed): after each lane's last, {@code
   * onLane} runs there with that lane's QPs; after every lane's, {@code done} runs with what could
   * not be destroyed (kept for good). A lane that stopped (a faulted lane reclaimed after every QP
   * on it was destroyed) owes nothing.
   */
  void closeAll(String reason, BiConsumer<CqLane, List<RcQp>> onLane, Consumer<List<String>> done) {
    Map<CqLane, List<RcQp>> byLane = byLane();
    AtomicInteger left = new AtomicInteger(byLane.size());
    List<String> kept = Collections.synchronizedList(new ArrayList<>());
    for (Map.Entry<CqLane, List<RcQp>> e : byLane.entrySet()) {
      CqLane lane = e.getKey();
      List<RcQp> mine = e.getValue();
      Runnable lastLane =
          () -> {
            if (left.decrementAndGet() == 0) {
              done.accept(List.copyOf(kept));
            }
          };
      Runnable closeOnLane =
          () ->
              lane.closer.close(
                  mine,
                  reason,
                  () -> {
                    onLane.accept(lane, mine);
                    for (RcQp qp : mine) {
                      if (!qp.destroyed()) {
                        kept.add("QP " + qp.qp.qpNum() + " on " + qp.rail.device);
                      }
                    }
                    lastLane.run();
                  });
      if (!lane.submit(closeOnLane)) {
        if (mine.stream().anyMatch(qp -> !qp.destroyed())) {
          kept.add(lane.name() + " had stopped");
        }
        lastLane.run();
      }
    }
  }
}
