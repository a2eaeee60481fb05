package io.orbite.transport.rdma;

import io.orbite.engine.Op;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** What the RDMA transport counts, per rail where it matters; read by the owner view and tests. */
final class RdmaCounters {
  static final int MAX_RAILS = 64;

  final LongAdder slicesDispatched = new LongAdder();

  /** Completion SENDs the requester posted: one per QP per lane pass, naming that pass's slices. */
  final LongAdder completionSends = new LongAdder();

  final LongAdder slicesRefusedByHealth = new LongAdder();

  /** Requester slices whose payload was still out past their deadline: their QP was retired. */
  final LongAdder slicesPastDeadline = new LongAdder();

  /** Requester tasks whose deadline passed while they waited for their charges (never sent). */
  final LongAdder tasksPastDeadline = new LongAdder();

  final LongAdder tasksRefusedByPolicy = new LongAdder();
  final LongAdder grantsBound = new LongAdder();
  final LongAdder grantsReleased = new LongAdder();
  final LongAdder grantsRefused = new LongAdder();
  final LongAdder grantsRetained = new LongAdder();

  /** Requester tasks and source grants refused by {@code rdma.maxDirectBytes}. */
  final LongAdder directBytesRefused = new LongAdder();

  /** Requester tasks that waited for their {@code rdma.maxDirectBytes} charge. */
  final LongAdder tasksAwaitingDirectBytes = new LongAdder();

  /** Requester tasks that waited for a parent unit of {@code rdma.maxGrants} before RESERVE. */
  final LongAdder tasksAwaitingGrants = new LongAdder();

  final LongAdder endpointsOpened = new LongAdder();
  final LongAdder qpsFailed = new LongAdder();
  final LongAdder qpsRepaired = new LongAdder();
  final LongAdder endpointsRefused = new LongAdder();

  /** Monitor scans, one a second per rail (spec 002's {@code monitor_ticks}). */
  final LongAdder monitorTicks = new LongAdder();

  /** Monitor scans started at once because an async event was pending (not at a tick). */
  final LongAdder eventScans = new LongAdder();

  /** Requester QPs retired because the source said it retired the QP it was connected to. */
  final LongAdder qpsGoneAtSource = new LongAdder();

  /** Scans that queried a rail's port and route (spec 002's {@code route_queries}). */
  final LongAdder routeQueries = new LongAdder();

  /** Fenced routes validated and published again (spec 002's {@code route_recoveries}). */
  final LongAdder routeRecoveries = new LongAdder();

  /** Routes fenced: a port seen down, a port event, or a changed or invalid GID. */
  final LongAdder routeFences = new LongAdder();

  private final LongAdder[] readBytes = new LongAdder[MAX_RAILS];
  private final LongAdder[] writeBytes = new LongAdder[MAX_RAILS];

  /** The engine's own counters (source bytes, per-transport totals). */
  final io.orbite.engine.spi.EngineTally engine;

  RdmaCounters(io.orbite.engine.spi.EngineTally engine) {
    this.engine = engine;
    for (int i = 0; i < MAX_RAILS; i++) {
      readBytes[i] = new LongAdder();
      writeBytes[i] = new LongAdder();
    }
  }

  /** Requester bytes confirmed on local rail {@code rail} by {@code op}. */
  LongAdder bytes(int rail, Op op) {
    return op == Op.READ ? readBytes[rail] : writeBytes[rail];
  }

  /** The transport's row in the owner view: its endpoints, sessions, budgets and these counts. */
  Map<String, Long> transportFigures(
      int rails,
      int endpoints,
      int sessions,
      int grants,
      int grantsLimit,
      DirectBytes direct,
      DirectBytes parents,
      long lanesFaulted,
      long railPairsOpen) {
    return Map.ofEntries(
        Map.entry("rails", (long) rails),
        Map.entry("endpoints", (long) endpoints),
        Map.entry("sourceSessions", (long) sessions),
        Map.entry("grants", (long) grants),
        Map.entry("grantsLimit", (long) grantsLimit),
        Map.entry("grantsBound", grantsBound.sum()),
        Map.entry("grantsRefused", grantsRefused.sum()),
        Map.entry("grantsRetained", grantsRetained.sum()),
        Map.entry("directBytes", direct.usedBytes()),
        Map.entry("directBytesLimit", direct.limitBytes()),
        Map.entry("directBytesWaiting", direct.waitingBytes()),
        Map.entry("tasksAwaitingDirectBytes", tasksAwaitingDirectBytes.sum()),
        Map.entry("parentsReserved", parents.usedBytes()),
        Map.entry("tasksAwaitingGrants", tasksAwaitingGrants.sum()),
        Map.entry("directBytesRefused", directBytesRefused.sum()),
        Map.entry("slicesDispatched", slicesDispatched.sum()),
        Map.entry("completionSends", completionSends.sum()),
        Map.entry("slicesRefusedByHealth", slicesRefusedByHealth.sum()),
        Map.entry("slicesPastDeadline", slicesPastDeadline.sum()),
        Map.entry("tasksPastDeadline", tasksPastDeadline.sum()),
        Map.entry("tasksRefusedByPolicy", tasksRefusedByPolicy.sum()),
        Map.entry("qpsFailed", qpsFailed.sum()),
        Map.entry("qpsRepaired", qpsRepaired.sum()),
        Map.entry("lanesFaulted", lanesFaulted),
        Map.entry("monitorTicks", monitorTicks.sum()),
        Map.entry("eventScans", eventScans.sum()),
        Map.entry("qpsGoneAtSource", qpsGoneAtSource.sum()),
        Map.entry("routeQueries", routeQueries.sum()),
        Map.entry("routeFences", routeFences.sum()),
        Map.entry("routeRecoveries", routeRecoveries.sum()),
        Map.entry("railPairsOpen", railPairsOpen));
  }
}
