package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.NicLoadStats;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Port rates are read again at every monitor scan (spec 002): a port whose link renegotiates from
 * 4x EDR (100 Gb/s) to 1x EDR (25 Gb/s) is seen within a few scans, with no traffic and no event.
 * The selector's seed follows (its estimates scaled with it), so the next multi-slice task is split
 * 12 : 52 by the new weights instead of 32 : 32, every byte checked; and a peer that connects after
 * the change is told the new rate in this engine's RAILS.
 */
class RdmaPortRateIT {
  private static final long REGION = 8L << 20;
  private static final long TASK = 4L << 20; // 64 slices of the 64 KiB base block
  private static final long EDR_4X = 100_000_000_000L / 8;
  private static final long EDR_1X = 25_000_000_000L / 8;

  @Test
  void aRenegotiatedLinkIsReadAtTheNextScansAndReweighsSelection() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        };
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("rate-source"));
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("rate-requester"), hooks);
        TransferEngine later = TransferEngine.start(RdmaTransferIT.rdmaConfig("rate-later"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 31;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 32;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertEquals(
          List.of(EDR_4X, EDR_4X),
          requester.nicLoadStats().stream().map(NicLoadStats::linkBytesPerSecond).toList(),
          "both rails start at 4x EDR");

      faults.setPortRate("soft0", 1, 1, SoftFabric.SPEED_EDR); // 1x: a quarter of the rate
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> {
                List<NicLoadStats> n = requester.nicLoadStats();
                return n.get(0).linkBytesPerSecond() == EDR_1X
                    && n.get(0).selectionBytesPerSecond() == EDR_1X
                    && n.get(0).transmitBytesPerSecond() == EDR_1X
                    && n.get(1).linkBytesPerSecond() == EDR_4X
                    && n.get(1).selectionBytesPerSecond() == EDR_4X;
              }),
          () -> "soft0's new rate is its seed, its estimates scaled: " + requester.nicLoadStats());

      long[] before = allocated(requester);
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 64, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 64, TASK, data, 0), "every byte");
      assertEquals(-1, Pattern.verify(local.segment(), 0, 64, guard, 0), "guard before");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 64 + TASK, REGION - 64 - TASK, guard, 64 + TASK),
          "guard after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      // Weights 1 / score: 1 : 4, so floor(64 / 5) = 12 slices and floor(64 * 4 / 5) = 51, the
      // leftover to the best rail.
      assertSplit(requester, before, 12, 52);

      // A peer that connects now is told soft0's new rate.
      RemoteSegment back =
          later.openSegment(requester.localSegment().endpoint(), Duration.ofSeconds(20));
      assertTrue(back != null);
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(later, "RdmaEndpoint", "peerLinkBytesPerSecond")
                      == EDR_1X + EDR_4X),
          () -> "the RAILS it read: " + later.ownerView());
    }
  }

  /**
   * The peer's published link rates cap each pair in the score: a source whose soft0 runs at 1x EDR
   * gets 12 of a 64-slice task over the requester's soft0 (itself at 4x EDR) and 52 over soft1,
   * every byte checked; the requester's own estimates are unchanged.
   */
  @Test
  void aSlowerPeerRailWeighsItsPairDownInTheSplit() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        };
    try (TransferEngine source =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("peer-rate-source"), hooks);
        TransferEngine requester =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("peer-rate-requester"))) {
      faults.setPortRate("soft0", 1, 1, SoftFabric.SPEED_EDR);
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              // Empty until the source's rails have opened and its contexts published their rows.
              () ->
                  !source.nicLoadStats().isEmpty()
                      && source.nicLoadStats().get(0).linkBytesPerSecond() == EDR_1X),
          () -> "the source read its new rate: " + source.nicLoadStats());
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 33;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 34;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerLinkBytesPerSecond")
                      == EDR_1X + EDR_4X),
          () -> "the source's RAILS carried it: " + requester.ownerView());
      long[] before = allocated(requester);
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "every byte");
      assertEquals(
          -1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guard after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertSplit(requester, before, 12, 52); // the pair to the slower peer rail gets 12
      assertEquals(
          List.of(EDR_4X, EDR_4X),
          requester.nicLoadStats().stream().map(NicLoadStats::linkBytesPerSecond).toList(),
          "the requester's own rails are unchanged");
    }
  }

  /**
   * The slices of one 64-slice task were assigned {@code first} to soft0 and {@code second} to
   * soft1 since {@code before} (by {@code allocatedBytes}, once the owner view, re-published every
   * 200 ms, shows the whole task).
   */
  private static void assertSplit(TransferEngine requester, long[] before, int first, int second) {
    assertTrue(
        Await.until(
            Duration.ofSeconds(5),
            () -> {
              long[] a = allocated(requester);
              return a[0] + a[1] - before[0] - before[1] == TASK;
            }),
        () -> "the task's slices all assigned: " + requester.nicLoadStats());
    long[] after = allocated(requester);
    assertEquals(first * 65_536L, after[0] - before[0], "soft0's share");
    assertEquals(second * 65_536L, after[1] - before[1], "soft1's share");
  }

  private static long[] allocated(TransferEngine engine) {
    return engine.nicLoadStats().stream().mapToLong(NicLoadStats::allocatedBytes).toArray();
  }
}
