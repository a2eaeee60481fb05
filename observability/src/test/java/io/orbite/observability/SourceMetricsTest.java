package io.orbite.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The metrics and the dashboard's documents of one engine, driven through a tally of the test's own
 * (the provider reads everything but the owner view from the tally it is handed): the source side's
 * bytes by transport (SHM included, as requesters report it), op and requester, with the requesters
 * connected and their epochs; the self-healing counters; a {@code # HELP} line for every {@code
 * orbite_*} metric in the scrape, each metric documented; an off transport shown off; the latency
 * panel; errors with the time they were seen.
 */
class SourceMetricsTest {
  private static final int TICK = 100;

  private TransferEngine engine;
  private EngineTally tally;
  private ThroughputHistory history;
  private EngineMetrics metrics;
  private DashboardModel model;
  private String engineTag;

  @BeforeEach
  void start() {
    EngineConfig config = EngineConfig.defaults().withName("source-metrics");
    // Observability off in the engine: the test starts the pieces itself, on its own tally.
    engine =
        TransferEngine.start(config.withObservability(config.observability().withTickMillis(TICK)));
    engineTag = "source-metrics@" + engine.localSegment();
    KamonRuntime.acquire(TICK);
    tally = new EngineTally();
    history = new ThroughputHistory();
    metrics = new EngineMetrics(engine, tally, history, TICK);
    model = new DashboardModel(engine, tally, metrics, history, TICK);
  }

