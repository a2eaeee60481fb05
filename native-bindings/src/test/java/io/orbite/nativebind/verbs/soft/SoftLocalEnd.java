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
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The local end of a conformance test: a {@link SoftVerbs} with a fault table, one open device, one
 * PD, and everything the test made on them, released in order at {@link #close}.
 */
final class SoftLocalEnd implements AutoCloseable {
  static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  final SoftFaults faults = SoftFaults.create();
  final SoftVerbs verbs;
  final Verbs.Context context;
  final Verbs.Pd pd;
  final String deviceName;
  private final Arena arena = Arena.ofShared();
  private final List<Verbs.Qp> qps = new ArrayList<>();
  private final List<Verbs.Mw> mws = new ArrayList<>();
  private final List<Verbs.Mr> mrs = new ArrayList<>();
  private final List<Verbs.Cq> cqs = new ArrayList<>();
  private final List<Verbs.CompChannel> channels = new ArrayList<>();
  private final List<Verbs.Pd> pds = new ArrayList<>();
  private final Map<Long, MemorySegment> segments = new HashMap<>();

  SoftLocalEnd(String ipv4) {
    verbs = SoftVerbs.create(SoftFabric.onAddress(ipv4, 1), faults);
    Verbs.Device device = verbs.getDeviceList().value().get(0);
    deviceName = device.name();
    context = verbs.openDevice(device).value();
    pd = verbs.allocPd(context).value();
  }

  Verbs.Gid gid() {
    return verbs.queryGid(context, 1, 0).value();
  }

  Verbs.Cq cq(int cqe) {
    return cq(cqe, null);
  }

  Verbs.Cq cq(int cqe, Verbs.CompChannel channel) {
    Verbs.Cq cq = verbs.createCq(context, cqe, channel, 0).value();
    cqs.add(cq);
    return cq;
  }

  Verbs.CompChannel channel() {
    Verbs.CompChannel ch = verbs.createCompChannel(context).value();
    channels.add(ch);
    return ch;
  }

  Verbs.Pd newPd() {
    Verbs.Pd p = verbs.allocPd(context).value();
    pds.add(p);
    return p;
  }

  /** A QP in INIT. */
  Verbs.Qp qp(Verbs.QpInitAttr attr) {
    Verbs.Qp qp = verbs.createQp(pd, attr).value();
    qps.add(qp);
    toInit(verbs, qp);
    return qp;
  }

  /** A QP left in RESET. */
  Verbs.Qp rawQp(Verbs.QpInitAttr attr) {
    Verbs.Qp qp = verbs.createQp(pd, attr).value();
    qps.add(qp);
    return qp;
  }

  static Verbs.QpInitAttr caps(Verbs.Cq cq, int maxSendWr, boolean sigAll) {
    return new Verbs.QpInitAttr(cq, cq, maxSendWr, 256, 4, 4, 64, sigAll);
  }

  /** A buffer of {@code length} bytes filled with {@code fill}, registered with {@code access}. */
  Verbs.Mr buffer(int length, int access, byte fill) {
    return buffer(pd, length, access, fill);
  }

  Verbs.Mr buffer(Verbs.Pd on, int length, int access, byte fill) {
    MemorySegment s = arena.allocate(length, 64);
    s.fill(fill);
    Verbs.Mr mr = verbs.regMr(on, s, access).value();
    mrs.add(mr);
    segments.put(mr.handle(), s);
    return mr;
  }

  Verbs.Mw mw() {
    Verbs.Mw mw = verbs.allocMw(pd, Ibv.MW_TYPE_2).value();
    mws.add(mw);
    return mw;
  }

  MemorySegment segment(Verbs.Mr mr) {
    return segments.get(mr.handle());
  }

  byte[] bytes(Verbs.Mr mr) {
    return segment(mr).toArray(ValueLayout.JAVA_BYTE);
  }

  void put(Verbs.Mr mr, int offset, byte[] data) {
    MemorySegment.copy(data, 0, segment(mr), ValueLayout.JAVA_BYTE, offset, data.length);
  }

  static Verbs.Sge sge(Verbs.Mr mr, int offset, int length) {
    return new Verbs.Sge(mr.addr() + offset, length, mr.lkey());
  }

  static void toInit(Verbs verbs, Verbs.Qp qp) {
    int access = Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;
    assertEquals(
        0,
        verbs.modifyQp(
            qp,
            new Verbs.QpAttr(Ibv.QPS_INIT, 0, access, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, null),
            Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS));
  }

  static Verbs.QpAttr rtrAttr(Verbs.Gid gid, int remoteQpn) {
    Verbs.AddressVector av = new Verbs.AddressVector(0, 0, 1, gid, 0, 64);
    return new Verbs.QpAttr(
        Ibv.QPS_RTR, Ibv.MTU_4096, 0, 0, 1, remoteQpn, 0, 0, 0, 16, 1, 0, 0, 0, av);
  }

  static final int RTR_MASK =
      Ibv.QP_STATE
          | Ibv.QP_AV
          | Ibv.QP_PATH_MTU
          | Ibv.QP_DEST_QPN
          | Ibv.QP_RQ_PSN
          | Ibv.QP_MAX_DEST_RD_ATOMIC
          | Ibv.QP_MIN_RNR_TIMER;

  static final int RTS_MASK =
      Ibv.QP_STATE
          | Ibv.QP_TIMEOUT
          | Ibv.QP_RETRY_CNT
          | Ibv.QP_RNR_RETRY
          | Ibv.QP_SQ_PSN
          | Ibv.QP_MAX_QP_RD_ATOMIC;

  static Verbs.QpAttr rtsAttr(int rnrRetry) {
    return new Verbs.QpAttr(Ibv.QPS_RTS, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 17, 7, rnrRetry, null);
  }

  /** INIT to RTS, connected to {@code remoteQpn} at {@code gid}. */
  static void toRts(Verbs verbs, Verbs.Qp qp, Verbs.Gid gid, int remoteQpn, int rnrRetry) {
    assertEquals(0, verbs.modifyQp(qp, rtrAttr(gid, remoteQpn), RTR_MASK));
    assertEquals(0, verbs.modifyQp(qp, rtsAttr(rnrRetry), RTS_MASK));
  }

  int state(Verbs.Qp qp) {
    return verbs.queryQp(qp, Ibv.QP_STATE).value().qpState();
  }

  void post(Verbs.Qp qp, Verbs.SendWr... wrs) {
    Verbs.PostResult r = verbs.postSend(qp, List.of(wrs));
    assertTrue(r.posted(), () -> "postSend: " + r);
  }

  static Verbs.SendWr write(long wrId, int flags, Verbs.Sge sge, long remoteAddr, int rkey) {
    return Verbs.SendWr.rdma(wrId, Ibv.WR_RDMA_WRITE, flags, List.of(sge), remoteAddr, rkey);
  }

  static Verbs.SendWr read(long wrId, int flags, Verbs.Sge sge, long remoteAddr, int rkey) {
    return Verbs.SendWr.rdma(wrId, Ibv.WR_RDMA_READ, flags, List.of(sge), remoteAddr, rkey);
  }

  List<Verbs.Wc> await(Verbs.Cq cq, int n) {
    return await(verbs, cq, n);
  }

  /** Polls until {@code n} completions arrived (5 s at most), then checks no more are there. */
  static List<Verbs.Wc> await(Verbs verbs, Verbs.Cq cq, int n) {
    return await(verbs, cq, n, WAIT_NANOS);
  }

  /** As {@link #await(Verbs, Verbs.Cq, int)}, waiting {@code nanos} at most. */
  static List<Verbs.Wc> await(Verbs verbs, Verbs.Cq cq, int n, long nanos) {
    long deadline = System.nanoTime() + nanos;
    List<Verbs.Wc> got = new ArrayList<>();
    Verbs.Wc[] out = new Verbs.Wc[Math.max(n, 1)];
    while (got.size() < n) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("only " + got.size() + " of " + n + " completions: " + got);
      }
      Verbs.Wc[] room = new Verbs.Wc[n - got.size()];
      int k = verbs.pollCq(cq, room);
      assertTrue(k >= 0, () -> "pollCq " + k);
      for (int i = 0; i < k; i++) {
        got.add(room[i]);
      }
      if (k == 0) {
        pause();
      }
    }
    assertEquals(0, verbs.pollCq(cq, out), "no completion beyond the expected ones");
    return got;
  }

  static void pause() {
    LockSupport.parkNanos(100_000);
  }

  @Override
  public void close() {
    faults.clearDestroyFaults();
    for (Verbs.Qp qp : qps) {
      ok(verbs.destroyQp(qp), "destroyQp");
    }
    for (Verbs.Mw mw : mws) {
      ok(verbs.deallocMw(mw), "deallocMw");
    }
    for (Verbs.Mr mr : mrs) {
      ok(verbs.deregMr(mr), "deregMr");
    }
    for (Verbs.Cq cq : cqs) {
      verbs.ackCqEvents(cq, Integer.MAX_VALUE);
      ok(verbs.destroyCq(cq), "destroyCq");
    }
    for (Verbs.CompChannel ch : channels) {
      ok(verbs.destroyCompChannel(ch), "destroyCompChannel");
    }
    for (Verbs.Pd p : pds) {
      ok(verbs.deallocPd(p), "deallocPd");
    }
    ok(verbs.deallocPd(pd), "deallocPd");
    ok(verbs.closeDevice(context), "closeDevice");
    arena.close();
  }

  /** 0, or EINVAL for what the test destroyed itself. */
  private static void ok(int rc, String call) {
    assertTrue(rc == 0 || rc == Errno.EINVAL.number(), () -> call + " answered " + rc);
  }
}
