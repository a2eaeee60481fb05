package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.rail.RailHealth;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The monitor of one rail, on behalf of its {@link RdmaContext}: one scan at a time on the
 * blocking-I/O executor ({@link #scan}: the context's async events drained, the port's state and
 * link rate, the GID at the route's index, and while the route is fenced the GID a new route would
 * use and whether the old route's QPs were destroyed), what a scan's result means for the route
 * ({@link #faultIn}, {@link #waitFor}) and the route's fence ({@link #fence}: a new generation, the
 * rail's pairs opened in the circuit, the old route's QPs retired by their owners). Its watcher
 * thread ({@link EventWatch}) has the context scan at once when an async event is pending. Used
 * from the context's mailbox only, but for the scan itself.
 */
final class RailMonitor {
  private static final Logger LOG = LoggerFactory.getLogger(RailMonitor.class);

  /** What one monitor scan saw of the port (read on the blocking-I/O executor). */
  record Observation(
      int portEvents,
      boolean deviceFatal,
      boolean portActive,
      Verbs.Gid atRoute,
      GidRanking.Choice candidate,
      boolean drained,
      Verbs.PortAttr port) {}

  private final Rail rail;
  private final RailHealth health;
  private final RailSelector selector;
  private final RdmaCounters counters;
  private final Executor blockingIo;
  private final EventWatch events;

  /** The scan in flight (or the last one): close waits for it before releasing the device. */
  private CompletableFuture<Observation> scan = CompletableFuture.completedFuture(null);

  /** The MR sweep in flight (or the last one): close waits for it before releasing the device. */
  private CompletableFuture<Void> sweep = CompletableFuture.completedFuture(null);

  /** Route fences so far. */
  long pauses;

  /** Routes validated and published again so far. */
  long recoveries;

  RailMonitor(
      Rail rail,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters,
      Executor blockingIo,
      Runnable eventPending) {
    this.rail = rail;
    this.health = health;
    this.selector = selector;
    this.counters = counters;
    this.blockingIo = blockingIo;
    this.events = new EventWatch(rail, eventPending);
    events.start();
  }

  /**
   * Starts a scan unless one is in flight.
   *
   * @param rank whether to choose a new route's GID and check the old route's drain (fenced)
   * @return the scan started, or null when one is in flight
   */
  CompletableFuture<Observation> scan(boolean rank) {
    counters.monitorTicks.increment();
    if (!scan.isDone()) {
      return null;
    }
    counters.routeQueries.increment();
    scan =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                Observation seen = observe(rank);
                if (rail.relink(seen.port())) {
                  // The port renegotiated its link: selection seeds and clamps follow it.
                  selector.linkRate(rail.index, rail.gbps());
                  LOG.info(
                      "RDMA {}: link rate now {} Gb/s (width {}, speed {})",
                      rail.device,
                      rail.gbps(),
                      seen.port().activeWidth(),
                      seen.port().activeSpeed());
                }
                return seen;
              } finally {
                events.scanned(); // its events were drained: the watcher may look again
              }
            },
            blockingIo);
    return scan;
  }

  /** The scan in flight, or the last one. */
  CompletableFuture<Observation> lastScan() {
    return scan;
  }

  /**
   * Stops the event watcher and waits for its thread (no wait on the event descriptor may outlive
   * the device).
   *
   * @return whether it ended
   */
  boolean stopEvents() {
    return events.stop(EventWatch.SCAN_WAIT);
  }

  /**
   * One monitor scan (blocking: run it on the blocking-I/O executor): drains the context's async
   * events (counting this port's PORT_ERR and GID_CHANGE, and any DEVICE_FATAL), reads the port's
   * state, link rate and the GID at the route's index, and, when {@code rank}, chooses the GID a
   * new route would use and checks that every QP made under an older route was destroyed.
   */
  private Observation observe(boolean rank) {
    Verbs verbs = rail.verbs;
    int events = 0;
    boolean fatal = false;
    for (int i = 0; i < 1024; i++) {
      VerbsResult<Verbs.AsyncEvent> e = verbs.getAsyncEvent(rail.context);
      if (!e.ok()) {
        break; // EAGAIN: none left
      }
      Verbs.AsyncEvent ev = e.value();
      if ((ev.eventType() == Ibv.EVENT_PORT_ERR || ev.eventType() == Ibv.EVENT_GID_CHANGE)
          && ev.element() == Rail.PORT) {
        events++;
      }
      fatal |= ev.eventType() == Ibv.EVENT_DEVICE_FATAL;
      verbs.ackAsyncEvent(ev);
    }
    VerbsResult<Verbs.PortAttr> p = verbs.queryPort(rail.context, Rail.PORT);
    boolean active = p.ok() && p.value().state() == Ibv.PORT_ACTIVE;
    VerbsResult<Verbs.Gid> g = verbs.queryGid(rail.context, Rail.PORT, rail.route().gidIndex());
    Verbs.Gid at = g.ok() ? g.value() : Verbs.Gid.ZERO;
    GidRanking.Choice candidate = null;
    boolean drained = false;
    if (rank) {
      Verbs.PortAttr attr = p.ok() ? p.value() : rail.port;
      candidate =
          GidRanking.choose(
              GidTable.read(verbs, rail.context, attr, rail.gidIndexConfig),
              GidTable.types(verbs, rail.device, attr),
              rail.gidIndexConfig);
      drained = drained();
    }
    return new Observation(
        events, fatal, active, at, candidate, drained, p.ok() ? p.value() : null);
  }

  /**
   * Whether every QP made under a route older than the current generation was destroyed. The QPs
   * not destroyed yet are those in the live sets of the rail's lanes ({@link LaneQps#live}): a lane
   * leaves {@link Rail#lanes} only once its own set is empty (a faulted lane, reclaimed after its
   * native drain), and a kept lane stays, its QPs with it.
   */
  private boolean drained() {
    long now = rail.generation();
    for (CqLane lane : rail.lanes) {
      for (RcQp qp : lane.qps.live()) {
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
    long now = rail.generation();
    int old = 0;
    for (CqLane lane : rail.lanes) {
      for (RcQp qp : lane.qps.live()) {
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

  /** Why the published route no longer holds, from what a scan saw; null when it holds. */
  String faultIn(Observation seen) {
    Rail.Route route = rail.route();
    if (!seen.portActive()) {
      return "port " + Rail.PORT + " is down";
    }
    if (seen.portEvents() > 0) {
      return seen.portEvents() + " port or GID event(s) for port " + Rail.PORT;
    }
    if (!seen.atRoute().equals(route.gid())) {
      return "GID index "
          + route.gidIndex()
          + (GidRanking.valid(seen.atRoute()) ? " changed to " + seen.atRoute() : " is not valid");
    }
    return null;
  }

  /**
   * Fences the route: a new generation, the rail's pairs opened, its old QPs retired.
   *
   * @return what the context's row says of it
   */
  String fence(String why) {
    long generation = rail.fence();
    pauses++;
    counters.routeFences.increment();
    String detail = "route generation " + generation + " fenced: " + why;
    LOG.info("RDMA rail {}: {}", rail.device, detail);
    health.portFault(rail.index);
    retireOld(rail.device + " route fenced: " + why);
    return detail;
  }

  /**
   * What a recovery still waits for, from what a scan saw and what the lanes' owners said; null
   * when the route may be validated.
   */
  String waitFor(Observation seen, Collection<RdmaContext.LaneStatus> lanes) {
    if (!seen.portActive()) {
      return "port " + Rail.PORT + " is down";
    }
    if (seen.candidate() == null) {
      return rail.gidIndexConfig < 0
          ? "no valid GID on port " + Rail.PORT
          : "rdma.gidIndex " + rail.gidIndexConfig + " is not a valid GID (pinned)";
    }
    for (RdmaContext.LaneStatus l : lanes) {
      if (l.state() == OwnerState.QUARANTINED) {
        return rail.device + " lane " + l.index() + " is faulted and kept (" + l.detail() + ")";
      }
      if (l.state() != OwnerState.ACTIVE) {
        return rail.device + " lane " + l.index() + " is faulted, not reclaimed yet";
      }
    }
    for (CqLane lane : rail.lanes) {
      if (lane.faulted() != null) {
        return lane.name() + " is faulted, not reclaimed yet"; // its owner's word is on its way
      }
    }
    int old = retireOld(rail.device + " route fenced");
    if (!seen.drained() || old > 0) {
      return old + " QP(s) of the old route not yet drained and destroyed";
    }
    return null;
  }

  /**
   * The MR sweep: a hidden registration's MR is deregistered once no work holds the range, so that
   * its unregister can free the memory (the MR's device pin keeps it until then). Deregistration is
   * a native call (on hardware it unpins the pages), so it runs on the blocking-I/O executor, one
   * sweep at a time.
   */
  void sweepMrs() {
    if (rail.mrs.anyHidden() && sweep.isDone()) {
      sweep = CompletableFuture.runAsync(rail.mrs::sweep, blockingIo);
    }
  }

  /**
   * Releases the rail's native objects in dependency order, on the blocking-I/O executor, once the
   * scan and the MR sweep in flight ended (no sweep runs past the PD) and the event watcher stopped
   * (no wait on the event descriptor may outlive the device); nothing when a lane's thread did not
   * end ({@code lanesFailed}: the lanes keep the whole rail).
   *
   * @return what could not be released, empty when all was
   */
  CompletableFuture<List<String>> release(List<String> lanesFailed) {
    return CompletableFuture.allOf(
            scan.handle((seen, error) -> null), sweep.handle((done, error) -> null))
        .thenApplyAsync(
            done -> {
              if (!stopEvents()) {
                return List.of("the async-event watcher of " + rail.device + " did not end");
              }
              return lanesFailed.isEmpty() ? rail.close() : lanesFailed;
            },
            blockingIo);
  }

  /** The context's row: the rail's MRs and lanes, its circuit, its route, its selector load. */
  Map<String, Long> figures(Collection<RdmaContext.LaneStatus> lanes) {
    RailHealth.RailCounts circuit = health.rail(rail.index);
    RailSelector.Load load = selector.load(rail.index);
    Rail.Route route = rail.route();
    return Map.ofEntries(
        Map.entry("mrs", (long) rail.mrs.size()),
        Map.entry("mrsRegistered", rail.mrs.registered.sum()),
        Map.entry("mrsKept", (long) rail.mrs.kept()),
        Map.entry("lanes", (long) rail.lanes.size()),
        Map.entry("lanesFaulted", rail.lanesFaulted.sum()),
        Map.entry(
            "lanesReplaced", lanes.stream().mapToLong(RdmaContext.LaneStatus::replaced).sum()),
        Map.entry(
            "lanesKept", lanes.stream().filter(l -> l.state() == OwnerState.QUARANTINED).count()),
        Map.entry("pauses", pauses),
        Map.entry("railPairsOpen", (long) circuit.pairsOpen()),
        Map.entry("railPairsHalfOpen", (long) circuit.pairsHalfOpen()),
        Map.entry("railErrors", circuit.errors()),
        Map.entry("gidIndex", (long) route.gidIndex()),
        Map.entry("routeGeneration", rail.generation()),
        Map.entry("publishedGeneration", route.generation()),
        Map.entry("routeRecoveries", recoveries),
        Map.entry("linkBytesPerSecond", load.linkBytesPerSecond()),
        Map.entry("selectionBytesPerSecond", load.selectionBytesPerSecond()),
        Map.entry("transmitBytesPerSecond", load.transmitBytesPerSecond()),
        Map.entry("chargedBytes", load.chargedBytes()),
        Map.entry("postedBytes", load.postedBytes()),
        Map.entry("completedBytes", load.completedBytes()),
        Map.entry("allocatedBytes", load.allocatedBytes()),
        Map.entry("numaNode", (long) rail.numaNode),
        Map.entry("tier", (long) load.tier()),
        Map.entry("eligible", selector.policy().allowed(rail.index) ? 1L : 0L));
  }

  /**
   * What the context's row says of its lanes: one that is not polling, or how many faulted lanes
   * were replaced.
   */
  static String laneDetail(String device, Collection<RdmaContext.LaneStatus> lanes) {
    String shown = null;
    long replaced = 0;
    for (RdmaContext.LaneStatus l : lanes) {
      replaced += l.replaced();
      if (l.state() != OwnerState.ACTIVE && l.state() != OwnerState.CLOSING) {
        shown = device + " lane " + l.index() + ": " + l.detail();
      }
    }
    if (shown != null) {
      return shown;
    }
    return replaced > 0
        ? replaced + " faulted lane(s) replaced after their QPs were destroyed"
        : "";
  }
}
