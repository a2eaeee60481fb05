package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The RDMA transport against a source in another process (the software provider in each, two rails,
 * three lanes; the requester slices in 1 MiB blocks): the reference's healthy-rounds profile, then
 * a source SIGKILLed and restarted at the same endpoint for three generations while this requester
 * engine survives, and a requester process SIGKILLed and restarted for three generations while this
 * engine, its source, survives. Both sides' whole regions are checked after every round.
 */
class RdmaPeerIT {
  static final Map<String, String> RDMA_SOURCE =
      Map.of("ORBITE_CONF", "{\"rdma\":{\"enabled\":true,\"softwareDevices\":2,\"lanes\":3}}");

  private static final long PAYLOAD = (4L << 20) + 1;

  /** The profile's block: a parent is four slices of 1 MiB, its one-byte tail folded. */
  private static final long BLOCK = 1L << 20;

  private static final int PARENTS = 16;
  private static final long STRIDE = PAYLOAD + 4099;
  private static final long REGION = STRIDE * PARENTS + 8192;

  @Test
  void healthyRoundsThenThreeSourceGenerationsWhileTheRequesterSurvives(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    // Nothing is armed: the table is read for the provider's own byte counts (its port counters).
    io.orbite.nativebind.verbs.soft.SoftFaults provider =
        io.orbite.nativebind.verbs.soft.SoftFaults.create();
    io.orbite.engine.fault.FaultHooks counting =
        new io.orbite.engine.fault.FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return provider;
          }
        };
    try (TransferEngine requester =
        FaultInjection.start(
            RdmaTransferIT.rdmaConfig("rdma-survivor")
                .withSlicing(io.orbite.config.SlicingConfig.defaults().withBaseBlockBytes(BLOCK)),
            counting)) {
      native0 = () -> provider.payloadBytes("soft0") + provider.payloadBytes("soft1");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      int port;
      try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
        port = probe.getLocalPort();
      }
      EngineProcess source = EngineProcess.startAt("rdma-source", logs, port, RDMA_SOURCE);
      RemoteSegment previous = null;
      long previousRegion = -1;
      long mrsAfterFirst = -1;
      try {
        for (int generation = 1; generation <= 3; generation++) {
          long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
          RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
          if (previous != null) {
            staleSegmentIsRefusedBeforeAnythingIsMade(requester, local, previous, previousRegion);
          }
          rounds(requester, source, local, peer, remote, generation == 1 ? 3 : 1);
          long mrs = charge(requester, "RdmaContext", "mrsRegistered");
          if (generation == 1) {
            mrsAfterFirst = mrs;
            // The view re-publishes every 200 ms: wait for the rounds' figure to show.
            Await.until(
                Duration.ofSeconds(2), () -> charge(requester, "RdmaEndpoint", "maxSqDebt") > 0);
            long debt = charge(requester, "RdmaEndpoint", "maxSqDebt");
            // A payload and at most one completion SEND per slot: half the send queue.
            long most = 2L * Math.max(1, requester.config().rdma().maxSendWr() / 4);
            assertTrue(
                debt > 0 && debt <= most, "SQ debt stays at most " + most + " WRs per QP: " + debt);
          } else {
            assertEquals(mrsAfterFirst, mrs, "the survivor's MRs are not made again");
          }
          previous = peer;
          previousRegion = remote;
          source.kill();
          source = source.restart();
        }
      } finally {
        source.close();
      }
    }
  }

  /** The requester's configuration in its own process: two rails, three lanes, 1 MiB blocks. */
  static final Map<String, String> RDMA_REQUESTER =
      Map.of(
          "ORBITE_CONF",
          "{\"rdma\":{\"enabled\":true,\"softwareDevices\":2,\"lanes\":3},"
              + "\"slicing\":{\"baseBlockBytes\":"
              + BLOCK
              + "}}");

  /**
   * The profile's other role: the requester in a child process SIGKILLed between rounds and
   * restarted at the same endpoint for three generations, while this engine, the source, survives.
   * Each generation runs three READ and WRITE rounds of 16 parents of 4 MiB + 1 (both whole regions
   * checked each round; the requester's rails both carry payload and add up to what this source
   * served). Between generations the source is idle (no reservation, no grant), and after each
   * death its sessions and their QPs are gone, with its loans back where they were. Its MRs are
   * made once. The survivor keeps the segment it opened of each earlier generation; once the
   * replacement is known, reopening one and submitting on it fail {@code EPOCH_MISMATCH} with
   * nothing dispatched and no byte moved.
   */
  @Test
  void threeRequesterGenerationsWhileTheSourceSurvives(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("rdma-survivor"))) {
      RegisteredMemory served = source.allocate(REGION, Access.READ_WRITE);
      long loansIdle = source.owed().loans();
      int port;
      try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
        port = probe.getLocalPort();
      }
      EngineProcess requester = EngineProcess.startAt("rdma-requester", logs, port, RDMA_REQUESTER);
      RemoteSegment previous = null;
      long previousRegion = -1;
      long mrsAfterFirst = -1;
      long qpsAfterFirst = -1;
      try {
        for (int generation = 1; generation <= 3; generation++) {
          long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
          assertEquals(
              Long.toHexString(source.localSegment().epoch()),
              requester.call("OPEN " + source.localSegment().endpoint()),
              "the requester opens the survivor's incarnation");
          RemoteSegment ofRequester =
              source.openSegment(requester.endpoint(), Duration.ofSeconds(20));
          if (previous != null) {
            assertEquals(previousRegion, local, "the replacement's region has the same id");
            staleSegmentIsRefusedBeforeAnythingIsMade(source, served, previous, previousRegion);
          }
          requesterRounds(source, served, requester, local, 3);
          long mrs = charge(source, "RdmaContext", "mrsRegistered");
          // The source's QPs for this generation, once its rounds are done (the view re-publishes
          // every 200 ms).
          assertTrue(
              Await.until(
                  Duration.ofSeconds(5),
                  () ->
                      charge(source, "RdmaTransport", "grants") == 0
                          && charge(source, "RdmaSourceSession", "reservations") == 0),
              "the source is idle between generations: no grant, no reservation");
          long qps = charge(source, "CqLane", "qps");
          assertTrue(qps > 0, "the source has QPs for its requester: " + qps);
          if (generation == 1) {
            mrsAfterFirst = mrs;
            qpsAfterFirst = qps;
          } else {
            assertEquals(mrsAfterFirst, mrs, "the survivor's MRs are not made again");
            assertEquals(
                qpsAfterFirst, qps, "each generation has as many QPs as the first, no more");
          }
          previous = ofRequester;
          previousRegion = local;
          requester.kill();
          // Abrupt death: the survivor's sessions for it end, their QPs destroyed, loans back.
          assertTrue(
              Await.until(
                  Duration.ofSeconds(20),
                  () ->
                      charge(source, "RdmaTransport", "sourceSessions") == 0
                          && charge(source, "CqLane", "qps") == 0
                          && source.owed().loans() == loansIdle),
              () ->
                  "after the requester's death: sessions "
                      + charge(source, "RdmaTransport", "sourceSessions")
                      + ", QPs "
                      + charge(source, "CqLane", "qps")
                      + ", loans "
                      + source.owed().loans()
                      + " (idle "
                      + loansIdle
                      + ")");
          assertEquals(0, charge(source, "RdmaTransport", "grants"), "no grant left");
          assertEquals(mrsAfterFirst, charge(source, "RdmaContext", "mrsRegistered"));
          requester = requester.restart();
        }
      } finally {
        requester.close();
      }
    }
  }

  /**
   * {@code rounds} READ and WRITE rounds driven from the requester process, against {@code served}
   * in this source: the requester's whole region checked there, this one here.
   */
  private static void requesterRounds(
      TransferEngine source,
      RegisteredMemory served,
      EngineProcess requester,
      long local,
      int rounds)
      throws Exception {
    long[] railsBefore = requesterRails(requester);
    long servedBefore =
        source.counters().sourceBytesRead() + source.counters().sourceBytesWritten();
    long moved = 0;
    for (int round = 0; round < rounds; round++) {
      for (Op op : Op.values()) {
        long guard = 0x5eed_0000L + round * 2 + op.ordinal();
        long data = 0xda7a_0000L + round * 2 + op.ordinal();
        List<String> lines = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        for (int i = 0; i < PARENTS; i++) {
          long localOffset = 5 + i * STRIDE;
          long remoteOffset = 4096 + 3 + i * STRIDE;
          Span s =
              op == Op.READ
                  ? new Span(localOffset, PAYLOAD, data, remoteOffset)
                  : new Span(remoteOffset, PAYLOAD, data, localOffset);
          spans.add(s);
          lines.add(s.offset() + " " + s.length() + " " + s.seed() + " " + s.from());
        }
        if (op == Op.READ) {
          Pattern.fill(served.segment(), 0, REGION, data, 0);
          requester.call("FILL " + local + " " + guard);
        } else {
          Pattern.fill(served.segment(), 0, REGION, guard, 0);
          requester.call("FILL " + local + " " + data);
        }
        String answer =
            requester.ask(
                "XFER "
                    + op
                    + " RDMA "
                    + local
                    + " "
                    + PARENTS
                    + " "
                    + PAYLOAD
                    + " "
                    + STRIDE
                    + " 5 "
                    + served.regionId()
                    + " "
                    + (4096 + 3),
                List.of());
        assertEquals("OK " + PARENTS * PAYLOAD, answer, op + " from the requester process");
        if (op == Op.READ) {
          assertEquals(
              "OK",
              requester.ask("VERIFY " + local + " " + guard + " " + lines.size(), lines),
              "READ: the requester's region, payload and guards");
          assertEquals(
              -1,
              Pattern.verify(served.segment(), 0, REGION, data, 0),
              "READ: the source region untouched");
        } else {
          assertEquals(
              -1,
              RegionCheck.check(served.segment(), spans, guard),
              "WRITE: the source region, payload and guards");
          assertEquals(
              "OK",
              requester.ask("VERIFY " + local + " " + data + " 0", List.of()),
              "WRITE: the requester's region untouched");
        }
        moved += PARENTS * PAYLOAD;
      }
    }
    long[] rails = requesterRails(requester);
    long d0 = rails[0] - railsBefore[0];
    long d1 = rails[1] - railsBefore[1];
    assertTrue(d0 > 0 && d1 > 0, () -> "both rails carry payload: " + d0 + " / " + d1);
    assertEquals(moved, d0 + d1, "the requester's rail counters are the payload");
    long expected = moved;
    // The source counts a slice when its completion SEND lands, which may trail the receipt there.
    assertTrue(
        Await.until(
            Duration.ofSeconds(10),
            () ->
                source.counters().sourceBytesRead()
                        + source.counters().sourceBytesWritten()
                        - servedBefore
                    == expected),
        () ->
            "the source served what the requester moved: "
                + (source.counters().sourceBytesRead()
                    + source.counters().sourceBytesWritten()
                    - servedBefore)
                + " of "
                + expected);
  }

  /** The requester process's rail byte counters, soft0 and soft1. */
  private static long[] requesterRails(EngineProcess requester) throws Exception {
    long[] rails = new long[2];
    for (String kv : requester.call("COUNTERS").split("\\s+")) {
      if (kv.startsWith("rdmaSoft0Bytes=")) {
        rails[0] = Long.parseLong(kv.substring(kv.indexOf('=') + 1));
      } else if (kv.startsWith("rdmaSoft1Bytes=")) {
        rails[1] = Long.parseLong(kv.substring(kv.indexOf('=') + 1));
      }
    }
    return rails;
  }

  /** The requester provider's own payload byte count (both devices). */
  private static java.util.function.LongSupplier native0;

  /** READ and WRITE rounds of 16 parents of 4 MiB + 1 over both rails, both regions checked. */
  private static void rounds(
      TransferEngine requester,
      EngineProcess source,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      int rounds)
      throws Exception {
    long soft0 = RdmaTransferIT.railBytes(requester, "soft0");
    long soft1 = RdmaTransferIT.railBytes(requester, "soft1");
    long servedBefore = sourceBytes(source);
    long nativeBefore = native0.getAsLong();
    long moved = 0;
    for (int round = 0; round < rounds; round++) {
      for (Op op : Op.values()) {
        long guard = 0x600d_0000L + round * 2 + op.ordinal();
        long data = 0xfeed_0000L + round * 2 + op.ordinal();
        List<TransferRequest> requests = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        for (int i = 0; i < PARENTS; i++) {
          long localOffset = 5 + i * STRIDE;
          long remoteOffset = 4096 + 3 + i * STRIDE;
          requests.add(
              (op == Op.READ
                      ? TransferRequest.read(
                          local, localOffset, peer, remote, remoteOffset, PAYLOAD)
                      : TransferRequest.write(
                          local, localOffset, peer, remote, remoteOffset, PAYLOAD))
                  .withTransport(Transport.RDMA));
          spans.add(
              op == Op.READ
                  ? new Span(localOffset, PAYLOAD, data, remoteOffset)
                  : new Span(remoteOffset, PAYLOAD, data, localOffset));
        }
        if (op == Op.READ) {
          source.call("FILL " + remote + " " + data);
          Pattern.fill(local.segment(), 0, REGION, guard, 0);
        } else {
          source.call("FILL " + remote + " " + guard);
          Pattern.fill(local.segment(), 0, REGION, data, 0);
        }
        Batch batch = requester.allocateBatch(PARENTS);
        batch.submit(requests);
        BatchStatus s = batch.await(Duration.ofSeconds(120));
        batch.free();
        assertTrue(s.allCompleted(), () -> op + ": " + RdmaTransferIT.firstFailure(s));
        for (TaskResult t : s.tasks()) {
          assertEquals(PAYLOAD, t.bytes());
          assertEquals(op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, t.remoteEffect());
        }
        if (op == Op.READ) {
          assertEquals(
              -1, RegionCheck.check(local.segment(), spans, guard), "READ: requester region");
          assertEquals("OK", source.ask("VERIFY " + remote + " " + data + " 0", List.of()));
        } else {
          List<String> lines = new ArrayList<>();
          for (Span sp : spans) {
            lines.add(sp.offset() + " " + sp.length() + " " + sp.seed() + " " + sp.from());
          }
          assertEquals(
              "OK",
              source.ask("VERIFY " + remote + " " + guard + " " + lines.size(), lines),
              "WRITE: source region, payload and guards");
          assertEquals(
              -1,
              Pattern.verify(local.segment(), 0, REGION, data, 0),
              "WRITE: requester region untouched");
        }
        moved += PARENTS * PAYLOAD;
      }
    }
    long d0 = RdmaTransferIT.railBytes(requester, "soft0") - soft0;
    long d1 = RdmaTransferIT.railBytes(requester, "soft1") - soft1;
    assertTrue(d0 > 0 && d1 > 0, () -> "both rails carry payload: " + d0 + " / " + d1);
    assertEquals(moved, d0 + d1, "the rails' counters are the payload");
    assertEquals(
        moved,
        native0.getAsLong() - nativeBefore,
        "the provider's own byte counters match the engine's");
    // The source counts a slice when its completion SEND lands, which may trail the receipt here.
    long expected = moved;
    Await.until(
        Duration.ofSeconds(10), () -> sourceBytesQuietly(source) - servedBefore == expected);
    assertEquals(moved, sourceBytes(source) - servedBefore, "the source counted the same bytes");
  }

  /**
   * A segment of a replaced incarnation, once the table learned the new epoch: reopening it and
   * submitting on it over RDMA both fail EPOCH_MISMATCH before anything is admitted (zero bytes, no
   * remote effect, nothing to drain), no slice (so no QP and no WR) is made, and no byte moves.
   */
  private static void staleSegmentIsRefusedBeforeAnythingIsMade(
      TransferEngine requester, RegisteredMemory local, RemoteSegment stale, long region) {
    long dispatched = requester.counters().tasksDispatched(Transport.RDMA);
    long guard = 0xdead;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    TransferException reopen =
        assertThrows(
            TransferException.class,
            () -> requester.openSegment(stale.descriptor(), Duration.ofSeconds(10)));
    assertEquals(ErrorKind.EPOCH_MISMATCH, reopen.kind(), reopen::getMessage);
    Batch batch = requester.allocateBatch(2);
    TransferException submit =
        assertThrows(
            TransferException.class,
            () ->
                batch.submit(
                    List.of(
                        TransferRequest.read(local, 0, stale, region, 0, PAYLOAD)
                            .withTransport(Transport.RDMA),
                        TransferRequest.write(local, 8192, stale, region, 0, PAYLOAD)
                            .withTransport(Transport.RDMA))));
    assertEquals(ErrorKind.EPOCH_MISMATCH, submit.kind(), submit::getMessage);
    assertEquals(0, batch.status().tasks().size(), "nothing admitted");
    batch.free();
    assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
    assertEquals(
        dispatched,
        requester.counters().tasksDispatched(Transport.RDMA),
        "nothing was dispatched to the stale incarnation: no slice, no QP, no WR");
  }

  /** The sum of charge {@code name} over the owners of kind {@code kind} now. */
  static long charge(TransferEngine engine, String kind, String name) {
    OwnerView view = engine.ownerView();
    long sum = 0;
    for (OwnerView.Owner o : view.owners()) {
      if (o.kind().equals(kind)) {
        sum += o.charges().getOrDefault(name, 0L);
      }
    }
    return sum;
  }

  private static long sourceBytesQuietly(EngineProcess source) {
    try {
      return sourceBytes(source);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static long sourceBytes(EngineProcess source) throws Exception {
    long total = 0;
    for (String kv : source.call("COUNTERS").split("\\s+")) {
      if (kv.startsWith("sourceBytesRead=") || kv.startsWith("sourceBytesWritten=")) {
        total += Long.parseLong(kv.substring(kv.indexOf('=') + 1));
      }
    }
    return total;
  }
}
