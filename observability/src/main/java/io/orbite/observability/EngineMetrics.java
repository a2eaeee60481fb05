package io.orbite.observability;

import io.orbite.engine.BuildInfo;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerView;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import kamon.Kamon;
import kamon.metric.Counter;
import kamon.metric.Gauge;
import kamon.metric.Histogram;
import kamon.metric.Instrument;
import kamon.metric.MeasurementUnit;
import kamon.tag.TagSet;

/**
 * The {@code orbite_*} metrics of one engine, in Kamon, every series tagged {@code engine} with the
 * engine's {@code name@host:port@epoch}. Task counters and latencies are recorded as batches report
 * ended tasks; everything else is sampled each tick from the engine's cumulative counters (as
 * deltas) and its owner view (as gauges). {@link #close()} removes every series of the engine. See
 * docs/operations.md for the list.
 */
final class EngineMetrics implements EngineTally.TaskObserver, AutoCloseable {
  private final TransferEngine engine;
  private final EngineTally tally;
  private final String engineTag;
  private final ThroughputHistory history;
  private final Map<String, Instrument<?, ?>> instruments = new ConcurrentHashMap<>();

  /** Last sampled value of each cumulative source, by series key. */
  private final Map<String, Long> last = new HashMap<>();

  private final Map<Transport, LongAdder> transportBytes = new EnumMap<>(Transport.class);
  private final LongAdder otherTransportBytes = new LongAdder();
  private final Map<String, LongAdder> errorsByKind = new ConcurrentHashMap<>();

  EngineMetrics(TransferEngine engine, EngineTally tally, ThroughputHistory history) {
    this.engine = engine;
    this.tally = tally;
    this.engineTag = engine.config().name() + "@" + engine.localSegment();
    this.history = history;
    for (Transport t : Transport.values()) {
      transportBytes.put(t, new LongAdder());
    }
    tally.addObserver(this);
  }

  private TagSet tags(String... kv) {
    TagSet.Builder b = TagSet.builder().add("engine", engineTag);
    for (int i = 0; i < kv.length; i += 2) {
      b.add(kv[i], kv[i + 1]);
    }
    return b.build();
  }

  @SuppressWarnings("unchecked")
  private <I extends Instrument<?, ?>> I instrument(String key, Supplier<I> create) {
    return (I) instruments.computeIfAbsent(key, k -> create.get());
  }

  private Counter counter(String name, String... kv) {
    return instrument(
        "c " + name + " " + String.join(",", kv), () -> Kamon.counter(name).withTags(tags(kv)));
  }

  private Gauge gauge(String name, String... kv) {
    return instrument(
        "g " + name + " " + String.join(",", kv), () -> Kamon.gauge(name).withTags(tags(kv)));
  }

  private Histogram latency(String... kv) {
    return instrument(
        "h orbite_task_latency " + String.join(",", kv),
        () ->
            Kamon.histogram("orbite_task_latency", MeasurementUnit.time().nanoseconds())
                .withTags(tags(kv)));
  }

  static String label(Enum<?> e) {
    return e == null ? "none" : e.name().toLowerCase(Locale.ROOT);
  }

  /** The instruments one kind of ended task records into (its transport, op and outcome). */
  private record TaskSeries(
      Counter tasks,
      Counter bytes,
      Histogram latency,
      Counter errors,
      LongAdder errorsByKind,
      LongAdder transportBytes) {}

  /**
   * The series of each (transport, op, state, error) combination, made on first use: a task's end
   * then costs no string or map lookup (it runs on the thread that applied its last receipt).
   */
  private final AtomicReferenceArray<TaskSeries> series =
      new AtomicReferenceArray<>(
          (Transport.values().length + 1)
              * Op.values().length
              * TaskState.values().length
              * (ErrorKind.values().length + 1));

