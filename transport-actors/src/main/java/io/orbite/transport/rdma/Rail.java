package io.orbite.transport.rdma;

import io.orbite.engine.spi.RegistryView;
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

  /** {@code rdma.maxSendWr}: each QP's send queue. */
  final int maxSendWr;

  /** Makes and connects this rail's QPs. */
  final RailConnector connector = new RailConnector(this);

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
              GidTable.read(verbs, ctx, port, config.gidIndex()),
              GidTable.types(verbs, device.name(), port),
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

  /** Entries of each of this rail's CQs. */
  int cqes() {
    return cqes;
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
  boolean relink(Verbs.PortAttr seen) {
    if (seen == null) {
      return false; // a failed query keeps the last effective value
    }
    double now = gbpsOf(seen);
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
