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
 * provider and on hardware: by GID on an Ethernet (RoCE or soft) port, from the GID index of its
 * published {@link Route} ({@code rdma.gidIndex}: pinned, or chosen by {@link GidRanking}), by LID
 * on an InfiniBand one; path MTU the smaller of both ports'; PSNs from 0; ACK timeout 14 (67 ms a
 * try), 7 retries, RNR retry 7 (unlimited).
 *
 * <p>The route has a generation. The monitor ({@link RdmaContext}) fences the route by advancing
 * the generation past the published route's ({@link #fence}); while fenced no QP of the rail is
 * connected or repaired, and every QP made under an older route is retired by its owner. A route is
 * published again ({@link #publish}) only under the generation its validation started with.
 */
final class Rail {
  static final int PORT = 1;

  /** GID entries an automatic choice looks at, at most (the kernel's tables hold 128 or 256). */
  private static final int MAX_GID_ENTRIES = 256;

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

  /**
   * The link rate in Gb/s from the port's width and speed, 0 when unknown: read when the rail
   * opened and again at every monitor scan whose port query succeeded (a failed query keeps it).
   */
  private volatile double gbps;

  private final int maxSendWr;
  private int cqes;

  /** Whether its lanes' CQs have completion channels ({@code rdma.completionEvents}). */
  private boolean completionEvents;

  private java.time.Duration aging;
  private boolean agingPerEntry;

  /** The NUMA node the device is attached to (the provider's {@code numaNode}), -1 unknown. */
  final int numaNode;

  /** {@code rdma.gidIndex}: -1 automatic, else the only index this rail may use. */
  final int gidIndexConfig;

  /** The route QPs connect over: its generation, GID index and GID. */
  record Route(long generation, int gidIndex, Verbs.Gid gid) {}

  private volatile Route route;
  private final java.util.concurrent.atomic.AtomicLong generation =
      new java.util.concurrent.atomic.AtomicLong();

  /** Requester bytes confirmed over this rail: the engine's lane counter {@code rdma/<device>}. */
  final java.util.concurrent.atomic.LongAdder bytes;

  /** The engine's fault hooks (NONE in production), called by lanes before payload posts. */
  io.orbite.engine.fault.FaultHooks hooks = io.orbite.engine.fault.FaultHooks.NONE;

  private Rail(
      Verbs verbs,
      int index,
      String device,
      Verbs.Context context,
      Verbs.Pd pd,
      GidRanking.Choice gid,
      Verbs.PortAttr port,
      Verbs.DeviceAttr attr,
      RegistryView registry,
      int maxSendWr,
      int numaNode,
      int gidIndexConfig,
      io.orbite.engine.spi.EngineTally counters) {
    this.verbs = verbs;
    this.numaNode = numaNode;
    this.bytes = counters.lane("rdma/" + device);
    this.index = index;
    this.device = device;
    this.context = context;
    this.pd = pd;
    this.route = new Route(0, gid.index(), gid.gid());
    this.gidIndexConfig = gidIndexConfig;
    this.port = port;
    this.gbps = gbpsOf(port);
    this.attr = attr;
    this.mrs = new MrCache(verbs, pd, registry);
    this.maxSendWr = maxSendWr;
  }

  /**
   * Opens {@code device} as rail {@code index} with {@code rdma.lanes} CQ lanes of {@code
   * rdma.maxCqes} entries (their threads not started), QPs of {@code rdma.maxSendWr} send WRs and
   * post queues aging as {@code rdma.priorityAging*} says, speaking from the GID {@code
   * rdma.gidIndex} names (or the best one, automatically).
   *
   * @throws IllegalStateException naming the device and the call that failed, or the GID index that
   *     is not valid; what was made is released first
   */
  static Rail open(
      Verbs verbs,
      Verbs.Device device,
      int index,
      io.orbite.config.RdmaConfig config,
      RegistryView registry,
      io.orbite.engine.spi.EngineTally counters) {
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
      GidRanking.Choice gid =
          GidRanking.choose(
              gidTable(verbs, ctx, port, config.gidIndex()),
              gidTypes(verbs, device.name(), port),
              config.gidIndex());
      if (gid == null) {
        throw new IllegalStateException(
            "RDMA device "
                + device.name()
                + " port "
                + PORT
                + ": "
                + (config.gidIndex() < 0
                    ? "no valid GID among its " + port.gidTblLen() + " entries"
                    : "rdma.gidIndex " + config.gidIndex() + " is not a valid GID entry"));
      }
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
              config.gidIndex(),
              counters);
      rail.cqes = Math.min(cqes, attr.maxCqe());
      rail.aging = aging;
      rail.agingPerEntry = config.priorityAgingPerEntry();
      rail.completionEvents = config.completionEvents();
      for (int i = 0; i < lanes; i++) {
        Verbs.CompChannel ch =
            rail.completionEvents ? require(verbs.createCompChannel(ctx), device) : null;
        VerbsResult<Verbs.Cq> cq = verbs.createCq(ctx, rail.cqes, ch, 0);
        if (!cq.ok() && ch != null) {
          verbs.destroyCompChannel(ch);
        }
        rail.lanes.add(
            new CqLane(rail, i, require(cq, device), ch, maxSendWr, aging, rail.agingPerEntry));
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
    Verbs.CompChannel ch = null;
    if (completionEvents) {
      VerbsResult<Verbs.CompChannel> made = verbs.createCompChannel(context);
      if (!made.ok()) {
        return VerbsResult.failed(
            made.errno(), "ibv_create_comp_channel on " + device + ": " + made.describe());
      }
      ch = made.value();
    }
    VerbsResult<Verbs.Cq> cq = verbs.createCq(context, cqes, ch, 0);
    if (!cq.ok()) {
      if (ch != null) {
        verbs.destroyCompChannel(ch);
      }
      return VerbsResult.failed(cq.errno(), "ibv_create_cq on " + device + ": " + cq.describe());
    }
    try {
      return VerbsResult.ok(
          new CqLane(this, index, cq.value(), ch, maxSendWr, aging, agingPerEntry));
    } catch (RuntimeException e) {
      verbs.destroyCq(cq.value());
      if (ch != null) {
        verbs.destroyCompChannel(ch);
      }
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EINVAL.number(), "a fresh lane on " + device + ": " + e);
    }
  }

  /**
   * The entries of the port's GID table a choice looks at: only the pinned one (the others as
   * null), or the first {@code gidTblLen} (at most 256). An entry whose query failed is null.
   */
  private static List<Verbs.Gid> gidTable(
      Verbs verbs, Verbs.Context ctx, Verbs.PortAttr port, int pinned) {
    int n = Math.min(Math.max(port.gidTblLen(), pinned + 1), MAX_GID_ENTRIES);
    List<Verbs.Gid> table = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      if (pinned >= 0 && i != pinned) {
        table.add(null);
        continue;
      }
      VerbsResult<Verbs.Gid> g = verbs.queryGid(ctx, PORT, i);
      table.add(g.ok() ? g.value() : null);
    }
    return table;
  }

  /**
   * Each entry's type as the kernel lists it in sysfs, for a native device; null for the software
   * provider (it has no GID types) or where sysfs does not say.
   */
  private static List<String> gidTypes(Verbs verbs, String device, Verbs.PortAttr port) {
    if (!(verbs instanceof io.orbite.nativebind.verbs.NativeVerbs)) {
      return null;
    }
    java.nio.file.Path dir =
        java.nio.file.Path.of(
            "/sys/class/infiniband", device, "ports", String.valueOf(PORT), "gid_attrs", "types");
    int n = Math.min(port.gidTblLen(), MAX_GID_ENTRIES);
    List<String> types = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String type;
      try {
        type = java.nio.file.Files.readString(dir.resolve(String.valueOf(i))).trim();
      } catch (java.io.IOException | RuntimeException e) {
        type = null; // no such entry, or an entry the kernel does not type (invalid)
      }
      types.add(type);
    }
    return types;
  }

  /** What the control handshake (RAILS) publishes about this rail: its route's GID. */
  RdmaWire.Rail published() {
    Verbs.Gid gid = route.gid();
    return new RdmaWire.Rail(
        gid.hi(), gid.lo(), port.lid(), port.activeMtu(), PORT, linkMbps(), numaNode, device);
  }

  /** The link rate selection seeds its estimates with, in Mb/s: 400 Gb/s when unknown. */
  long linkMbps() {
    double g = gbps();
    return Math.round((g > 0 ? g : RailSelector.DEFAULT_GBPS) * 1000);
  }

  /** Where this rail is reached over {@code r} (what a REPAIR or REPAIRED names). */
  RdmaWire.Address address(Route r) {
    return new RdmaWire.Address(r.gid().hi(), r.gid().lo(), port.lid());
  }

  /** The published route. */
  Route route() {
    return route;
  }

  /** The route generation: the published route's, or a later one while the route is fenced. */
  long generation() {
    return generation.get();
  }

  /** Whether the route is fenced: no QP may be connected or repaired on this rail now. */
  boolean fenced() {
    return generation.get() != route.generation();
  }

  /**
   * Fences the route: a generation past every observation so far.
   *
   * @return the new generation
   */
  long fence() {
    return generation.incrementAndGet();
  }

  /**
   * Publishes {@code next} as the route, only if the generation is still {@code next.generation()}
   * (nothing fenced the route since its validation started).
   *
   * @return whether it was published
   */
  boolean publish(Route next) {
    if (generation.get() != next.generation()) {
      return false;
    }
    route = next;
    return true;
  }

  /** What one monitor scan saw of the port (read on the blocking-I/O executor). */
  record Observation(
      int portEvents,
      boolean deviceFatal,
      boolean portActive,
      Verbs.Gid atRoute,
      GidRanking.Choice candidate,
      boolean drained,
      Verbs.PortAttr port) {}

  /**
   * One monitor scan (blocking: run it on the blocking-I/O executor): drains the context's async
   * events (counting this port's PORT_ERR and GID_CHANGE, and any DEVICE_FATAL), reads the port's
   * state, link rate and the GID at the route's index, and, when {@code rank}, chooses the GID a
   * new route would use and checks that every QP made under an older route was destroyed.
   */
  Observation observe(boolean rank) {
    int events = 0;
    boolean fatal = false;
    for (int i = 0; i < 1024; i++) {
      VerbsResult<Verbs.AsyncEvent> e = verbs.getAsyncEvent(context);
      if (!e.ok()) {
        break; // EAGAIN: none left
      }
      Verbs.AsyncEvent ev = e.value();
      if ((ev.eventType() == Ibv.EVENT_PORT_ERR || ev.eventType() == Ibv.EVENT_GID_CHANGE)
          && ev.element() == PORT) {
        events++;
      }
      fatal |= ev.eventType() == Ibv.EVENT_DEVICE_FATAL;
      verbs.ackAsyncEvent(ev);
    }
    VerbsResult<Verbs.PortAttr> p = verbs.queryPort(context, PORT);
    boolean active = p.ok() && p.value().state() == Ibv.PORT_ACTIVE;
    VerbsResult<Verbs.Gid> g = verbs.queryGid(context, PORT, route.gidIndex());
    Verbs.Gid at = g.ok() ? g.value() : Verbs.Gid.ZERO;
    GidRanking.Choice candidate = null;
    boolean drained = false;
    if (rank) {
      Verbs.PortAttr attr = p.ok() ? p.value() : port;
      candidate =
          GidRanking.choose(
              gidTable(verbs, context, attr, gidIndexConfig),
              gidTypes(verbs, device, attr),
              gidIndexConfig);
      drained = drained();
    }
    return new Observation(
        events, fatal, active, at, candidate, drained, p.ok() ? p.value() : null);
  }

  /**
   * Whether every QP made under a route older than the current generation was destroyed. The QPs
   * not destroyed yet are those in the live sets of the rail's lanes ({@link CqLane#liveQps}): a
   * lane leaves {@link #lanes} only once its own set is empty (a faulted lane, reclaimed after its
   * native drain), and a kept lane stays, its QPs with it.
   */
  boolean drained() {
    long now = generation.get();
    for (CqLane lane : lanes) {
      for (RcQp qp : lane.liveQps()) {
        if (qp.generation < now) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * Asks the owner of every QP made under a route older than the current generation to retire it
   * (on its lane; idempotent: a QP already retiring is left alone).
   *
   * @return how many such QPs are still alive
   */
  int retireOld(String why) {
    long now = generation.get();
    int old = 0;
    for (CqLane lane : lanes) {
      for (RcQp qp : lane.liveQps()) {
        if (qp.generation < now) {
          old++;
          RcQp.QpOwner owner = qp.owner;
          if (owner != null) { // else its owner is still being made: the next scan asks
            lane.submit(() -> owner.qpFailed(qp, why));
          }
        }
      }
    }
    return old;
  }

  /** Link rate in Gb/s from the port's width and speed, for selection; 0 when unknown. */
  double gbps() {
    return gbps;
  }

  /**
   * Takes the link rate of the port as a scan read it, when the query succeeded.
   *
   * @return whether it differs from the rate held before (the selector's seed must follow)
   */
  boolean relink(Observation seen) {
    if (seen.port() == null) {
      return false; // a failed query keeps the last effective value
    }
    double now = gbpsOf(seen.port());
    if (now == gbps) {
      return false;
    }
    gbps = now;
    return true;
  }

  /** Link rate in Gb/s from a port's active width and speed; 0 when either is unknown. */
  static double gbpsOf(Verbs.PortAttr port) {
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
   * CQ entries a QP reserves on its lane's CQ: every send WR it may have outstanding, and for a
   * source QP its posted completion receives too (a requester QP posts none).
   */
  int cqesPerQp(boolean source) {
    return Math.max(2, maxSendWr) + (source ? receivesPerQp() : 0);
  }

  /** Entries of each of this rail's CQs. */
  int cqes() {
    return cqes;
  }

  /**
   * An RC QP in INIT on {@code lane}'s CQ, every WR signalled; its send queue holds at least 2 WRs
   * (one slice posts two). It reserves {@link #cqesPerQp} entries of the lane's CQ first, so the CQ
   * cannot overrun; a CQ without them refuses the QP naming {@code rdma.maxCqes}.
   */
  VerbsResult<Verbs.Qp> createQp(CqLane lane, boolean source) {
    if (lane.faulted() != null) {
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EIO.number(),
          lane.name + " is faulted (" + lane.faulted() + "): no QP is made on it");
    }
    int cqes = cqesPerQp(source);
    if (!lane.reserveCqes(cqes)) {
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.ENOMEM.number(),
          "rdma.maxCqes: "
              + lane.name
              + "'s CQ of "
              + lane.cqCapacity
              + " entries has "
              + lane.reservedCqes()
              + " reserved by the QPs on it, and a "
              + (source ? "source" : "requester")
              + " QP needs "
              + cqes);
    }
    VerbsResult<Verbs.Qp> qp =
        verbs.createQp(
            pd,
            new Verbs.QpInitAttr(
                lane.cq, lane.cq, Math.max(2, maxSendWr), receivesPerQp(), 1, 1, 16, true));
    if (!qp.ok()) {
      lane.cancelCqes(cqes);
      return qp;
    }
    lane.recordCqes(qp.value(), cqes);
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
      if (verbs.destroyQp(qp.value()) == 0) {
        lane.releaseCqes(qp.value());
      }
      return VerbsResult.failed(rc, "ibv_modify_qp to INIT on " + device);
    }
    return qp;
  }

  /**
   * Moves {@code qp} from INIT to RTS, connected to QP {@code remoteQpn} of {@code remote}, from
   * the GID index of {@code route}.
   *
   * @return 0, or the errno of the modify that failed ({@code EAGAIN} when the route is fenced)
   */
  int connect(Verbs.Qp qp, Route route, RdmaWire.Rail remote, int remoteQpn) {
    if (generation.get() != route.generation()) {
      return io.orbite.nativebind.Errno.EAGAIN.number();
    }
    Verbs.Gid rgid = new Verbs.Gid(remote.gidHi(), remote.gidLo());
    Verbs.AddressVector av =
        port.linkLayer() == Ibv.LINK_LAYER_INFINIBAND
            ? new Verbs.AddressVector(remote.lid(), 0, PORT, Verbs.Gid.ZERO, 0, 64)
            : new Verbs.AddressVector(0, 0, PORT, rgid, route.gidIndex(), 64);
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
