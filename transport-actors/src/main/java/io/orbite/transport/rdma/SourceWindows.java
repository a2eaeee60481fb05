package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The source side of one CQ lane, on the lane's thread: each slice's window bound on its source QP
 * (a fresh type-2 memory window, exactly its range and direction) and each QP's completion
 * receives, re-posted as each completion SEND lands. What a window's bind or a landed completion
 * means for its grant is its session's ({@link SourceGrants}); this class posts and hears back.
 */
final class SourceWindows {
  private final CqLane lane;

  /**
   * Windows bound (or being bound) on this lane's source QPs and not yet released: each may see a
   * completion SEND land in a receive at any time, so the lane must keep looking at its CQ.
   */
  private final AtomicInteger open = new AtomicInteger();

  SourceWindows(CqLane lane) {
    this.lane = lane;
  }

  /** Windows open on this lane now (any thread). */
  int open() {
    return open.get();
  }

  /** A window counted open by {@link #bind} was released (any thread). */
  void released() {
    open.decrementAndGet();
  }

  /**
   * Binds a fresh window for {@code g} (on the lane thread) and answers the requester when the bind
   * completed. The grant holds its registration's loan from here on.
   */
  void bind(SourceGrants session, Grant g) {
    RcQp qp = g.qp;
    if (qp.broken()) {
      session.refuse(lane, g, ErrorKind.UNAVAILABLE, qp.brokenWhy());
      return;
    }
    if (qp.debt >= Math.max(2, lane.rail.maxSendWr) || !qp.bindBacklog.isEmpty()) {
      // The send queue is full: bound once an earlier bind came back, in order.
      qp.bindBacklog.add(() -> bindNow(session, g));
      return;
    }
    bindNow(session, g);
  }

  /** Binds {@code g}'s window now: its QP's send queue has room (or the QP broke: refused). */
  private void bindNow(SourceGrants session, Grant g) {
    RcQp qp = g.qp;
    if (qp.broken()) {
      session.refuse(lane, g, ErrorKind.UNAVAILABLE, qp.brokenWhy());
      return;
    }
    Rail rail = lane.rail;
    VerbsResult<Verbs.Mr> mr = rail.mrs.mrFor(g.registration);
    if (!mr.ok()) {
      session.refuse(lane, g, ErrorKind.UNAVAILABLE, mr.describe());
      return;
    }
    VerbsResult<Verbs.Mw> mw = lane.verbs.allocMw(rail.pd, Ibv.MW_TYPE_2);
    if (!mw.ok()) {
      session.refuse(lane, g, ErrorKind.RESOURCE_EXHAUSTED, mw.describe());
      return;
    }
    g.mw = mw.value();
    g.rkey = Ibv.incRkey(g.mw.rkey());
    int access = g.op == Op.READ ? Ibv.ACCESS_REMOTE_READ : Ibv.ACCESS_REMOTE_WRITE;
    long addr = g.registration.segment().address() + g.offset;
    long id =
        lane.track(
            new OnQp(qp) {
              @Override
              public void completed(CqLane l, Verbs.Wc wc) {
                qp.debt--;
                if (wc.status() == Ibv.WC_SUCCESS) {
                  g.bound = true;
                  session.bound(l, g, addr);
                } else {
                  session.refuse(l, g, ErrorKind.UNAVAILABLE, "bind status " + wc.status());
                  session.qpFailed(qp, "a window bind failed: status " + wc.status());
                }
                bindWaiting(qp);
              }

              @Override
              public void abandoned(CqLane l, String why) {
                session.refuse(l, g, ErrorKind.UNAVAILABLE, why);
                bindWaiting(qp);
              }
            });
    Verbs.PostResult posted =
        lane.verbs.postSend(
            qp.qp,
            List.of(
                Verbs.SendWr.bindMw(
                    id,
                    Ibv.SEND_SIGNALED,
                    new Verbs.MwBind(g.mw, g.rkey, mr.value(), addr, g.length, access))));
    if (!posted.posted()) {
      lane.take(id);
      session.refuse(
          lane, g, ErrorKind.RESOURCE_EXHAUSTED, "ibv_post_send: errno " + posted.errno());
      return;
    }
    qp.posted(1);
    // Open until it is released: its completion SEND may land in a receive at any time.
    g.countedOpen = true;
    open.incrementAndGet();
  }

  /**
   * Binds the windows waiting for room on {@code qp}'s send queue while it has room (a broken QP
   * refuses each of them).
   */
  private void bindWaiting(RcQp qp) {
    Runnable next;
    while ((qp.broken() || qp.debt < Math.max(2, lane.rail.maxSendWr))
        && (next = qp.bindBacklog.poll()) != null) {
      next.run();
    }
  }

  /** Posts receive {@code slot} of {@code qp}'s completion slab (on the lane thread). */
  boolean postReceive(
      SourceGrants session, RcQp qp, MemorySegment slab, Verbs.Mr slabMr, int slot) {
    long id =
        lane.track(
            new OnQp(qp) {
              @Override
              public void completed(CqLane l, Verbs.Wc wc) {
                if (wc.status() == Ibv.WC_SUCCESS) {
                  int n = wc.byteLen() / 8;
                  if (n < 1 || n > RdmaWire.MAX_COMPLETION_IDS || wc.byteLen() % 8 != 0) {
                    session.qpFailed(
                        qp, "a completion SEND of " + wc.byteLen() + " B names no whole slice id");
                    return;
                  }
                  long base = slot * (long) RdmaWire.COMPLETION_RECEIVE_BYTES;
                  long[] grantIds = new long[n];
                  for (int i = 0; i < n; i++) {
                    grantIds[i] = slab.get(ValueLayout.JAVA_LONG, base + i * 8L);
                  }
                  // The slot's receive is posted again first, so that the ACKs the session answers
                  // also say the QP is ready for the next completion SEND.
                  if (!qp.broken()) {
                    postReceive(session, qp, slab, slabMr, slot);
                  }
                  for (long grantId : grantIds) {
                    session.completionArrived(l, qp, grantId);
                  }
                } else if (wc.status() != Ibv.WC_WR_FLUSH_ERR) {
                  session.qpFailed(qp, "a receive failed: status " + wc.status());
                }
              }

              @Override
              public void abandoned(CqLane l, String why) {}

              @Override
              public boolean receive() {
                return true;
              }
            });
    Verbs.PostResult r =
        lane.verbs.postRecv(
            qp.qp,
            List.of(
                new Verbs.RecvWr(
                    id,
                    List.of(
                        new Verbs.Sge(
                            slab.address() + slot * (long) RdmaWire.COMPLETION_RECEIVE_BYTES,
                            RdmaWire.COMPLETION_RECEIVE_BYTES,
                            slabMr.lkey())))));
    if (!r.posted()) {
      lane.take(id);
      return false;
    }
    return true;
  }

  /** A completion of a WR posted on {@code qp}. */
  private abstract static class OnQp implements CqLane.Completion {
    private final RcQp qp;

    OnQp(RcQp qp) {
      this.qp = qp;
    }

    @Override
    public RcQp qp() {
      return qp;
    }
  }
}
