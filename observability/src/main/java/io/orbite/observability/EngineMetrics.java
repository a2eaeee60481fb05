package io.orbite.observability;

import io.orbite.engine.BuildInfo;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerView;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import kamon.metric.Counter;
import kamon.metric.Histogram;

/**
 * The {@code orbite_*} metrics of one engine, in Kamon, every series tagged {@code engine} with the
 * engine's {@code name@host:port@epoch}. Task counters and latencies are recorded as batches report
 * ended tasks; everything else is sampled each tick from the engine's cumulative counters (as
 * deltas) and its source ledger, both read from the tally the provider was handed (the engine's
 * own), and from its owner view (as gauges). {@link #close()} removes every series of the engine.
 * See docs/operations.md for the list.
 */
final class EngineMetrics implements EngineTally.TaskObserver, AutoCloseable {
  /** The transports a source serves over, each always shown (0 when idle or off). */
  static final Transport[] SOURCE_TRANSPORTS = {Transport.TCP, Transport.SHM, Transport.RDMA};

  private final TransferEngine engine;
  private final EngineTally tally;
  private final ThroughputHistory history;
  private final Instruments in;
  private final ErrorsSeen errors = new ErrorsSeen();
  private final RdmaMetrics rdma;
  private final LatencyWindow latencies;

  private final Map<Transport, LongAdder> transportBytes = new EnumMap<>(Transport.class);
  private final LongAdder otherTransportBytes = new LongAdder();

  /** The served bytes per transport, cumulative, as of the last tick (the sampler's only). */
  private final Map<Transport, Long> servedLast = new EnumMap<>(Transport.class);

  EngineMetrics(TransferEngine engine, EngineTally tally, ThroughputHistory history, long tick) {
    this.engine = engine;
    this.tally = tally;
    this.in = new Instruments(engine.config().name() + "@" + engine.localSegment());
    this.history = history;
    this.rdma = new RdmaMetrics(in, errors);
    // About 30 s of latencies, whatever the tick (at most 300 ticks).
    this.latencies = new LatencyWindow((int) Math.min(300, Math.max(1, 30_000 / tick)));
    for (Transport t : Transport.values()) {
      transportBytes.put(t, new LongAdder());
    }
    tally.addObserver(this);
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
      ErrorsSeen.Seen seen,
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
              in.counter(Metric.TASKS, "transport", t, "op", o, "outcome", outcome),
              in.counter(Metric.BYTES, "transport", t, "op", o, "outcome", outcome),
              in.nanosHistogram(
                  Metric.TASK_LATENCY,
                  "transport",
                  t,
                  "op",
                  o,
                  "outcome",
                  completed ? "completed" : "failed"),
              completed ? null : in.counter(Metric.ERRORS, "kind", "task_" + outcome),
              completed ? null : errors.of("task_" + outcome),
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
    boolean completed = state == TaskState.COMPLETED;
    latencies.record(transport, op, completed, elapsedNanos);
    if (completed) {
      s.transportBytes().add(lengthBytes);
    } else {
      s.seen().add(1, System.currentTimeMillis());
      s.errors().increment();
    }
  }

