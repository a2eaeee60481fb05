package io.orbite.qualification.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.MetricsConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.rdma.HeldPosts;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The RDMA transport's per-rail metrics on a real scrape: each rail's bytes, and, once a rail's
 * port goes down, that rail (and only it) paused with its circuit open, by its {@code rail} tag; a
 * source's budget gauges; and the bytes a source served over RDMA, by requester, with the requester
 * listed connected while its endpoint is open.
 */
class RdmaMetricsIT {
  private static final long REGION = 1L << 20;

  private static EngineConfig rdma(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(2));
  }

  @Test
  void eachRailReportsItsBytesAndAPortDownPausesOnlyItsRail() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        };
    EngineConfig config = rdma("rdma-metrics-requester");
    config =
        config.withObservability(
            config
                .observability()
                .withMetrics(MetricsConfig.defaults().withEnabled(true))
                .withTickMillis(200));
    try (TransferEngine source = TransferEngine.start(rdma("rdma-metrics-source"));
        TransferEngine requester = FaultInjection.start(config, hooks)) {
      String url = requester.observabilityUrls().get("metrics");
      Map<String, String> engine =
          Map.of("engine", "rdma-metrics-requester@" + requester.localSegment());
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 91;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, REGION)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, data, 0), "every byte");
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), 0, REGION, data, 0),
          "a READ leaves its source as it was");

      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                String scrape = Http.get(url).body();
                return laneBytes(scrape, engine, "rdma/soft0")
                            + laneBytes(scrape, engine, "rdma/soft1")
                        == REGION
                    && rail(scrape, engine, "orbite_rdma_rail_paused", "soft1") == 0
                    && rail(scrape, engine, "orbite_rdma_rail_circuit_open", "soft1") == 0;
              }),
          "the rails' bytes add up to the READ, and both rails serve");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                String scrape = Http.get(url).body();
                for (String r : List.of("soft0", "soft1")) {
                  double link = rail(scrape, engine, "orbite_rdma_rail_link_bytes_per_second", r);
                  double sel =
                      rail(scrape, engine, "orbite_rdma_rail_selection_bytes_per_second", r);
                  double tx = rail(scrape, engine, "orbite_rdma_rail_transmit_bytes_per_second", r);
                  if (link != 100e9 / 8
                      || sel < link / 10
                      || sel > link * 10
                      || tx < link / 10
                      || tx > link * 10
                      || rail(scrape, engine, "orbite_rdma_rail_charged_bytes", r) != 0) {
                    return false;
                  }
                }
                return true;
              }),
          () ->
              "each rail's selector figures: 4x EDR, estimates within their clamps: "
                  + Http.get(url).body());

      faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> {
                String scrape = Http.get(url).body();
                return rail(scrape, engine, "orbite_rdma_rail_paused", "soft1") == 1
                    && rail(scrape, engine, "orbite_rdma_rail_circuit_open", "soft1") >= 1
                    && rail(scrape, engine, "orbite_rdma_rail_paused", "soft0") == 0
                    && rail(scrape, engine, "orbite_rdma_rail_circuit_open", "soft0") == 0;
              }),
          () -> "soft1 paused with its pair open, soft0 serving: " + Http.get(url).body());
      faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
    }
  }

  /**
   * The RDMA budget gauges of a source hold what its reservations hold: while a requester's payload
   * post is held, its task's reservation is one {@code rdma_grants} slot and its whole length in
   * {@code rdma_direct_bytes}; both go back to 0 once the task completed, every byte checked.
   */
  @Test
  void aSourcesBudgetGaugesShowTheReservationItHolds() throws InterruptedException {
    EngineConfig config = rdma("rdma-budget-source");
    config =
        config.withObservability(
            config
                .observability()
                .withMetrics(MetricsConfig.defaults().withEnabled(true))
                .withTickMillis(200));
    HeldPosts held = new HeldPosts();
    try (TransferEngine source = TransferEngine.start(config);
        TransferEngine requester = FaultInjection.start(rdma("rdma-budget-requester"), held)) {
      String url = source.observabilityUrls().get("metrics");
      Map<String, String> engine = Map.of("engine", "rdma-budget-source@" + source.localSegment());
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 92;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION + 128, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION + 128, data + 1, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                String scrape = Http.get(url).body();
                return limit(scrape, engine, "rdma_grants") == RdmaConfig.defaults().maxGrants()
                    && budget(scrape, engine, "rdma_grants") == 0;
              }),
          () -> "the limit is rdma.maxGrants, nothing reserved: " + Http.get(url).body());
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 64, peer, remote.regionId(), 0, REGION)
                  .withTransport(Transport.RDMA)));
      try {
        assertTrue(held.awaitFirstPost(), "a payload post was reached");
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> {
                  String scrape = Http.get(url).body();
                  return budget(scrape, engine, "rdma_grants") == 1
                      && budget(scrape, engine, "rdma_direct_bytes") == REGION;
                }),
            () -> "one parent reserved, its whole length charged: " + Http.get(url).body());
      } finally {
        held.letGo();
      }
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 64, REGION, data, 0), "every byte");
      assertEquals(-1, Pattern.verify(local.segment(), 0, 64, data + 1, 0), "the guard before");
      assertEquals(
          -1, Pattern.verify(local.segment(), REGION + 64, 64, data + 1, REGION + 64), "after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                String scrape = Http.get(url).body();
                return budget(scrape, engine, "rdma_grants") == 0
                    && budget(scrape, engine, "rdma_direct_bytes") == 0;
              }),
          () -> "the slot and the bytes went back: " + Http.get(url).body());
    }
  }

  private static double budget(String scrape, Map<String, String> engine, String budget) {
    java.util.Map<String, String> labels = new java.util.HashMap<>(engine);
    labels.put("budget", budget);
    return Http.sample(scrape, "orbite_budget_used", labels);
  }

  private static double limit(String scrape, Map<String, String> engine, String budget) {
    java.util.Map<String, String> labels = new java.util.HashMap<>(engine);
    labels.put("budget", budget);
    return Http.sample(scrape, "orbite_budget_limit", labels);
  }

  private static double laneBytes(String scrape, Map<String, String> engine, String lane) {
    java.util.Map<String, String> labels = new java.util.HashMap<>(engine);
    labels.put("lane", lane);
    return Http.sample(scrape, "orbite_lane_bytes_total", labels);
  }

  private static double rail(String scrape, Map<String, String> engine, String metric, String r) {
    java.util.Map<String, String> labels = new java.util.HashMap<>(engine);
    labels.put("rail", r);
    return Http.sample(scrape, metric, labels);
  }

  @Test
  void aSourceCountsTheBytesItServedOverRdmaByRequesterAndListsItConnected() {
    EngineConfig config = rdma("rdma-served-source");
    config =
        config.withObservability(
            config
                .observability()
                .withMetrics(MetricsConfig.defaults().withEnabled(true))
                .withTickMillis(200));
    try (TransferEngine source = TransferEngine.start(config);
        TransferEngine requester = TransferEngine.start(rdma("rdma-served-requester"))) {
      String url = source.observabilityUrls().get("metrics");
      String label = "127.0.0.1@" + Long.toHexString(requester.localSegment().epoch());
      long epoch = requester.localSegment().epoch();
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 93;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, data + 1, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long readLength = REGION / 2 + 4093;
      long writeLength = 65_536 + 7;
      long writeAt = REGION - writeLength - 64;
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, readLength)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, readLength, data, 0), "every byte");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), readLength, REGION - readLength, data + 1, readLength),
          "and the guard after it");
      batch.reset();
      // The WRITE sends the requester's bytes from writeAt: the pattern it was filled with there.
      batch.submit(
          List.of(
              TransferRequest.write(local, writeAt, peer, remote.regionId(), writeAt, writeLength)
                  .withTransport(Transport.RDMA)));
      s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), writeAt, writeLength, data + 1, writeAt),
          "every written byte at the source");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, writeAt, data, 0), "its guard before");
      assertEquals(
          -1,
          Pattern.verify(
              remote.segment(),
              writeAt + writeLength,
              REGION - writeAt - writeLength,
              data,
              writeAt + writeLength),
          "and after");

      SourceLedger ledger = source.sourceLedger();
      assertEquals(readLength, ledger.bytes(Transport.RDMA, Op.READ), ledger.toString());
      assertEquals(writeLength, ledger.bytes(Transport.RDMA, Op.WRITE), ledger.toString());
      assertTrue(
          ledger.served().stream()
              .filter(r -> r.transport() == Transport.RDMA)
              .allMatch(r -> r.requester().equals(label) && r.requesterEpoch() == epoch),
          () -> "served to " + label + ": " + ledger);
      assertTrue(
          ledger.connected().stream()
              .anyMatch(
                  c ->
                      c.transport() == Transport.RDMA
                          && c.requester().equals(label)
                          && c.requesterEpoch() == epoch
                          && c.connections() == 1),
          () -> "the requester's RDMA endpoint listed connected: " + ledger);
      Map<String, String> read =
          Map.of("engine", "rdma-served-source@" + source.localSegment(), "transport", "rdma");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                String scrape = Http.get(url).body();
                return Http.sample(scrape, "orbite_source_bytes_total", withOp(read, "read"))
                        == readLength
                    && Http.sample(scrape, "orbite_source_bytes_total", withOp(read, "write"))
                        == writeLength
                    && Http.sample(scrape, "orbite_source_requesters", read) == 1;
              }),
          () -> "the source's RDMA bytes and requester in its scrape: " + Http.get(url).body());
    }
  }

  private static Map<String, String> withOp(Map<String, String> labels, String op) {
    Map<String, String> m = new java.util.HashMap<>(labels);
    m.put("op", op);
    return m;
  }
}
