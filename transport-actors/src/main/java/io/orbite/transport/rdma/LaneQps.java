package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.Verbs;
import java.util.Collection;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The QPs on one CQ lane's CQ that were not destroyed yet, and the CQ entries they reserve. Any
 * thread adds (the owners that make QPs) and the lane, or an owner destroying a never-used QP,
 * removes: the one record of a rail's undestroyed QPs. A faulted lane is natively drained once it
 * holds none, and only then may it be reclaimed; the monitor reads the same sets to find the QPs
 * made under a fenced route ({@link Rail#drained}, {@link Rail#retireOld}).
 *
 * <p>Each QP reserves every work request it could have outstanding at once on the CQ (a flush
 * completes each of them), so the CQ can never overrun: charged before the QP is made, returned
 * when it is destroyed; a QP whose destroy failed keeps its share.
 */
final class LaneQps {
  private final Set<RcQp> live = ConcurrentHashMap.newKeySet();

  /** Entries of this lane's CQ ({@code rdma.maxCqes}, at most the device's {@code max_cqe}). */
  final int cqCapacity;

  private final AtomicInteger cqReserved = new AtomicInteger();

  /** Each made QP's reservation, by its handle. */
  private final ConcurrentHashMap<Long, Integer> cqOf = new ConcurrentHashMap<>();

  LaneQps(int cqCapacity) {
    this.cqCapacity = cqCapacity;
  }

  /** Counts {@code qp} until it is destroyed. */
  void add(RcQp qp) {
    live.add(qp);
  }

  /** {@code qp} was destroyed: it leaves the set, and its CQ entries are free again. */
  void destroyed(RcQp qp) {
    live.remove(qp);
    releaseCqes(qp.qp);
  }

  /** The QPs not destroyed yet (a live view; any thread may read it). */
  Collection<RcQp> live() {
    return Collections.unmodifiableSet(live);
  }

  /** Whether every QP on the CQ was destroyed. */
  boolean none() {
    return live.isEmpty();
  }

  /** Reserves {@code n} CQ entries for a QP about to be made; false when the CQ lacks them. */
  boolean reserveCqes(int n) {
    while (true) {
      int now = cqReserved.get();
      if (n > cqCapacity - now) {
        return false;
      }
      if (cqReserved.compareAndSet(now, now + n)) {
        return true;
      }
    }
  }

  /** The QP made with an {@link #reserveCqes} of {@code n}: its share, until it is destroyed. */
  void recordCqes(Verbs.Qp qp, int n) {
    cqOf.put(qp.handle(), n);
  }

  /** Returns a reservation whose QP was never made. */
  void cancelCqes(int n) {
    cqReserved.addAndGet(-n);
  }

  /** {@code qp} was destroyed: its CQ entries are free again. */
  void releaseCqes(Verbs.Qp qp) {
    Integer n = cqOf.remove(qp.handle());
    if (n != null) {
      cqReserved.addAndGet(-n);
    }
  }

  /** CQ entries reserved now, for the owner view. */
  int reservedCqes() {
    return cqReserved.get();
  }
}
