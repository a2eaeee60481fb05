package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** A peer that is a second {@link SoftVerbs} (its own fabric and device) in this JVM. */
final class InJvmPeer implements ActivePeer {
  private final Arena arena = Arena.ofShared();
  private final SoftVerbs verbs;
  private final Verbs.Context context;
  private final Verbs.Pd pd;
  private final Verbs.Cq sendCq;
  private final Verbs.Cq recvCq;
  private final Map<Integer, Verbs.Qp> qps = new HashMap<>();
  private final List<Verbs.Mr> mrs = new ArrayList<>();
  private final Map<Integer, MemorySegment> segments = new HashMap<>();
  private final List<Verbs.Mw> mws = new ArrayList<>();
  private final List<Verbs.Wc> unclaimed = new ArrayList<>();
  private long nextWrId = 1L << 40;

  InJvmPeer(String ipv4) {
    verbs = SoftVerbs.create(SoftFabric.onAddress(ipv4, 1));
    context = verbs.openDevice(verbs.getDeviceList().value().get(0)).value();
    pd = verbs.allocPd(context).value();
    sendCq = verbs.createCq(context, 1024, null, 0).value();
    recvCq = verbs.createCq(context, 1024, null, 0).value();
  }

  @Override
  public Verbs.Gid gid() {
    return verbs.queryGid(context, 1, 0).value();
  }

  @Override
  public int createQp() {
    Verbs.Qp qp =
        verbs.createQp(pd, new Verbs.QpInitAttr(sendCq, recvCq, 256, 256, 4, 4, 64, false)).value();
    SoftLocalEnd.toInit(verbs, qp);
    qps.put(qp.qpNum(), qp);
    return qp.qpNum();
  }

  @Override
  public void connect(int qpn, Verbs.Gid remoteGid, int remoteQpn) {
    SoftLocalEnd.toRts(verbs, qps.get(qpn), remoteGid, remoteQpn, 7);
  }

  @Override
  public Buffer register(int length, int access, byte fill) {
    MemorySegment s = arena.allocate(length, 64);
    s.fill(fill);
    Verbs.Mr mr = verbs.regMr(pd, s, access).value();
    mrs.add(mr);
    segments.put(mrs.size() - 1, s);
    return new Buffer(mrs.size() - 1, mr.addr(), mr.rkey(), length);
  }

  @Override
  public void write(Buffer buffer, int offset, byte[] bytes) {
    MemorySegment.copy(
        bytes, 0, segments.get(buffer.id()), ValueLayout.JAVA_BYTE, offset, bytes.length);
  }

  @Override
  public byte[] read(Buffer buffer) {
    return segments.get(buffer.id()).toArray(ValueLayout.JAVA_BYTE);
  }

  @Override
  public void deregister(Buffer buffer) {
    assertEquals(0, verbs.deregMr(mrs.get(buffer.id())));
  }

  @Override
  public void postRecv(int qpn, long wrId, Buffer buffer, int offset, int length) {
    Verbs.Mr mr = mrs.get(buffer.id());
    Verbs.PostResult r =
        verbs.postRecv(
            qps.get(qpn),
            List.of(
                new Verbs.RecvWr(
                    wrId, List.of(new Verbs.Sge(mr.addr() + offset, length, mr.lkey())))));
    assertTrue(r.posted(), () -> "peer postRecv: " + r);
  }