  private TaskSeries series(Transport transport, Op op, TaskState state, ErrorKind error) {
    int i =
        (((transport == null ? 0 : transport.ordinal() + 1) * Op.values().length + op.ordinal())
                        * TaskState.values().length
                    + state.ordinal())
                * (ErrorKind.values().length + 1)
            + (error == null ? 0 : error.ordinal() + 1);
    TaskSeries s = series.get(i);
    if (s == null) {
      String t = label(transport);
      String o = label(op);
      String outcome =
          state == TaskState.COMPLETED ? "completed" : error != null ? label(error) : label(state);
      boolean completed = state == TaskState.COMPLETED;
      s =
          new TaskSeries(
              counter("orbite_tasks", "transport", t, "op", o, "outcome", outcome),
              counter("orbite_bytes", "transport", t, "op", o, "outcome", outcome),
              latency("transport", t, "op", o, "outcome", completed ? "completed" : "failed"),
              completed ? null : counter("orbite_errors", "kind", "task_" + outcome),
              completed
                  ? null
                  : errorsByKind.computeIfAbsent("task_" + outcome, k -> new LongAdder()),
              transport != null ? transportBytes.get(transport) : otherTransportBytes);
      series.compareAndSet(i, null, s);
    }
    return s;
  }

  /**
   * A batch reports an ended task, on the thread that ended it (a lane's, or the submitting
   * caller's for a copy it ran itself); Kamon instruments are lock-free. The latency runs from the
   * call to {@code submit} to the moment the result is visible to {@code await} and {@code status}.
   */
  @Override
  public void taskEnded(
      Transport transport,
      Op op,
      TaskState state,
      ErrorKind error,
      long lengthBytes,
      long elapsedNanos) {
    TaskSeries s = series(transport, op, state, error);
    s.tasks().increment();
    s.bytes().increment(lengthBytes);
    s.latency().record(Math.max(0, elapsedNanos));
    if (state == TaskState.COMPLETED) {
      s.transportBytes().add(lengthBytes);
    } else {
      s.errorsByKind().increment();
      s.errors().increment();
    }
  }

  /** Adds to {@code counter} what {@code cumulative} grew by since the last sample. */
  private long delta(String key, long cumulative) {
    long before = last.getOrDefault(key, 0L);
    last.put(key, cumulative);
    return Math.max(0, cumulative - before);
  }

  private void errorDelta(String kind, long cumulative) {
    long d = delta("err " + kind, cumulative);
    if (d > 0) {
      counter("orbite_errors", "kind", kind).increment(d);
      errorsByKind.computeIfAbsent(kind, k -> new LongAdder()).add(d);
    }
  }

