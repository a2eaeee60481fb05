package io.orbite.observability;

/**
 * Every {@code orbite_*} metric an engine exports, with the text of its Prometheus {@code # HELP}
 * line: an instrument is only ever made through one of these ({@link Instruments}), so no metric
 * can reach the scrape without its help text. docs/operations.md lists them with their labels.
 */
enum Metric {
  BUILD_INFO("orbite_build_info", "The build identity of this engine (always 1; see its labels)."),
  TASKS("orbite_tasks", "Requester tasks ended, by transport, op and outcome."),
  BYTES(
      "orbite_bytes",
      "Length of the requester tasks ended, by transport, op and outcome (completed: bytes moved)."),
  TASK_LATENCY(
      "orbite_task_latency",
      "Requester task latency from submit to its visible result, by transport, op and outcome."),
  ERRORS(
      "orbite_errors", "Errors by kind: failed tasks (task_<kind>) and refusals, faults, retries."),
  LANE_BYTES("orbite_lane_bytes", "Confirmed bytes per lane (past 1024 lanes: other)."),
  SHM_CALLER_COPIES(
      "orbite_shm_caller_copies", "SHM tasks copied on the submitting thread, their lane idle."),
  SHM_TASKS_STOLEN(
      "orbite_shm_tasks_stolen", "SHM tasks an idle copy lane took from a sibling lane's backlog."),
  SOURCE_BYTES(
      "orbite_source_bytes",
      "Bytes this engine served as a source, by transport, op and requester (SHM: as reported)."),
  SOURCE_REQUESTERS(
      "orbite_source_requesters",
      "Requester incarnations connected to this source now, by transport."),
  CONNECTIONS(
      "orbite_connections", "Data-lane and control connections opened, accepted and refused."),
  NOTIFICATIONS(
      "orbite_notifications",
      "Notifications sent to peers, and received into or refused by this engine's inbox."),
  LANES_LOST(
      "orbite_lanes_lost",
      "Requester lanes whose connection broke or missed its keepalives (each drained first)."),
  LANES_RESTORED(
      "orbite_lanes_restored", "Requester lanes reconnected to the same peer incarnation."),
  KEEPALIVE_MISSES(
      "orbite_keepalive_misses",
      "Requester lanes ended because their peer answered no keepalive in time."),
  PEERS_FENCED(
      "orbite_peers_fenced",
      "Peer entries fenced because a newer incarnation answered at their endpoint."),
  TRANSPORT_FAILOVERS(
      "orbite_transport_failovers",
      "Tasks run once more on another transport after their first transport drained them."),
  SOURCE_IDLE_CLOSES(
      "orbite_source_idle_closes", "Source lanes closed after tcp.sourceIdleTimeoutMillis idle."),
  SOURCE_INCARNATIONS_FENCED(
      "orbite_source_incarnations_fenced",
      "Source lanes and sessions of an old requester incarnation closed by its new HELLO."),
  OWNERS("orbite_owners", "Live owner actors (and quarantined owners) by state class."),
  PEERS("orbite_peers", "Segment-table entries by state."),
  BUDGET_USED("orbite_budget_used", "What is charged against a budget now."),
  BUDGET_LIMIT("orbite_budget_limit", "The configured limit of a budget."),
  RDMA_RAIL_PAIRS_OPEN(
      "orbite_rdma_rail_pairs_open", "RDMA rail pairs whose circuit is open or half-open now."),
  RDMA_QPS_REPAIRED("orbite_rdma_qps_repaired", "RDMA QPs made again after one failed."),
  RDMA_MONITOR_TICKS("orbite_rdma_monitor_ticks", "RDMA port monitor ticks."),
  RDMA_ROUTE_QUERIES(
      "orbite_rdma_route_queries", "RDMA monitor scans that queried a rail's port and route."),
  RDMA_ROUTE_FENCES("orbite_rdma_route_fences", "RDMA rail routes fenced."),
  RDMA_ROUTE_RECOVERIES(
      "orbite_rdma_route_recoveries", "Fenced RDMA rail routes validated and published again."),
  RDMA_RAIL_CIRCUIT_OPEN(
      "orbite_rdma_rail_circuit_open", "Pairs of this local RDMA rail whose circuit is open."),
  RDMA_RAIL_CIRCUIT_HALF_OPEN(
      "orbite_rdma_rail_circuit_half_open", "Pairs of this local RDMA rail half-open."),
  RDMA_RAIL_ERRORS(
      "orbite_rdma_rail_errors", "Failures the rail circuit counted against this local RDMA rail."),
  RDMA_RAIL_PAUSED(
      "orbite_rdma_rail_paused", "1 while this RDMA rail's context is paused, else 0."),
  RDMA_RAIL_LINK_RATE(
      "orbite_rdma_rail_link_bytes_per_second", "This RDMA rail's port link rate, bytes/s."),
  RDMA_RAIL_SELECTION_RATE(
      "orbite_rdma_rail_selection_bytes_per_second",
      "The rail selector's selection estimate for this RDMA rail, bytes/s."),
  RDMA_RAIL_TRANSMIT_RATE(
      "orbite_rdma_rail_transmit_bytes_per_second",
      "The rail selector's transmit estimate for this RDMA rail, bytes/s."),
  RDMA_RAIL_CHARGED_BYTES(
      "orbite_rdma_rail_charged_bytes",
      "Bytes of the slices assigned to this RDMA rail and not yet ended.");

  /** The name Kamon is given (the scrape adds {@code _total} to counters, a unit to histograms). */
  final String id;

  /** The {@code # HELP} text: one line, no backslash. */
  final String help;

  Metric(String id, String help) {
    this.id = id;
    this.help = help;
  }
}