  /** One sample (called every tick from one scheduler thread at a time). */
  synchronized void sample() {
    EngineCounters counters = tally.snapshot();
    // The build identity, as Prometheus's *_build_info convention has it: a gauge of 1 with labels.
    BuildInfo build = BuildInfo.current();
    in.gauge(
            Metric.BUILD_INFO,
            "version",
            build.version(),
            "commit",
            build.shortCommit(),
            "jdk",
            build.runtimeJdk())
        .update(1);
    Map<String, Long> served = source(tally.sourceLedger());
    in.sampleCounter(Metric.CONNECTIONS, counters.connectionsOpened(), "event", "opened");
    in.sampleCounter(Metric.CONNECTIONS, counters.connectionsAccepted(), "event", "accepted");
    in.sampleCounter(Metric.CONNECTIONS, counters.connectionsRefused(), "event", "refused");
    in.sampleCounter(Metric.CONNECTIONS, counters.peersRefused(), "event", "denied");
    in.sampleCounter(Metric.NOTIFICATIONS, counters.notificationsSent(), "event", "sent");
    in.sampleCounter(Metric.NOTIFICATIONS, counters.notificationsReceived(), "event", "received");
    in.sampleCounter(Metric.NOTIFICATIONS, counters.notificationsRefused(), "event", "refused");
    in.sampleCounter(Metric.SHM_CALLER_COPIES, counters.shmCopiedByCaller());
    in.sampleCounter(Metric.SHM_TASKS_STOLEN, counters.shmTasksStolen());
    healing(counters);
    errors.sample(in, "frames_rejected", counters.framesRejected());
    errors.sample(in, "source_refusals", counters.sourceRefusals());
    errors.sample(in, "connections_refused", counters.connectionsRefused());
    errors.sample(in, "read_retries", counters.readRetries());
    errors.sample(in, "tasks_unquiesced", counters.tasksUnquiesced());
    errors.sample(in, "shm_opens_refused", counters.shmOpensRefused());
    errors.sample(in, "shm_fenced", counters.shmFenced());
    errors.sample(in, "shm_mappings_quarantined", counters.shmMappingsQuarantined());
    errors.sample(in, "owners_quarantined", counters.ownersQuarantined());

    Map<String, Long> laneRates = new HashMap<>();
    counters
        .laneBytes()
        .forEach(
            (lane, bytes) ->
                laneRates.put(lane, in.sampleCounter(Metric.LANE_BYTES, bytes, "lane", lane)));

    OwnerView view = engine.ownerView();
    Map<String, Long> byState = new HashMap<>();
    for (OwnerView.StateClass c : OwnerView.StateClass.values()) {
      byState.put(c.label(), 0L);
    }
    for (OwnerView.Owner o : view.owners()) {
      byState.merge(o.stateClass().label(), 1L, Long::sum);
      budgets(o);
      if (o.kind().equals("RdmaTransport")) {
        rdma.transport(o.charges());
      } else if (o.kind().equals("RdmaContext")) {
        rdma.rail(o);
      }
    }
    // Quarantined owner actors are on the board already, in state "quarantined": count them once.
    long quarantined =
        engine.quarantined().stream()
            .filter(q -> q.kind() != io.orbite.engine.QuarantinedOwner.Kind.OWNER)
            .count();
    byState.merge(OwnerView.StateClass.QUARANTINED.label(), quarantined, Long::sum);
    byState.forEach((state, n) -> in.gauge(Metric.OWNERS, "state", state).update(n));
    Map<String, Long> peers = new HashMap<>();
    for (PeerEntry.State s : PeerEntry.State.values()) {
      peers.put(label(s), 0L);
    }
    view.peers().forEach(p -> peers.merge(label(p.state()), 1L, Long::sum));
    peers.forEach((state, n) -> in.gauge(Metric.PEERS, "state", state).update(n));

    Map<String, Long> byTransport = new HashMap<>();
    transportBytes.forEach(
        (t, adder) -> byTransport.put(label(t), in.delta("tput " + t, adder.sum())));
    latencies.roll();
    history.add(System.currentTimeMillis(), byTransport, served, laneRates);
  }

  /**
   * The source side: {@code orbite_source_bytes} by transport, op and requester (bounded by the
   * ledger: at most {@link SourceLedger#MAX_REQUESTERS} labels and {@code other}), and the
   * requester incarnations connected now per transport.
   *
   * @return the bytes served per transport since the last tick, for the served-throughput chart
   */
  private Map<String, Long> source(SourceLedger ledger) {
    Map<Transport, Long> now = new EnumMap<>(Transport.class);
    for (SourceLedger.Served s : ledger.served()) {
      in.sampleCounter(
          Metric.SOURCE_BYTES,
          s.bytes(),
          "transport",
          label(s.transport()),
          "op",
          label(s.op()),
          "requester",
          s.requester());
      now.merge(s.transport(), s.bytes(), Long::sum);
    }
    Map<Transport, Set<String>> incarnations = new EnumMap<>(Transport.class);
    for (SourceLedger.Connected c : ledger.connected()) {
      incarnations
          .computeIfAbsent(c.transport(), t -> new HashSet<>())
          .add(c.requester() + " " + c.requesterEpoch());
    }
    Map<String, Long> delta = new HashMap<>();
    for (Transport t : SOURCE_TRANSPORTS) {
      in.gauge(Metric.SOURCE_REQUESTERS, "transport", label(t))
          .update(incarnations.getOrDefault(t, Set.of()).size());
      long cumulative = now.getOrDefault(t, 0L);
      delta.put(label(t), Math.max(0, cumulative - servedLast.getOrDefault(t, 0L)));
      servedLast.put(t, cumulative);
    }
    return delta;
  }

  /** Reconnects, keepalive misses, fences, failovers and idle closes, as counters. */
  private void healing(EngineCounters c) {
    in.sampleCounter(Metric.LANES_LOST, c.lanesLost());
    in.sampleCounter(Metric.LANES_RESTORED, c.lanesRestored());
    in.sampleCounter(Metric.KEEPALIVE_MISSES, c.keepaliveMisses());
    in.sampleCounter(Metric.PEERS_FENCED, c.peersFenced());
    in.sampleCounter(Metric.TRANSPORT_FAILOVERS, c.transportFailovers());
    in.sampleCounter(Metric.SOURCE_IDLE_CLOSES, c.sourceIdleCloses());
    in.sampleCounter(Metric.SOURCE_INCARNATIONS_FENCED, c.sourceIncarnationsFenced());
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
                in.gauge(Metric.BUDGET_LIMIT, "budget", budget).update(value);
                in.gauge(Metric.BUDGET_USED, "budget", budget)
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
    return errors.counts();
  }

  /** Errors seen so far, by kind, with when each was first and last seen. */
  Map<String, Map<String, Long>> errorsSeen() {
    return errors.detail();
  }

  /** The latency panel's rows: the last 30 s or so of ended tasks, per transport and op. */
  java.util.List<Map<String, Object>> latencies() {
    return latencies.report();
  }

  @Override
  public void close() {
    tally.removeObserver(this);
    in.close();
  }
}
