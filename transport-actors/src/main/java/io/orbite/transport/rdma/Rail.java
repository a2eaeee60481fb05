package io.orbite.transport.rdma;

import io.orbite.engine.spi.RegistryView;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.util.ArrayList;
import java.util.List;

/**
 * One rail: an open device context on port 1, its PD, its persistent MRs and its CQ lanes. Made and
 * closed by its {@link RdmaContext} owner (on the blocking-I/O executor, never in a mailbox); lanes
 * use it from their threads. Connects RC QPs the way the conformance suite proved on the software
 * provider and on hardware: by GID from GID index 0 on an Ethernet (RoCE or soft) port, by LID on
 * an InfiniBand one; path MTU the smaller of both ports'; PSNs from 0; ACK timeout 14 (67 ms a
 * try), 7 retries, RNR retry 7 (unlimited).
 */
final class Rail {
  static final int PORT = 1;
  static final int GID_INDEX = 0;
  private static final int ACK_TIMEOUT = 14;
  private static final int RETRY_CNT = 7;
  private static final int RNR_RETRY = 7;
  private static final int RD_ATOMIC = 16;
  private static final int MIN_RECEIVES_PER_QP = 32;

  final Verbs verbs;
  final int index;
  final String device;
  final Verbs.Context context;
  final Verbs.Pd pd;
  final Verbs.Gid gid;
  final Verbs.PortAttr port;
  final Verbs.DeviceAttr attr;
  final MrCache mrs;

  /**
   * The lanes by index. A faulted lane is replaced in place once natively drained ({@link
   * #freshLane}); other threads read it at any time.
   */
  final List<CqLane> lanes = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** Lanes of this rail whose CQ failed, replaced or not. */
  final java.util.concurrent.atomic.LongAdder lanesFaulted =
      new java.util.concurrent.atomic.LongAdder();

  private final int maxSendWr;
  private int cqes;
  private java.time.Duration aging;
  private boolean agingPerEntry;

  /** The NUMA node the device is attached to (the provider's {@code numaNode}), -1 unknown. */
  final int numaNode;

  /** Requester bytes confirmed over this rail: the engine's lane counter {@code rdma/<device>}. */
  final java.util.concurrent.atomic.LongAdder bytes;

  /** The engine's fault hooks (NONE in production), called by lanes before payload posts. */
  io.orbite.engine.FaultHooks hooks = io.orbite.engine.FaultHooks.NONE;

  private Rail(
      Verbs verbs,
      int index,
      String device,
      Verbs.Context context,
      Verbs.Pd pd,
      Verbs.Gid gid,
      Verbs.PortAttr port,
      Verbs.DeviceAttr attr,
      RegistryView registry,
      int maxSendWr,
      int numaNode,
      io.orbite.engine.EngineCounters counters) {
    this.verbs = verbs;
    this.numaNode = numaNode;
    this.bytes = counters.lane("rdma/" + device);
    this.index = index;
    this.device = device;
    this.context = context;
    this.pd = pd;
    this.gid = gid;
    this.port = port;
    this.attr = attr;
    this.mrs = new MrCache(verbs, pd, registry);
    this.maxSendWr = maxSendWr;
  }

