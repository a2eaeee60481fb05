package io.orbite.qualification.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.MetricsConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Scrapes the requester's Prometheus endpoint before, during and after READ and WRITE batches over
 * TCP: the byte and task counters move by exactly what the batches moved (every payload and guard
 * byte checked), never more, and the per-lane byte counters add up to the same.
 */
class MetricsScrapeIT {
  private static final long REGION = 24L << 20;
  private static final long SOURCE_SEED = 0x5EED_0001L;
  private static final long LOCAL_GUARD = 0x6A4D_0002L;
  private static final long WRITE_SEED = 0x3717_0003L;
  private static final long SOURCE_GUARD = 0x6A4D_0004L;

  private TransferEngine source;
  private TransferEngine requester;
  private String metricsUrl;
  private String engineTag;

  @BeforeEach
  void start() {
    source = TransferEngine.start(EngineConfig.defaults().withName("scrape-source"));
    EngineConfig config = EngineConfig.defaults().withName("scrape-requester");
    requester =
        TransferEngine.start(
            config.withObservability(
                config
                    .observability()
                    .withMetrics(MetricsConfig.defaults().withEnabled(true))
                    .withTickMillis(200)));
    metricsUrl = requester.observabilityUrls().get("metrics");
    engineTag = "scrape-requester@" + requester.localSegment();
  }

  @AfterEach
  void stop() {
    if (requester != null) {
      requester.close(Duration.ofSeconds(20));
    }
    if (source != null) {
      source.close(Duration.ofSeconds(20));
    }
  }

  private String scrape() {
    var r = Http.get(metricsUrl);
    assertEquals(200, r.statusCode(), r.body());
    return r.body();
  }

  private long bytes(String scrape, String op) {
    return (long)
        Http.sample(
            scrape,
            "orbite_bytes_total",
            Map.of("engine", engineTag, "transport", "tcp", "op", op, "outcome", "completed"));
  }

  private long tasks(String scrape, String op) {
    return (long)
        Http.sample(
            scrape,
            "orbite_tasks_total",
            Map.of("engine", engineTag, "transport", "tcp", "op", op, "outcome", "completed"));
  }

  private long laneBytes(String scrape) {
    return (long) Http.sample(scrape, "orbite_lane_bytes_total", Map.of("engine", engineTag));
  }

  @Test
  void countersMoveByTheBytesTransferred() {
    assertTrue(
        metricsUrl != null
            && metricsUrl.startsWith("http://127.0.0.1:")
            && metricsUrl.endsWith("/metrics"),
        "metrics URL on loopback: " + metricsUrl);
    RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(remote.segment(), 0, REGION, SOURCE_SEED, 0);
    RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, REGION, LOCAL_GUARD, 0);
    RemoteSegment segment =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
    long regionId = segment.regions().getFirst().regionId();

    // Everything sampled so far has reached the scrape: wait until two scrapes agree after a tick.
    assertTrue(Await.until(Duration.ofSeconds(10), () -> scrape().contains("orbite_owners")));
    String before = scrape();
    long readBefore = bytes(before, "read");
    long readTasksBefore = tasks(before, "read");
    long lanesBefore = laneBytes(before);

    // READ: tasks of odd sizes at odd offsets, leaving guard bytes between them.
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    long total = 0;
    long at = 17;
    long[] sizes = {4093, 1 << 20, 3 * (1 << 20) + 5, 65536, 7 * (1 << 20) + 333, 123};
    for (long size : sizes) {
      reads.add(TransferRequest.read(local, at, segment, regionId, at + 11, size));
      spans.add(new Span(at, size, SOURCE_SEED, at + 11));
      total += size;
      at += size + 4099;
    }
    Batch batch = requester.allocateBatch(reads.size());
    batch.submit(reads);
    // During the transfer: the counter never shows more than has been completed.
    long during = bytes(scrape(), "read") - readBefore;
    assertTrue(
        during >= 0 && during <= total, "during the transfer the counter moved by " + during);
    BatchStatus status = batch.await(Duration.ofSeconds(60));
    for (TaskResult t : status.tasks()) {
      assertTrue(t.completed(), t.toString());
    }
    assertEquals(
        -1, RegionCheck.check(local.segment(), spans, LOCAL_GUARD), "every read byte and guard");
    batch.free();
    long expected = total;
    assertTrue(
        Await.until(
            Duration.ofSeconds(10), () -> bytes(scrape(), "read") - readBefore >= expected));
    String after = scrape();
    assertEquals(total, bytes(after, "read") - readBefore, "orbite_bytes_total read completed");
    assertEquals(
        sizes.length, tasks(after, "read") - readTasksBefore, "orbite_tasks_total read completed");
    assertTrue(
        Await.until(Duration.ofSeconds(10), () -> laneBytes(scrape()) - lanesBefore >= expected));
    assertEquals(
        total, laneBytes(scrape()) - lanesBefore, "orbite_lane_bytes_total over the TCP lanes");

    // WRITE: the requester's pattern into the source's region, then the same check.
    Pattern.fill(local.segment(), 0, REGION, WRITE_SEED, 0);
    Pattern.fill(remote.segment(), 0, REGION, SOURCE_GUARD, 0);
    long writeBefore = bytes(scrape(), "write");
    long writeTotal = 5L * (1 << 20) + 77;
    Batch writes = requester.allocateBatch(1);
    writes.submit(List.of(TransferRequest.write(local, 3, segment, regionId, 1001, writeTotal)));
    assertFalse(
        writes.await(Duration.ofSeconds(60)).tasks().stream().anyMatch(t -> !t.completed()));
    assertEquals(
        -1,
        RegionCheck.check(
            remote.segment(), List.of(new Span(1001, writeTotal, WRITE_SEED, 3)), SOURCE_GUARD),
        "every written byte and guard at the source");
    writes.free();
    assertTrue(
        Await.until(
            Duration.ofSeconds(10), () -> bytes(scrape(), "write") - writeBefore >= writeTotal));
    assertEquals(
        writeTotal, bytes(scrape(), "write") - writeBefore, "orbite_bytes_total write completed");

    // The budget gauges and owner counts are there, named as documented.
    String last = scrape();
    assertTrue(
        Http.sample(last, "orbite_budget_limit", Map.of("engine", engineTag, "budget", "batches"))
            == requester.config().budgets().maxBatches(),
        "orbite_budget_limit{budget=batches}");
    assertTrue(
        Http.sample(last, "orbite_owners", Map.of("engine", engineTag, "state", "active")) >= 6,
        "orbite_owners{state=active} counts the engine's owners");
    assertTrue(last.contains("orbite_task_latency_seconds_bucket"), "latency histogram");
    io.orbite.engine.BuildInfo build = io.orbite.engine.BuildInfo.current();
    assertEquals(
        1.0,
        Http.sample(
            last,
            "orbite_build_info",
            Map.of(
                "engine",
                engineTag,
                "version",
                build.version(),
                "commit",
                build.shortCommit(),
                "jdk",
                build.runtimeJdk())),
        "orbite_build_info names this build: " + build);
  }
}