  /** One sample (called every tick from one scheduler thread at a time). */
  synchronized void sample() {
    EngineCounters counters = engine.counters();
    // The build identity, as Prometheus's *_build_info convention has it: a gauge of 1 with labels.
    BuildInfo build = BuildInfo.current();
    gauge(
            "orbite_build_info",
            "version",
            build.version(),
            "commit",
            build.shortCommit(),
            "jdk",
            build.runtimeJdk())
        .update(1);
    long sourceRead = delta("source read", counters.sourceBytesRead());
    long sourceWritten = delta("source write", counters.sourceBytesWritten());
    counter("orbite_source_bytes", "op", "read").increment(sourceRead);
    counter("orbite_source_bytes", "op", "write").increment(sourceWritten);
    counter("orbite_connections", "event", "opened")
        .increment(delta("conn opened", counters.connectionsOpened()));
    counter("orbite_connections", "event", "accepted")
        .increment(delta("conn accepted", counters.connectionsAccepted()));
    counter("orbite_connections", "event", "refused")
        .increment(delta("conn refused", counters.connectionsRefused()));
    counter("orbite_shm_caller_copies")
        .increment(delta("shm caller copies", counters.shmCopiedByCaller()));
    counter("orbite_shm_tasks_stolen")
        .increment(delta("shm tasks stolen", counters.shmTasksStolen()));
    errorDelta("frames_rejected", counters.framesRejected());
    errorDelta("source_refusals", counters.sourceRefusals());
    errorDelta("connections_refused", counters.connectionsRefused());
    errorDelta("read_retries", counters.readRetries());
    errorDelta("tasks_unquiesced", counters.tasksUnquiesced());
    errorDelta("shm_opens_refused", counters.shmOpensRefused());
    errorDelta("shm_fenced", counters.shmFenced());
    errorDelta("shm_mappings_quarantined", counters.shmMappingsQuarantined());
    errorDelta("owners_quarantined", counters.ownersQuarantined());

    Map<String, Long> laneRates = new HashMap<>();
    counters
        .laneBytes()
        .forEach(
            (lane, bytes) -> {
              long d = delta("lane " + lane, bytes);
              counter("orbite_lane_bytes", "lane", lane).increment(d);
              laneRates.put(lane, d);
            });

    OwnerView view = engine.ownerView();
    Map<String, Long> byState = new HashMap<>();
    for (OwnerView.StateClass c : OwnerView.StateClass.values()) {
      byState.put(c.label(), 0L);
    }
    for (OwnerView.Owner o : view.owners()) {
      byState.merge(o.stateClass().label(), 1L, Long::sum);
      budgets(o);
      if (o.kind().equals("RdmaTransport")) {
        rdma(o.charges());
      } else if (o.kind().equals("RdmaContext")) {
        rdmaRail(o);
      }
    }
    // Quarantined owner actors are on the board already, in state "quarantined": count them once.
    long quarantined =
        engine.quarantined().stream()
            .filter(q -> q.kind() != io.orbite.engine.QuarantinedOwner.Kind.OWNER)
            .count();
    byState.merge(OwnerView.StateClass.QUARANTINED.label(), quarantined, Long::sum);
    byState.forEach((state, n) -> gauge("orbite_owners", "state", state).update(n));
    Map<String, Long> peers = new HashMap<>();
    for (PeerEntry.State s : PeerEntry.State.values()) {
      peers.put(label(s), 0L);
    }
    view.peers().forEach(p -> peers.merge(label(p.state()), 1L, Long::sum));
    peers.forEach((state, n) -> gauge("orbite_peers", "state", state).update(n));

    Map<String, Long> byTransport = new HashMap<>();
    transportBytes.forEach(
        (t, adder) -> byTransport.put(label(t), delta("tput " + t, adder.sum())));
    history.add(System.currentTimeMillis(), byTransport, sourceRead + sourceWritten, laneRates);
  }

  /**
   * The RDMA transport's rail figures: the rail circuit's open pairs (a gauge), its QP repairs, the
   * port monitor's scans, route queries, fences and recoveries, and its QP failures, CQ lanes
   * faulted by a failed poll, slices refused because no rail pair was healthy, and refused grants
   * (errors).
   */
  private void rdma(Map<String, Long> charges) {
    gauge("orbite_rdma_rail_pairs_open").update(charges.getOrDefault("railPairsOpen", 0L));
    counter("orbite_rdma_qps_repaired")
        .increment(delta("rdma qps repaired", charges.getOrDefault("qpsRepaired", 0L)));
    counter("orbite_rdma_monitor_ticks")
        .increment(delta("rdma monitor ticks", charges.getOrDefault("monitorTicks", 0L)));
    counter("orbite_rdma_route_queries")
        .increment(delta("rdma route queries", charges.getOrDefault("routeQueries", 0L)));
    counter("orbite_rdma_route_fences")
        .increment(delta("rdma route fences", charges.getOrDefault("routeFences", 0L)));
    counter("orbite_rdma_route_recoveries")
        .increment(delta("rdma route recoveries", charges.getOrDefault("routeRecoveries", 0L)));
    errorDelta("rdma_qps_failed", charges.getOrDefault("qpsFailed", 0L));
    errorDelta("rdma_lanes_faulted", charges.getOrDefault("lanesFaulted", 0L));
    errorDelta("rdma_slices_refused_by_health", charges.getOrDefault("slicesRefusedByHealth", 0L));
    errorDelta("rdma_grants_refused", charges.getOrDefault("grantsRefused", 0L));
    errorDelta("rdma_direct_bytes_refused", charges.getOrDefault("directBytesRefused", 0L));
  }