  /**
   * Opens {@code device} as rail {@code index} with {@code rdma.lanes} CQ lanes of {@code
   * rdma.maxCqes} entries (their threads not started), QPs of {@code rdma.maxSendWr} send WRs and
   * post queues aging as {@code rdma.priorityAging*} says.
   *
   * @throws IllegalStateException naming the device and the call that failed; what was made is
   *     released first
   */
  static Rail open(
      Verbs verbs,
      Verbs.Device device,
      int index,
      io.orbite.config.RdmaConfig config,
      RegistryView registry,
      io.orbite.engine.EngineCounters counters) {
    int lanes = config.lanes();
    int cqes = config.maxCqes();
    int maxSendWr = config.maxSendWr();
    java.time.Duration aging = java.time.Duration.ofMillis(config.priorityAgingMillis());
    Verbs.Context ctx = require(verbs.openDevice(device), device);
    Verbs.Pd pd = null;
    Rail rail = null;
    try {
      Verbs.DeviceAttr attr = require(verbs.queryDevice(ctx), device);
      Verbs.PortAttr port = require(verbs.queryPort(ctx, PORT), device);
      Verbs.Gid gid = require(verbs.queryGid(ctx, PORT, GID_INDEX), device);
      pd = require(verbs.allocPd(ctx), device);
      rail =
          new Rail(
              verbs,
              index,
              device.name(),
              ctx,
              pd,
              gid,
              port,
              attr,
              registry,
              maxSendWr,
              verbs.numaNode(device),
              counters);
      rail.cqes = Math.min(cqes, attr.maxCqe());
      rail.aging = aging;
      rail.agingPerEntry = config.priorityAgingPerEntry();
      for (int i = 0; i < lanes; i++) {
        Verbs.Cq cq = require(verbs.createCq(ctx, rail.cqes, null, 0), device);
        rail.lanes.add(new CqLane(rail, i, cq, maxSendWr, aging, rail.agingPerEntry));
      }
      return rail;
    } catch (RuntimeException e) {
      if (rail != null) {
        rail.lanes.forEach(CqLane::release);
      }
      if (pd != null) {
        verbs.deallocPd(pd);
      }
      verbs.closeDevice(ctx);
      throw e;
    }
  }

  private static <T> T require(VerbsResult<T> r, Verbs.Device device) {
    if (!r.ok()) {
      throw new IllegalStateException("RDMA device " + device.name() + ": " + r.describe());
    }
    return r.value();
  }