  @Override
  public int bindMw(int qpn, Buffer buffer, int offset, int length, int access) {
    Verbs.Mw mw = verbs.allocMw(pd, Ibv.MW_TYPE_2).value();
    mws.add(mw);
    Verbs.Mr mr = mrs.get(buffer.id());
    int rkey = Ibv.incRkey(mw.rkey());
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qps.get(qpn),
            List.of(
                Verbs.SendWr.bindMw(
                    wrId,
                    Ibv.SEND_SIGNALED,
                    new Verbs.MwBind(mw, rkey, mr, mr.addr() + offset, length, access))));
    assertTrue(r.posted(), () -> "peer bind: " + r);
    Verbs.Wc wc = SoftLocalEnd.await(verbs, sendCq, 1).get(0);
    assertEquals(wrId, wc.wrId());
    assertEquals(Ibv.WC_SUCCESS, wc.status(), "peer bind status");
    return rkey;
  }

  @Override
  public int localInvalidate(int qpn, int rkey) {
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qps.get(qpn),
            List.of(
                new Verbs.SendWr(
                    wrId, Ibv.WR_LOCAL_INV, Ibv.SEND_SIGNALED, List.of(), 0, 0, rkey, null)));
    assertTrue(r.posted(), () -> "peer local invalidate: " + r);
    Verbs.Wc wc = SoftLocalEnd.await(verbs, sendCq, 1).get(0);
    assertEquals(wrId, wc.wrId());
    return wc.status();
  }

  @Override
  public List<Verbs.Wc> recvCompletions(int qpn, int n) {
    long deadline = System.nanoTime() + SoftLocalEnd.WAIT_NANOS;
    List<Verbs.Wc> got = new ArrayList<>();
    Verbs.Wc[] out = new Verbs.Wc[16];
    while (true) {
      Iterator<Verbs.Wc> it = unclaimed.iterator();
      while (it.hasNext() && got.size() < n) {
        Verbs.Wc wc = it.next();
        if (wc.qpNum() == qpn) {
          got.add(wc);
          it.remove();
        }
      }
      if (got.size() == n) {
        return got;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("peer: " + got.size() + " of " + n + " receive completions");
      }
      int k = verbs.pollCq(recvCq, out);
      assertTrue(k >= 0, "peer pollCq " + k);
      for (int i = 0; i < k; i++) {
        unclaimed.add(out[i]);
      }
      if (k == 0) {
        SoftLocalEnd.pause();
      }
    }
  }

  @Override
  public Verbs.Wc post(
      int qpn,
      int opcode,
      Buffer local,
      int offset,
      int length,
      long remoteAddr,
      int rkey,
      int imm) {
    Verbs.Mr mr = mrs.get(local.id());
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qps.get(qpn),
            List.of(
                new Verbs.SendWr(
                    wrId,
                    opcode,
                    Ibv.SEND_SIGNALED,
                    List.of(new Verbs.Sge(mr.addr() + offset, length, mr.lkey())),
                    remoteAddr,
                    rkey,
                    imm,
                    null)));
    assertTrue(r.posted(), () -> "peer post: " + r);
    // Long enough for the retry timeout (4.096 us x 2^17 x 8 tries, 4.3 s) of a lost link.
    Verbs.Wc wc = SoftLocalEnd.await(verbs, sendCq, 1, 3 * SoftLocalEnd.WAIT_NANOS).get(0);
    assertEquals(wrId, wc.wrId());
    return wc;
  }

  @Override
  public int qpState(int qpn) {
    return verbs.queryQp(qps.get(qpn), Ibv.QP_STATE).value().qpState();
  }

  @Override
  public void destroyQp(int qpn) {
    assertEquals(0, verbs.destroyQp(qps.remove(qpn)));
  }

  @Override
  public void close() {
    for (Verbs.Qp qp : qps.values()) {
      assertEquals(0, verbs.destroyQp(qp));
    }
    for (Verbs.Mw mw : mws) {
      assertEquals(0, verbs.deallocMw(mw));
    }
    for (Verbs.Mr mr : mrs) {
      int rc = verbs.deregMr(mr);
      assertTrue(rc == 0 || rc == Errno.EINVAL.number(), "peer deregMr " + rc);
    }
    assertEquals(0, verbs.destroyCq(sendCq));
    assertEquals(0, verbs.destroyCq(recvCq));
    assertEquals(0, verbs.deallocPd(pd));
    assertEquals(0, verbs.closeDevice(context));
    arena.close();
  }
}