  /**
   * One rail's figures, labelled by its device: the rail circuit's pairs of that local rail that
   * refuse work (open, half-open), the failures counted on it (a counter), whether its context is
   * paused (1) or serving (0), and the rail selector's figures for it (link rate, selection and
   * transmit estimates, bytes in flight).
   */
  private void rdmaRail(OwnerView.Owner o) {
    Map<String, Long> charges = o.charges();
    // The context's actor is "context-<device>".
    String path = o.path();
    int at = path.lastIndexOf("/context-");
    String rail = at >= 0 ? path.substring(at + "/context-".length()) : path;
    gauge("orbite_rdma_rail_circuit_open", "rail", rail)
        .update(charges.getOrDefault("railPairsOpen", 0L));
    gauge("orbite_rdma_rail_circuit_half_open", "rail", rail)
        .update(charges.getOrDefault("railPairsHalfOpen", 0L));
    counter("orbite_rdma_rail_errors", "rail", rail)
        .increment(delta("rdma rail errors " + rail, charges.getOrDefault("railErrors", 0L)));
    gauge("orbite_rdma_rail_paused", "rail", rail)
        .update(o.state() == io.orbite.engine.OwnerState.FENCED ? 1 : 0);
    // The rail selector's figures (nicLoadStats()): the seed, both estimates, what is in flight.
    gauge("orbite_rdma_rail_link_bytes_per_second", "rail", rail)
        .update(charges.getOrDefault("linkBytesPerSecond", 0L));
    gauge("orbite_rdma_rail_selection_bytes_per_second", "rail", rail)
        .update(charges.getOrDefault("selectionBytesPerSecond", 0L));
    gauge("orbite_rdma_rail_transmit_bytes_per_second", "rail", rail)
        .update(charges.getOrDefault("transmitBytesPerSecond", 0L));
    gauge("orbite_rdma_rail_charged_bytes", "rail", rail)
        .update(charges.getOrDefault("chargedBytes", 0L));
  }

  /**
   * Budget gauges from the owners that hold budgets: {@code <charge>} and {@code <charge>Limit}.
   * The RDMA transport holds two, each named after its charge: {@code rdma_grants} and {@code
   * rdma_direct_bytes}.
   */
  private void budgets(OwnerView.Owner o) {
    String prefix =
        switch (o.kind()) {
          case "Admission" -> "";
          case "Registry" -> "";
          case "SegmentTable" -> "peer_segments";
          case "FileTransport" -> "file_segments";
          case "TcpTransport" -> "source_lanes";
          case "RdmaTransport" -> "rdma_";
          default -> null;
        };
    if (prefix == null) {
      return;
    }
    o.charges()
        .forEach(
            (name, value) -> {
              if (name.endsWith("Limit")) {
                String used = name.substring(0, name.length() - "Limit".length());
                String budget =
                    prefix.isEmpty()
                        ? used
                        : prefix.endsWith("_") ? prefix + snakeCase(used) : prefix;
                gauge("orbite_budget_limit", "budget", budget).update(value);
                gauge("orbite_budget_used", "budget", budget)
                    .update(o.charges().getOrDefault(used, 0L));
              }
            });
  }

  /** {@code directBytes} as {@code direct_bytes}. */
  private static String snakeCase(String camel) {
    StringBuilder out = new StringBuilder(camel.length() + 4);
    for (int i = 0; i < camel.length(); i++) {
      char c = camel.charAt(i);
      if (Character.isUpperCase(c)) {
        out.append('_').append(Character.toLowerCase(c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /** Errors seen so far, by kind (task failures by error kind, protocol refusals...). */
  Map<String, Long> errors() {
    Map<String, Long> out = new java.util.TreeMap<>();
    errorsByKind.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  @Override
  public void close() {
    tally.removeObserver(this);
    List<Instrument<?, ?>> all = new ArrayList<>(instruments.values());
    instruments.clear();
    all.forEach(Instrument::remove);
  }
}
