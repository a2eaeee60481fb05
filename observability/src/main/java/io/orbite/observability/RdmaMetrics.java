package io.orbite.observability;

import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import java.util.Map;

/**
 * The RDMA transport's metrics, read from its owners' charges in the owner view each tick: the
 * transport's row and each rail's context row.
 */
final class RdmaMetrics {
  private final Instruments in;
  private final ErrorsSeen errors;

  RdmaMetrics(Instruments in, ErrorsSeen errors) {
    this.in = in;
    this.errors = errors;
  }

  /**
   * The RDMA transport's rail figures: the rail circuit's open pairs (a gauge), its QP repairs, the
   * port monitor's scans, route queries, fences and recoveries, and its QP failures, CQ lanes
   * faulted by a failed poll, slices refused because no rail pair was healthy, and refused grants
   * (errors).
   */
  void transport(Map<String, Long> charges) {
    in.gauge(Metric.RDMA_RAIL_PAIRS_OPEN).update(charges.getOrDefault("railPairsOpen", 0L));
    in.sampleCounter(Metric.RDMA_QPS_REPAIRED, charges.getOrDefault("qpsRepaired", 0L));
    in.sampleCounter(Metric.RDMA_MONITOR_TICKS, charges.getOrDefault("monitorTicks", 0L));
    in.sampleCounter(Metric.RDMA_ROUTE_QUERIES, charges.getOrDefault("routeQueries", 0L));
    in.sampleCounter(Metric.RDMA_ROUTE_FENCES, charges.getOrDefault("routeFences", 0L));
    in.sampleCounter(Metric.RDMA_ROUTE_RECOVERIES, charges.getOrDefault("routeRecoveries", 0L));
    errors.sample(in, "rdma_qps_failed", charges.getOrDefault("qpsFailed", 0L));
    errors.sample(in, "rdma_lanes_faulted", charges.getOrDefault("lanesFaulted", 0L));
    errors.sample(
        in, "rdma_slices_refused_by_health", charges.getOrDefault("slicesRefusedByHealth", 0L));
    errors.sample(in, "rdma_grants_refused", charges.getOrDefault("grantsRefused", 0L));
    errors.sample(in, "rdma_direct_bytes_refused", charges.getOrDefault("directBytesRefused", 0L));
  }

  /**
   * One rail's figures, labelled by its device: the rail circuit's pairs of that local rail that
   * refuse work (open, half-open), the failures counted on it (a counter), whether its context is
   * paused (1) or serving (0), and the rail selector's figures for it (link rate, selection and
   * transmit estimates, bytes in flight).
   */
  void rail(OwnerView.Owner o) {
    Map<String, Long> charges = o.charges();
    // The context's actor is "context-<device>".
    String path = o.path();
    int at = path.lastIndexOf("/context-");
    String rail = at >= 0 ? path.substring(at + "/context-".length()) : path;
    in.gauge(Metric.RDMA_RAIL_CIRCUIT_OPEN, "rail", rail)
        .update(charges.getOrDefault("railPairsOpen", 0L));
    in.gauge(Metric.RDMA_RAIL_CIRCUIT_HALF_OPEN, "rail", rail)
        .update(charges.getOrDefault("railPairsHalfOpen", 0L));
    in.sampleCounter(Metric.RDMA_RAIL_ERRORS, charges.getOrDefault("railErrors", 0L), "rail", rail);
    in.gauge(Metric.RDMA_RAIL_PAUSED, "rail", rail).update(o.state() == OwnerState.FENCED ? 1 : 0);
    // The rail selector's figures (nicLoadStats()): the seed, both estimates, what is in flight.
    in.gauge(Metric.RDMA_RAIL_LINK_RATE, "rail", rail)
        .update(charges.getOrDefault("linkBytesPerSecond", 0L));
    in.gauge(Metric.RDMA_RAIL_SELECTION_RATE, "rail", rail)
        .update(charges.getOrDefault("selectionBytesPerSecond", 0L));
    in.gauge(Metric.RDMA_RAIL_TRANSMIT_RATE, "rail", rail)
        .update(charges.getOrDefault("transmitBytesPerSecond", 0L));
    in.gauge(Metric.RDMA_RAIL_CHARGED_BYTES, "rail", rail)
        .update(charges.getOrDefault("chargedBytes", 0L));
  }
}
