package io.orbite.nativebind.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
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
 * One end of an RC conformance test over any {@link Verbs} table: an open context on one device,
 * the port and GID index it speaks from, one PD, and everything the test made there, released in
 * order at {@link #close}. This class is the generic end ({@link NativeVerbs} on a real device, or
 * any provider as it is); the soft suite's local end specialises it with a fault table.
 *
 * <p>Connecting follows the port's link layer, as on hardware: on an InfiniBand port the address
 * vector names the peer's LID, with a GRH only when the peer's GID is non-zero and in another
 * subnet; on an Ethernet (RoCE, or soft) port it names the peer's GID from this end's GID index
 * with a hop limit of 64. The path MTU is the smaller of both ports' active MTUs; PSNs start at 0;
 * the ACK timeout is {@link #DEFAULT_ACK_TIMEOUT} (a 0.54 s retry budget, 7 retries) unless the
 * constructor names another; the RNR retry count is the test's.
 *
 * <p>Registered memory is page-aligned native memory of a shared arena, so that a real HCA may
 * register it and any thread may touch it. What a test destroys through this class is forgotten
 * here, so {@link #close} never destroys a handle twice (the native library's behaviour there is
 * undefined); the completion events this class fetched and did not acknowledge are acknowledged
 * before their CQ is destroyed (libibverbs waits for that).
 */
public class VerbsEnd implements AutoCloseable {
  /** How long any wait of the suite lasts at most. */
  public static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  /** The alignment of registered memory. */
  public static final long PAGE = 4096;

  /** The ACK timeout exponent of a generic end: 4.096 us x 2^14 = 67 ms per try. */
  public static final int DEFAULT_ACK_TIMEOUT = 14;

  /** The transport retry count. */
  public static final int RETRY_CNT = 7;

  /** The RNR NAK timer a responder asks for: 1 is 0.01 ms in the IB table. */
  public static final int MIN_RNR_TIMER = 1;

  /** The RDMA READ depth asked for, at most the device's {@code maxQpRdAtom}. */
  public static final int RD_ATOMIC = 16;

  /** The hop limit of a GRH. */
  public static final int HOP_LIMIT = 64;

  /** The QP access flags set in INIT: local write, remote write, remote read. */
  public static final int QP_ACCESS =
      Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;

  public static final int RTR_MASK = Ibv.RC_RTR_MASK;

  public static final int RTS_MASK = Ibv.RC_RTS_MASK;

  public final Verbs verbs;
  public final Verbs.Context context;
  public final Verbs.Pd pd;
  public final String deviceName;
  public final int port;
  public final int gidIndex;
  private final int ackTimeout;
  private final Verbs.DeviceAttr deviceAttr;
  private final Verbs.PortAttr portAttr;
  private final Arena arena = Arena.ofShared();
  private final List<Verbs.Qp> qps = new ArrayList<>();
  private final List<Verbs.Mw> mws = new ArrayList<>();
  private final List<Verbs.Mr> mrs = new ArrayList<>();
  private final List<Verbs.Cq> cqs = new ArrayList<>();
  private final List<Verbs.CompChannel> channels = new ArrayList<>();
  private final List<Verbs.Pd> pds = new ArrayList<>();
  private final Map<Long, MemorySegment> segments = new HashMap<>();
  private final Map<Long, Integer> unackedEvents = new HashMap<>();

  /** Opens {@code device} to speak from {@code port} and GID index {@code gidIndex}. */
  public VerbsEnd(Verbs verbs, Verbs.Device device, int port, int gidIndex) {
    this(verbs, device, port, gidIndex, DEFAULT_ACK_TIMEOUT);
  }

  /** As {@link #VerbsEnd(Verbs, Verbs.Device, int, int)}, with QPs using {@code ackTimeout}. */
  public VerbsEnd(Verbs verbs, Verbs.Device device, int port, int gidIndex, int ackTimeout) {
    this.verbs = verbs;
    this.port = port;
    this.gidIndex = gidIndex;
    this.ackTimeout = ackTimeout;
    this.deviceName = device.name();
    this.context = verbs.openDevice(device).value();
    try {
      deviceAttr = verbs.queryDevice(context).value();
      portAttr = verbs.queryPort(context, port).value();
      verbs.queryGid(context, port, gidIndex).value();
      pd = verbs.allocPd(context).value();
    } catch (RuntimeException | Error e) {
      verbs.closeDevice(context);
      arena.close();
      throw e;
    }
  }

  /** The GID this end speaks from. */
  public Verbs.Gid gid() {
    return verbs.queryGid(context, port, gidIndex).value();
  }

  /** The port's LID (0 on an Ethernet or soft port). */
  public int lid() {
    return portAttr.lid();
  }

  /** The port's active MTU ({@link Ibv#MTU_4096}...). */
  public int activeMtu() {
    return portAttr.activeMtu();
  }

  /** The port's link layer ({@link Ibv#LINK_LAYER_INFINIBAND} or ETHERNET). */
  public int linkLayer() {
    return portAttr.linkLayer();
  }

  /** What {@code queryDevice} answered at opening. */
  public Verbs.DeviceAttr deviceAttr() {
    return deviceAttr;
  }

  /** The ACK timeout exponent this end's QPs use. */
  public int ackTimeout() {
    return ackTimeout;
  }

  // ---------------------------------------------------------------- making things

  public Verbs.Cq cq(int cqe) {
    return cq(cqe, null);
  }

  public Verbs.Cq cq(int cqe, Verbs.CompChannel channel) {
    Verbs.Cq cq = verbs.createCq(context, cqe, channel, 0).value();
    cqs.add(cq);
    return cq;
  }

  public Verbs.CompChannel channel() {
    Verbs.CompChannel ch = verbs.createCompChannel(context).value();
    channels.add(ch);
    return ch;
  }

  public Verbs.Pd newPd() {
    Verbs.Pd p = verbs.allocPd(context).value();
    pds.add(p);
    return p;
  }

  /** A QP in INIT. */
  public Verbs.Qp qp(Verbs.QpInitAttr attr) {
    Verbs.Qp qp = rawQp(attr);
    toInit(qp);
    return qp;
  }

  /** A QP left in RESET. */
  public Verbs.Qp rawQp(Verbs.QpInitAttr attr) {
    return rawQp(pd, attr);
  }

  /** A QP on {@code on} left in RESET. */
  public Verbs.Qp rawQp(Verbs.Pd on, Verbs.QpInitAttr attr) {
    Verbs.Qp qp = verbs.createQp(on, attr).value();
    qps.add(qp);
    return qp;
  }

  /** One CQ for both queues, {@code maxSendWr} sends, 256 receives, 4 SGEs, 64 inline bytes. */
  public static Verbs.QpInitAttr caps(Verbs.Cq cq, int maxSendWr, boolean sigAll) {
    return new Verbs.QpInitAttr(cq, cq, maxSendWr, 256, 4, 4, 64, sigAll);
  }

  /** A buffer of {@code length} bytes filled with {@code fill}, registered with {@code access}. */
  public Verbs.Mr buffer(int length, int access, byte fill) {
    return buffer(pd, length, access, fill);
  }

  public Verbs.Mr buffer(Verbs.Pd on, int length, int access, byte fill) {
    MemorySegment s = arena.allocate(length, PAGE);
    s.fill(fill);
    Verbs.Mr mr = verbs.regMr(on, s, access).value();
    mrs.add(mr);
    segments.put(mr.handle(), s);
    return mr;
  }

  /** A type-2 memory window on the PD. */
  public Verbs.Mw mw() {
    Verbs.Mw mw = verbs.allocMw(pd, Ibv.MW_TYPE_2).value();
    mws.add(mw);
    return mw;
  }

  public MemorySegment segment(Verbs.Mr mr) {
    return segments.get(mr.handle());
  }

  public byte[] bytes(Verbs.Mr mr) {
    return segment(mr).toArray(ValueLayout.JAVA_BYTE);
  }

  public void put(Verbs.Mr mr, int offset, byte[] data) {
    MemorySegment.copy(data, 0, segment(mr), ValueLayout.JAVA_BYTE, offset, data.length);
  }

  public static Verbs.Sge sge(Verbs.Mr mr, int offset, int length) {
    return new Verbs.Sge(mr.addr() + offset, length, mr.lkey());
  }

  // ---------------------------------------------------------------- destroying what a test made

  /** Destroys {@code qp}; once it is gone {@link #close} leaves it alone. */
  public int destroyQp(Verbs.Qp qp) {
    return forget(verbs.destroyQp(qp), qps, qp);
  }

  public int deregMr(Verbs.Mr mr) {
    return forget(verbs.deregMr(mr), mrs, mr);
  }

  public int deallocMw(Verbs.Mw mw) {
    return forget(verbs.deallocMw(mw), mws, mw);
  }

  public int destroyCq(Verbs.Cq cq) {
    int rc = forget(verbs.destroyCq(cq), cqs, cq);
    if (rc == 0) {
      unackedEvents.remove(cq.handle());
    }
    return rc;
  }

  public int destroyCompChannel(Verbs.CompChannel ch) {
    return forget(verbs.destroyCompChannel(ch), channels, ch);
  }

  public int deallocPd(Verbs.Pd p) {
    return forget(verbs.deallocPd(p), pds, p);
  }

  private static <T> int forget(int rc, List<T> made, T thing) {
    if (rc == 0) {
      made.remove(thing);
    }
    return rc;
  }

  // ---------------------------------------------------------------- completion events

  /** The CQ whose event is on {@code ch} now, counted as unacknowledged; EAGAIN when none is. */
  public VerbsResult<Verbs.Cq> cqEvent(Verbs.CompChannel ch) {
    VerbsResult<Verbs.Cq> e = verbs.getCqEvent(ch);
    if (e.ok()) {
      unackedEvents.merge(e.value().handle(), 1, Integer::sum);
    }
    return e;
  }

  /** Waits (5 s at most) for an event on {@code ch}: the CQ it names. */
  public Verbs.Cq awaitCqEvent(Verbs.CompChannel ch) {
    long deadline = System.nanoTime() + WAIT_NANOS;
    while (true) {
      VerbsResult<Verbs.Cq> e = cqEvent(ch);
      if (e.ok()) {
        return e.value();
      }
      assertEquals(Errno.EAGAIN.number(), e.errno(), e::describe);
      assertTrue(System.nanoTime() < deadline, "no completion event in 5 s");
      pause();
    }
  }

  /** Acknowledges {@code n} of the events {@link #cqEvent} fetched for {@code cq}. */
  public void ackCqEvents(Verbs.Cq cq, int n) {
    verbs.ackCqEvents(cq, n);
    unackedEvents.merge(cq.handle(), -n, Integer::sum);
  }

  /** How many events of {@code cq} to acknowledge before destroying it at {@link #close}. */
  protected int unackedEvents(Verbs.Cq cq) {
    return unackedEvents.getOrDefault(cq.handle(), 0);
  }

  // ---------------------------------------------------------------- connecting

  public void toInit(Verbs.Qp qp) {
    assertEquals(
        0,
        verbs.modifyQp(
            qp,
            new Verbs.QpAttr(Ibv.QPS_INIT, 0, QP_ACCESS, 0, port, 0, 0, 0, 0, 0, 0, 0, 0, 0, null),
            Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS));
  }

  /**
   * The address vector to a peer port: by LID on InfiniBand (a GRH only when the peer's GID is
   * non-zero and its subnet prefix is not this port's), by GID on Ethernet.
   */
  public Verbs.AddressVector addressVector(Verbs.Gid remoteGid, int remoteLid) {
    if (linkLayer() == Ibv.LINK_LAYER_INFINIBAND) {
      boolean grh = !remoteGid.equals(Verbs.Gid.ZERO) && remoteGid.hi() != gid().hi();
      return new Verbs.AddressVector(
          remoteLid, 0, port, grh ? remoteGid : Verbs.Gid.ZERO, grh ? gidIndex : 0, HOP_LIMIT);
    }
    return new Verbs.AddressVector(0, 0, port, remoteGid, gidIndex, HOP_LIMIT);
  }

  private int rdAtomic() {
    return Math.max(1, Math.min(RD_ATOMIC, deviceAttr.maxQpRdAtom()));
  }

  /** INIT to RTR toward QP {@code remoteQpn} of the peer port named by its GID, LID and MTU. */
  public Verbs.QpAttr rtrAttrTo(Verbs.Gid remoteGid, int remoteLid, int remoteMtu, int remoteQpn) {
    return new Verbs.QpAttr(
        Ibv.QPS_RTR,
        Math.min(activeMtu(), remoteMtu),
        0,
        0,
        port,
        remoteQpn,
        0,
        0,
        0,
        rdAtomic(),
        MIN_RNR_TIMER,
        0,
        0,
        0,
        addressVector(remoteGid, remoteLid));
  }

  /** RTR to RTS with this end's ACK timeout, {@link #RETRY_CNT} and {@code rnrRetry}. */
  public Verbs.QpAttr rtsAttrWith(int rnrRetry) {
    return new Verbs.QpAttr(
        Ibv.QPS_RTS, 0, 0, 0, 0, 0, 0, 0, rdAtomic(), 0, 0, ackTimeout, RETRY_CNT, rnrRetry, null);
  }

  /** INIT to RTS, connected to QP {@code remoteQpn} of the peer port. */
  public void connect(
      Verbs.Qp qp, Verbs.Gid remoteGid, int remoteLid, int remoteMtu, int remoteQpn, int rnrRetry) {
    int rtr = verbs.modifyQp(qp, rtrAttrTo(remoteGid, remoteLid, remoteMtu, remoteQpn), RTR_MASK);
    assertEquals(0, rtr, () -> "modify to RTR: " + Errno.describe(rtr));
    int rts = verbs.modifyQp(qp, rtsAttrWith(rnrRetry), RTS_MASK);
    assertEquals(0, rts, () -> "modify to RTS: " + Errno.describe(rts));
  }

  // ---------------------------------------------------------------- posting and polling

  public int state(Verbs.Qp qp) {
    return verbs.queryQp(qp, Ibv.QP_STATE).value().qpState();
  }

  public void post(Verbs.Qp qp, Verbs.SendWr... wrs) {
    Verbs.PostResult r = verbs.postSend(qp, List.of(wrs));
    assertTrue(r.posted(), () -> "postSend: " + r);
  }

  public static Verbs.SendWr write(long wrId, int flags, Verbs.Sge sge, long remoteAddr, int rkey) {
    return Verbs.SendWr.rdma(wrId, Ibv.WR_RDMA_WRITE, flags, List.of(sge), remoteAddr, rkey);
  }

  public static Verbs.SendWr read(long wrId, int flags, Verbs.Sge sge, long remoteAddr, int rkey) {
    return Verbs.SendWr.rdma(wrId, Ibv.WR_RDMA_READ, flags, List.of(sge), remoteAddr, rkey);
  }

  public List<Verbs.Wc> await(Verbs.Cq cq, int n) {
    return await(verbs, cq, n);
  }

  /** Polls until {@code n} completions arrived (5 s at most), then checks no more are there. */
  public static List<Verbs.Wc> await(Verbs verbs, Verbs.Cq cq, int n) {
    return await(verbs, cq, n, WAIT_NANOS);
  }

  /** As {@link #await(Verbs, Verbs.Cq, int)}, waiting {@code nanos} at most. */
  public static List<Verbs.Wc> await(Verbs verbs, Verbs.Cq cq, int n, long nanos) {
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

  /** A 0.1 ms pause between two polls. */
  public static void pause() {
    LockSupport.parkNanos(100_000);
  }

  // ---------------------------------------------------------------- closing

  /** Whether {@code rc} is an acceptable answer of a destroy at {@link #close}: 0 here. */
  protected boolean closedOk(int rc) {
    return rc == 0;
  }

  @Override
  public void close() {
    try {
      for (Verbs.Qp qp : qps) {
        closed(verbs.destroyQp(qp), "destroyQp");
      }
      for (Verbs.Mw mw : mws) {
        closed(verbs.deallocMw(mw), "deallocMw");
      }
      for (Verbs.Mr mr : mrs) {
        closed(verbs.deregMr(mr), "deregMr");
      }
      for (Verbs.Cq cq : cqs) {
        int unacked = unackedEvents(cq);
        if (unacked > 0) {
          verbs.ackCqEvents(cq, unacked);
        }
        closed(verbs.destroyCq(cq), "destroyCq");
      }
      for (Verbs.CompChannel ch : channels) {
        closed(verbs.destroyCompChannel(ch), "destroyCompChannel");
      }
      for (Verbs.Pd p : pds) {
        closed(verbs.deallocPd(p), "deallocPd");
      }
      closed(verbs.deallocPd(pd), "deallocPd");
      closed(verbs.closeDevice(context), "closeDevice");
    } finally {
      arena.close();
    }
  }

  private void closed(int rc, String call) {
    assertTrue(closedOk(rc), () -> call + " answered " + Errno.describe(rc));
  }
}
