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
 * engine survives. Both sides' whole regions are checked after every round.
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
    io.orbite.engine.FaultHooks counting =
        new io.orbite.engine.FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return provider;
          }
        };
    try (TransferEngine requester =
        TransferEngine.start(
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
            assertTrue(debt > 0 && debt <= 8, "SQ debt stays at most 8 WRs per QP: " + debt);
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
    long dispatched = requester.counters().of(Transport.RDMA).tasksDispatched.sum();
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
        requester.counters().of(Transport.RDMA).tasksDispatched.sum(),
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