  /**
   * A fresh lane for index {@code index} (its thread not started), with a CQ of its own, to replace
   * a faulted one that was natively drained and released.
   *
   * @return the lane, or the failure of {@code ibv_create_cq} (or of its id slot's MR)
   */
  VerbsResult<CqLane> freshLane(int index) {
    VerbsResult<Verbs.Cq> cq = verbs.createCq(context, cqes, null, 0);
    if (!cq.ok()) {
      return VerbsResult.failed(cq.errno(), "ibv_create_cq on " + device + ": " + cq.describe());
    }
    try {
      return VerbsResult.ok(new CqLane(this, index, cq.value(), maxSendWr, aging, agingPerEntry));
    } catch (RuntimeException e) {
      verbs.destroyCq(cq.value());
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EINVAL.number(), "a fresh lane on " + device + ": " + e);
    }
  }

  /** What the control handshake (RAILS) publishes about this rail. */
  RdmaWire.Rail published() {
    return new RdmaWire.Rail(
        gid.hi(), gid.lo(), port.lid(), port.activeMtu(), PORT, linkMbps(), numaNode, device);
  }

  /** The link rate selection seeds its estimates with, in Mb/s: 400 Gb/s when unknown. */
  long linkMbps() {
    double g = gbps();
    return Math.round((g > 0 ? g : RailSelector.DEFAULT_GBPS) * 1000);
  }

  /** Whether the port is ACTIVE now (the monitor asks). */
  boolean portActive() {
    VerbsResult<Verbs.PortAttr> p = verbs.queryPort(context, PORT);
    return p.ok() && p.value().state() == Ibv.PORT_ACTIVE;
  }

  /** Link rate in Gb/s from the port's width and speed, for selection; 0 when unknown. */
  double gbps() {
    double perLane =
        switch (port.activeSpeed()) {
          case 1 -> 2.5;
          case 2 -> 5.0;
          case 4, 8 -> 10.0;
          case 16 -> 14.0;
          case 32 -> 25.0;
          case 64 -> 50.0;
          case 128 -> 100.0;
          default -> 0;
        };
    int width =
        switch (port.activeWidth()) {
          case 1 -> 1;
          case 2 -> 4;
          case 4 -> 8;
          case 8 -> 12;
          case 16 -> 2;
          default -> 0;
        };
    return perLane * width;
  }

  /**
   * Completion receives a source posts on each QP: at least 32, and at least {@code
   * rdma.maxSendWr}, so a requester with this engine's settings never has more completion SENDs in
   * flight on a QP than it has receives (a requester allowed more waits out RNR, retried without
   * limit).
   */
  int receivesPerQp() {
    return Math.max(MIN_RECEIVES_PER_QP, maxSendWr);
  }

  /**
   * An RC QP in INIT on {@code lane}'s CQ, every WR signalled; its send queue holds at least 2 WRs
   * (one slice posts two).
   */
  VerbsResult<Verbs.Qp> createQp(CqLane lane) {
    if (lane.faulted() != null) {
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EIO.number(),
          lane.name + " is faulted (" + lane.faulted() + "): no QP is made on it");
    }
    VerbsResult<Verbs.Qp> qp =
        verbs.createQp(
            pd,
            new Verbs.QpInitAttr(
                lane.cq, lane.cq, Math.max(2, maxSendWr), receivesPerQp(), 1, 1, 16, true));
    if (!qp.ok()) {
      return qp;
    }
    int rc =
        verbs.modifyQp(
            qp.value(),
            new Verbs.QpAttr(
                Ibv.QPS_INIT,
                0,
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_WRITE,
                0,
                PORT,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                null),
            Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS);
    if (rc != 0) {
      verbs.destroyQp(qp.value());
      return VerbsResult.failed(rc, "ibv_modify_qp to INIT on " + device);
    }
    return qp;
  }

  /**
   * Moves {@code qp} from INIT to RTS, connected to QP {@code remoteQpn} of {@code remote}.
   *
   * @return 0, or the errno of the modify that failed
   */
  int connect(Verbs.Qp qp, RdmaWire.Rail remote, int remoteQpn) {
    Verbs.Gid rgid = new Verbs.Gid(remote.gidHi(), remote.gidLo());
    Verbs.AddressVector av =
        port.linkLayer() == Ibv.LINK_LAYER_INFINIBAND
            ? new Verbs.AddressVector(remote.lid(), 0, PORT, Verbs.Gid.ZERO, 0, 64)
            : new Verbs.AddressVector(0, 0, PORT, rgid, GID_INDEX, 64);
    int rc =
        verbs.modifyQp(
            qp,
            new Verbs.QpAttr(
                Ibv.QPS_RTR,
                Math.min(port.activeMtu(), remote.mtu()),
                0,
                0,
                PORT,
                remoteQpn,
                0,
                0,
                0,
                Math.min(RD_ATOMIC, attr.maxQpRdAtom()),
                1,
                0,
                0,
                0,
                av),
            Ibv.QP_STATE
                | Ibv.QP_AV
                | Ibv.QP_PATH_MTU
                | Ibv.QP_DEST_QPN
                | Ibv.QP_RQ_PSN
                | Ibv.QP_MAX_DEST_RD_ATOMIC
                | Ibv.QP_MIN_RNR_TIMER);
    if (rc != 0) {
      return rc;
    }
    return verbs.modifyQp(
        qp,
        new Verbs.QpAttr(
            Ibv.QPS_RTS,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            Math.min(RD_ATOMIC, attr.maxQpRdAtom()),
            0,
            0,
            ACK_TIMEOUT,
            RETRY_CNT,
            RNR_RETRY,
            null),
        Ibv.QP_STATE
            | Ibv.QP_TIMEOUT
            | Ibv.QP_RETRY_CNT
            | Ibv.QP_RNR_RETRY
            | Ibv.QP_SQ_PSN
            | Ibv.QP_MAX_QP_RD_ATOMIC);
  }

  /**
   * Closes the rail after its lanes' threads ended: the persistent MRs, the lanes' own MRs and CQs,
   * then the PD and the context. A failed step keeps what depends on it (nothing is retried): an MR
   * that cannot be deregistered keeps a loan on its registration, so that memory is never freed
   * under the device.
   *
   * @return what could not be released, or empty
   */
  List<String> close() {
    List<String> failed = new ArrayList<>();
    int mrFailures = mrs.closeAll();
    if (mrFailures > 0) {
      failed.add(
          device
              + ": "
              + mrFailures
              + " MR(s) could not be deregistered; their registrations stay loaned");
    }
    for (CqLane lane : lanes) {
      failed.addAll(lane.release());
    }
    if (!failed.isEmpty()) {
      return failed;
    }
    int rc = verbs.deallocPd(pd);
    if (rc != 0) {
      failed.add(device + ": ibv_dealloc_pd errno " + rc);
      return failed;
    }
    rc = verbs.closeDevice(context);
    if (rc != 0) {
      failed.add(device + ": ibv_close_device errno " + rc);
    }
    return failed;
  }
}