  @AfterEach
  void stop() {
    if (metrics != null) {
      metrics.close();
      KamonRuntime.release();
    }
    if (engine != null) {
      engine.close(Duration.ofSeconds(20));
    }
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 15_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  /** The value of the one series of {@code name} whose labels include {@code labels}, or -1. */
  private double sample(String scrape, String name, Map<String, String> labels) {
    double found = -1;
    for (String line : scrape.split("\n")) {
      if (!line.startsWith(name + "{")) {
        continue;
      }
      boolean all = line.contains("engine=\"" + engineTag + "\"");
      for (var e : labels.entrySet()) {
        all &= line.contains(e.getKey() + "=\"" + e.getValue() + "\"");
      }
      if (all) {
        found = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return found;
  }

  /** Samples once, then waits for the scrape to show {@code name{labels}} at {@code value}. */
  private String scrapeShowing(String name, Map<String, String> labels, double value)
      throws InterruptedException {
    metrics.sample();
    await(
        name + labels + " = " + value + " in the scrape",
        () -> sample(KamonRuntime.scrape(), name, labels) == value);
    return KamonRuntime.scrape();
  }

  @Test
  void servedBytesAreShownByTransportOpAndRequesterShmIncluded() throws Exception {
    String tcpRequester = "10.0.0.7@1f";
    String shmRequester = "127.0.0.1@2e";
    EngineTally.ServedTo row = tally.servedTo(tcpRequester, 0x1f);
    tally.requesterConnected(tcpRequester, 0x1f, Transport.TCP);
    tally.requesterConnected(tcpRequester, 0x1f, Transport.TCP);
    tally.requesterConnected(shmRequester, 0x2e, Transport.TCP);
    row.add(Transport.TCP, Op.READ, 4093);
    row.add(Transport.TCP, Op.WRITE, 65536);
    // SHM bytes, as the lead's keepalive handling reports a requester's copies.
    tally.served(shmRequester, 0x2e, Transport.SHM, Op.READ, 6_700_001);
    tally.served(shmRequester, 0x2e, Transport.SHM, Op.WRITE, 17);

    // A tick may fall in the middle of a sample: wait for one that shows every series.
    metrics.sample();
    await(
        "every source series in the scrape",
        () -> {
          String now = KamonRuntime.scrape();
          return sample(
                      now,
                      "orbite_source_bytes_total",
                      Map.of("transport", "shm", "op", "read", "requester", shmRequester))
                  == 6_700_001
              && sample(
                      now,
                      "orbite_source_bytes_total",
                      Map.of("transport", "shm", "op", "write", "requester", shmRequester))
                  == 17
              && sample(
                      now,
                      "orbite_source_bytes_total",
                      Map.of("transport", "tcp", "op", "read", "requester", tcpRequester))
                  == 4093
              && sample(
                      now,
                      "orbite_source_bytes_total",
                      Map.of("transport", "tcp", "op", "write", "requester", tcpRequester))
                  == 65536
              && sample(now, "orbite_source_requesters", Map.of("transport", "tcp")) == 2
              && sample(now, "orbite_source_requesters", Map.of("transport", "rdma")) == 0;
        });
    assertEquals(
        -1,
        sample(
            KamonRuntime.scrape(),
            "orbite_source_bytes_total",
            Map.of("transport", "rdma", "op", "read")),
        "no series for what was never served");

    // The counter moves by exactly what was served since the last tick.
    tally.served(shmRequester, 0x2e, Transport.SHM, Op.READ, 99);
    scrapeShowing(
        "orbite_source_bytes_total",
        Map.of("transport", "shm", "op", "read", "requester", shmRequester),
        6_700_100);

    // The dashboard: the transports' served bytes, the requesters with their epochs, the chart.
    Map<String, Object> snap = model.snapshot();
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> transports = (List<Map<String, Object>>) snap.get("transports");
    Map<String, Object> shm = byKey(transports, "transport", "shm");
    assertEquals(6_700_100L, shm.get("servedRead"));
    assertEquals(17L, shm.get("servedWritten"));
    Map<String, Object> tcp = byKey(transports, "transport", "tcp");
    assertEquals(4093L, tcp.get("servedRead"));
    assertEquals(65536L, tcp.get("servedWritten"));
    assertEquals(2L, tcp.get("requesters"));
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> requesters = (List<Map<String, Object>>) snap.get("requesters");
    assertEquals(2, requesters.size(), requesters.toString());
    Map<String, Object> r1 = byKey(requesters, "requester", tcpRequester);
    assertEquals("1f", r1.get("epoch"));
    assertEquals(true, r1.get("connected"));
    assertEquals(Map.of("tcp", 2), r1.get("connections"));
    assertEquals(4093L, r1.get("read"));
    assertEquals(65536L, r1.get("written"));
    Map<String, Object> r2 = byKey(requesters, "requester", shmRequester);
    assertEquals("2e", r2.get("epoch"));
    assertEquals(Map.of("shm", Map.of("read", 6_700_100L, "write", 17L)), r2.get("served"));
    long servedShm =
        history.points().stream().mapToLong(p -> p.servedBytes().getOrDefault("shm", 0L)).sum();
    assertEquals(6_700_117L, servedShm, "the served chart's SHM points add up (read and write)");

    // Disconnected: listed no more as connected, its bytes kept.
    tally.requesterDisconnected(tcpRequester, 0x1f, Transport.TCP);
    tally.requesterDisconnected(tcpRequester, 0x1f, Transport.TCP);
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> after =
        (List<Map<String, Object>>) model.snapshot().get("requesters");
    Map<String, Object> gone = byKey(after, "requester", tcpRequester);
    assertEquals(false, gone.get("connected"));
    assertEquals(4093L, gone.get("read"));
  }

  private static Map<String, Object> byKey(List<Map<String, Object>> rows, String key, Object v) {
    return rows.stream()
        .filter(r -> v.equals(r.get(key)))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no row with " + key + "=" + v + ": " + rows));
  }

  @Test
  void notificationsAreCountedByEvent() throws Exception {
    tally.add(Count.NOTIFICATIONS_SENT, 5);
    tally.add(Count.NOTIFICATIONS_RECEIVED, 3);
    tally.add(Count.NOTIFICATIONS_REFUSED, 2);
    scrapeShowing("orbite_notifications_total", Map.of("event", "sent"), 5);
    scrapeShowing("orbite_notifications_total", Map.of("event", "received"), 3);
    scrapeShowing("orbite_notifications_total", Map.of("event", "refused"), 2);
  }

  @Test
  void everyOrbiteMetricInTheScrapeHasAHelpLineAndEveryMetricIsDocumented() throws Exception {
    tally.served("10.0.0.7@1f", 0x1f, Transport.TCP, Op.READ, 10);
    tally.requesterConnected("10.0.0.7@1f", 0x1f, Transport.RDMA);
    tally.add(Count.LANES_LOST, 3);
    tally.add(Count.LANES_RESTORED, 2);
    tally.add(Count.KEEPALIVE_MISSES, 1);
    tally.add(Count.PEERS_FENCED, 4);
    tally.add(Count.TRANSPORT_FAILOVERS, 5);
    tally.add(Count.SOURCE_IDLE_CLOSES, 6);
    tally.add(Count.SOURCE_INCARNATIONS_FENCED, 7);
    tally.add(Count.FRAMES_REJECTED, 1);
    tally.lane("tcp/lane 0").add(10);
    metrics.taskEnded(Transport.TCP, Op.READ, TaskState.COMPLETED, null, 10, 50_000);
    metrics.taskEnded(Transport.TCP, Op.WRITE, TaskState.FAILED, ErrorKind.PEER_LOST, 10, 70_000);
    Map<String, Double> healing =
        Map.of(
            "orbite_lanes_lost_total", 3.0,
            "orbite_lanes_restored_total", 2.0,
            "orbite_keepalive_misses_total", 1.0,
            "orbite_peers_fenced_total", 4.0,
            "orbite_transport_failovers_total", 5.0,
            "orbite_source_idle_closes_total", 6.0,
            "orbite_source_incarnations_fenced_total", 7.0);
    metrics.sample();
    // A tick may fall in the middle of a sample: wait for one that has every count.
    await(
        "every healing counter in the scrape: " + healing,
        () -> {
          String now = KamonRuntime.scrape();
          return healing.entrySet().stream()
              .allMatch(e -> sample(now, e.getKey(), Map.of()) == e.getValue());
        });
    String scrape = KamonRuntime.scrape();
    Set<String> families = new HashSet<>();
    Set<String> helped = new HashSet<>();
    Matcher help = Pattern.compile("(?m)^# HELP (orbite_\\w+) (\\S.*)$").matcher(scrape);
    while (help.find()) {
      helped.add(help.group(1));
    }
    Matcher series =
        Pattern.compile("(?m)^(orbite_\\w+?)(_bucket|_count|_sum)?[{ ]").matcher(scrape);
    while (series.find()) {
      // A histogram's family is its name without _bucket, _count or _sum.
      families.add(series.group(1));
    }
    assertTrue(families.size() >= 20, "the scrape shows the engine's metrics: " + families);
    for (String family : families) {
      assertTrue(helped.contains(family), "no # HELP line for " + family + " in:\n" + scrape);
    }
    assertTrue(helped.contains("orbite_task_latency_seconds"), "the histogram's HELP: " + helped);

    String operations = Files.readString(Path.of("..", "docs", "operations.md"));
    for (Metric m : Metric.values()) {
      assertFalse(m.help.isBlank() || m.help.contains("\n") || m.help.contains("\\"), m.name());
      assertTrue(operations.contains("`" + m.id), m.id + " is not listed in docs/operations.md");
    }
  }

  @Test
  void aTransportOffByConfigurationIsShownOffNotFenced() throws Exception {
    assertFalse(engine.config().rdma().enabled(), "RDMA is off by default");
    assertFalse(engine.config().shm().enabled(), "this engine's allocations are not shared");
    await(
        "the RDMA transport's row",
        () -> engine.ownerView().owners().stream().anyMatch(o -> o.kind().equals("RdmaTransport")));
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> transports =
        (List<Map<String, Object>>) model.snapshot().get("transports");
    Map<String, Object> rdma = byKey(transports, "transport", "rdma");
    assertEquals("off", rdma.get("state"), rdma.toString());
    assertEquals("off", rdma.get("stateClass"), "not fenced: " + rdma);
    assertEquals("off", rdma.get("source"));
    Map<String, Object> shm = byKey(transports, "transport", "shm");
    assertEquals("off", shm.get("source"), "shm.enabled is false: " + shm);
    Map<String, Object> tcp = byKey(transports, "transport", "tcp");
    assertEquals("serving", tcp.get("state"));
    assertEquals("active", tcp.get("stateClass"));
    assertEquals("on", tcp.get("source"));
    // The owner metrics count it off, not fenced.
    String scrape = scrapeShowing("orbite_owners", Map.of("state", "off"), 1);
    assertNotNull(scrape);
  }

  @Test
  void theLatencyPanelAndErrorsWithTheTimeTheyWereSeen() throws Exception {
    long before = System.currentTimeMillis();
    for (int i = 1; i <= 100; i++) {
      metrics.taskEnded(Transport.TCP, Op.READ, TaskState.COMPLETED, null, 4096, i * 10_000L);
    }
    metrics.taskEnded(Transport.TCP, Op.READ, TaskState.FAILED, ErrorKind.EPOCH_MISMATCH, 1, 5);
    tally.increment(Count.SOURCE_REFUSALS);
    metrics.sample();
    Map<String, Object> snap = model.snapshot();
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> latency = (List<Map<String, Object>>) snap.get("latency");
    Map<String, Object> tcp = byKey(latency, "transport", "tcp");
    assertEquals("read", tcp.get("op"));
    assertEquals(100L, tcp.get("completed"));
    assertEquals(1L, tcp.get("failed"));
    long p50 = (long) tcp.get("p50Nanos");
    assertTrue(p50 >= 500_000 && p50 <= 500_000 + 500_000 / 8, "p50 " + p50);
    long p99 = (long) tcp.get("p99Nanos");
    assertTrue(p99 >= 990_000 && p99 <= 990_000 + 990_000 / 8, "p99 " + p99);

    @SuppressWarnings("unchecked")
    Map<String, Map<String, Long>> seen = (Map<String, Map<String, Long>>) snap.get("errorsSeen");
    long after = System.currentTimeMillis();
    for (String kind : List.of("task_epoch_mismatch", "source_refusals")) {
      Map<String, Long> e = seen.get(kind);
      assertNotNull(e, kind + " in " + seen);
      assertEquals(1L, e.get("count"), kind);
      assertTrue(e.get("firstMillis") >= before && e.get("lastMillis") <= after, kind + " " + e);
    }
    assertEquals(1L, model.errors().get("task_epoch_mismatch"));
  }
}
