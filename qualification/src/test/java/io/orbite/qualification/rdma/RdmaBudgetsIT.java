package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.io.DataInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The RDMA transport's refusals, each before any side effect, checked with both regions: the
 * source's own authority check (C2) on a range it no longer publishes, its {@code rdma.maxGrants}
 * budget, the requester's {@code rdma.maxEndpoints} budget, {@code rdma.maxDirectBytes} on both
 * sides (a requester task charged whole before any grant; a source window before it is bound), and
 * a stale epoch on the RDMA control connection (refused at its HELLO, before any QP exists).
 */
class RdmaBudgetsIT {
  private static final long REGION = 2L << 20;
  private static final long TASK = 64 * 1024;

  @Test
  void theSourceRefusesAGrantForARangeItNoLongerPublishesAndNothingMoves() {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("c2-source"));
        TransferEngine requester = TransferEngine.start(RdmaTransferIT.rdmaConfig("c2-req"))) {
      java.lang.foreign.MemorySegment own = java.lang.foreign.Arena.global().allocate(REGION, 4096);
      RegisteredMemory remote = source.register(own, Access.READ_WRITE);
      long data = 11;
      Pattern.fill(own, 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 12;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      source.unregister(remote);
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(local, TASK, peer, remote.regionId(), TASK, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      for (TaskResult r : s.tasks()) {
        assertEquals(ErrorKind.PERMISSION_DENIED, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
        assertTrue(r.detail().contains("refused"), r::toString);
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
      assertEquals(-1, Pattern.verify(own, 0, REGION, data, 0), "the source is untouched");
    }
  }

  @Test
  void aBurstBeyondTheSourcesPublishedGrantBudgetWaitsAtTheRequesterAndAllLand() {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("grants-source");
    tight =
        tight.withRdma(
            new io.orbite.config.RdmaConfig(
                true,
                "software",
                List.of(),
                tight.rdma().lanes(),
                "127.0.0.1",
                2,
                64,
                1,
                16,
                1024,
                3,
                10_000,
                30_000,
                300_000,
                1_000,
                10,
                false,
                List.of(),
                io.orbite.config.RdmaConfig.DEFAULT_GID_INDEX,
                io.orbite.config.RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
                io.orbite.config.RdmaSelectionConfig.defaults()));
    try (TransferEngine source = TransferEngine.start(tight);
        TransferEngine requester = TransferEngine.start(RdmaTransferIT.rdmaConfig("grants-req"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 21;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 22;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      int n = (int) (REGION / TASK);
      List<TransferRequest> reads = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        reads.add(
            TransferRequest.read(local, i * TASK, peer, remote.regionId(), i * TASK, TASK)
                .withTransport(Transport.RDMA));
      }
      Batch batch = requester.allocateBatch(n);
      batch.submit(reads);
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      for (TaskResult r : s.tasks()) {
        long at = r.index() * TASK;
        assertEquals(TASK, r.bytes(), r::toString);
        assertEquals(-1, Pattern.verify(local.segment(), at, TASK, data, at), r::toString);
      }
      assertEquals(
          0,
          RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused"),
          "the source publishes one parent at a time, and was never asked for a second");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "tasksAwaitingGrants") > 0),
          "the rest of the burst waited on the requester");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source untouched");
    }
  }

  @Test
  void anEndpointBeyondTheRequestersBudgetIsRefusedAndUnspecUsesTcp() {
    EngineConfig one = RdmaTransferIT.rdmaConfig("ep-req");
    var r = one.rdma();
    one =
        one.withRdma(
            new io.orbite.config.RdmaConfig(
                true,
                "software",
                List.of(),
                r.lanes(),
                "127.0.0.1",
                2,
                1,
                r.maxGrants(),
                r.maxSendWr(),
                r.maxCqes(),
                r.railErrors(),
                r.railErrorWindowMillis(),
                r.railCooldownMillis(),
                r.railMaxCooldownMillis(),
                r.railProbeIntervalMillis(),
                r.priorityAgingMillis(),
                r.priorityAgingPerEntry(),
                List.of(),
                io.orbite.config.RdmaConfig.DEFAULT_GID_INDEX,
                io.orbite.config.RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
                io.orbite.config.RdmaSelectionConfig.defaults()));
    try (TransferEngine a = TransferEngine.start(RdmaTransferIT.rdmaConfig("ep-a"));
        TransferEngine b = TransferEngine.start(RdmaTransferIT.rdmaConfig("ep-b"));
        TransferEngine requester = TransferEngine.start(one)) {
      RegisteredMemory remote = b.allocate(REGION, Access.READ_WRITE);
      long data = 31;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      requester.openSegment(a.localSegment().endpoint(), Duration.ofSeconds(20));
      RemoteSegment second =
          requester.openSegment(b.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(local, 0, second, remote.regionId(), 0, TASK)
                              .withTransport(Transport.RDMA))));
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains("rdma.maxEndpoints"), e::getMessage);
      assertEquals(0, batch.status().tasks().size(), "nothing admitted");
      long tcp = requester.counters().tasksDispatched(Transport.TCP);
      long guard = 32;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      batch.submit(List.of(TransferRequest.read(local, 0, second, remote.regionId(), 0, TASK)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(tcp + 1, requester.counters().tasksDispatched(Transport.TCP));
      assertEquals(Transport.TCP, s.tasks().getFirst().transport(), s::toString);
      assertEquals(Route.TCP_NO_RDMA_ENDPOINT, s.tasks().getFirst().route(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0));
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK));
    }
  }

  /**
   * {@code rdma.maxCqes}: each QP reserves its lane CQ's entries for every WR it could have
   * outstanding, so a CQ never overruns. A requester whose CQs (16 entries) hold one QP each (16
   * send WRs) reaches its first peer over RDMA; its second peer's endpoint is refused naming the
   * key, so a request naming RDMA is refused at submit and UNSPEC goes over TCP, bytes checked.
   */
  @Test
  void aCqWithoutEntriesForAnotherQpRefusesTheEndpointNamingMaxCqes() {
    EngineConfig small = RdmaTransferIT.rdmaConfig("cq-req");
    var r = small.rdma();
    small =
        small.withRdma(
            new io.orbite.config.RdmaConfig(
                true,
                "software",
                List.of(),
                r.lanes(),
                "127.0.0.1",
                2,
                r.maxEndpoints(),
                r.maxGrants(),
                16,
                16,
                r.railErrors(),
                r.railErrorWindowMillis(),
                r.railCooldownMillis(),
                r.railMaxCooldownMillis(),
                r.railProbeIntervalMillis(),
                r.priorityAgingMillis(),
                r.priorityAgingPerEntry(),
                List.of(),
                r.gidIndex(),
                r.maxDirectBytes(),
                r.selection()));
    try (TransferEngine a = TransferEngine.start(RdmaTransferIT.rdmaConfig("cq-a"));
        TransferEngine b = TransferEngine.start(RdmaTransferIT.rdmaConfig("cq-b"));
        TransferEngine requester = TransferEngine.start(small)) {
      RegisteredMemory onA = a.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory onB = b.allocate(REGION, Access.READ_WRITE);
      long data = 71;
      Pattern.fill(onA.segment(), 0, REGION, data, 0);
      Pattern.fill(onB.segment(), 0, REGION, data + 1, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 72;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment first =
          requester.openSegment(a.localSegment().endpoint(), Duration.ofSeconds(20));
      TaskResult overRdma =
          readOne(
              requester,
              TransferRequest.read(local, 0, first, onA.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA));
      assertTrue(overRdma.completed(), overRdma::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "the first peer's bytes");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");

      RemoteSegment second =
          requester.openSegment(b.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(local, 0, second, onB.regionId(), 0, TASK)
                              .withTransport(Transport.RDMA))));
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains("rdma.maxCqes"), e::getMessage);
      assertEquals(0, batch.status().tasks().size(), "nothing admitted");
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      batch.submit(List.of(TransferRequest.read(local, 0, second, onB.regionId(), 0, TASK)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(Transport.TCP, s.tasks().getFirst().transport(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data + 1, 0), "over TCP");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () ->
                  requester.ownerView().owners().stream()
                      .filter(o -> o.kind().equals("CqLane"))
                      .allMatch(o -> o.charges().get("cqesReserved") == 16)),
          () -> "every lane's CQ is full with the first endpoint's QP: " + requester.ownerView());
    }
  }

  private static final long MIB = 1L << 20;

  @Test
  void aTaskBeyondTheRequestersDirectBytesFailsBeforeAnyGrantAndOneThatFitsMovesAndReturnsIt() {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("direct-req");
    tight = tight.withRdma(tight.rdma().withMaxDirectBytes(MIB));
    long region = 4 * MIB;
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("direct-src"));
        TransferEngine requester = TransferEngine.start(tight)) {
      RegisteredMemory remote = source.allocate(region, Access.READ_WRITE);
      long data = 41;
      Pattern.fill(remote.segment(), 0, region, data, 0);
      RegisteredMemory local = requester.allocate(region, Access.READ_WRITE);
      long guard = 42;
      Pattern.fill(local.segment(), 0, region, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertEquals(MIB, RdmaPeerIT.charge(requester, "RdmaTransport", "directBytesLimit"));
      long slices = RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched");
      long bound = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");

      TaskResult big =
          readOne(
              requester,
              TransferRequest.read(local, 7, peer, remote.regionId(), 11, 2 * MIB)
                  .withTransport(Transport.RDMA));
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, big.errorKind(), big::toString);
      assertEquals(RemoteEffect.NONE, big.remoteEffect(), big::toString);
      assertEquals(0, big.bytes());
      assertTrue(big.locallyDrained(), big::toString);
      assertTrue(big.detail().contains("rdma.maxDirectBytes"), big::toString);
      assertEquals(Transport.RDMA, big.transport(), "refused by the RDMA transport itself");
      assertEquals(-1, Pattern.verify(local.segment(), 0, region, guard, 0), "nothing landed");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "directBytesRefused") == 1),
          "the refusal is counted");
      // The same owner-view report that shows the refusal: no slice queued, nothing charged.
      assertEquals(
          slices,
          RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched"),
          "no slice was queued");
      assertEquals(0, RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes"));

      TaskResult fits =
          readOne(
              requester,
              TransferRequest.read(local, 7, peer, remote.regionId(), 11, MIB)
                  .withTransport(Transport.RDMA));
      assertTrue(fits.completed(), fits::toString);
      assertEquals(MIB, fits.bytes());
      assertEquals(-1, Pattern.verify(local.segment(), 0, 7, guard, 0), "guard before");
      assertEquals(-1, Pattern.verify(local.segment(), 7, MIB, data, 11), "payload");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 7 + MIB, region - 7 - MIB, guard, 7 + MIB),
          "guard after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, region, data, 0), "source unchanged");
      // The 1 MiB READ is 16 slices of 64 KiB, each one window at the source; had the refused
      // task queued a slice or bound a window, these would pass 16 and never equal it.
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched") == slices + 16
                      && RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") == bound + 16),
          "only the READ that fit asked for grants: 16 slices, 16 windows");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0
                      && RdmaPeerIT.charge(source, "RdmaTransport", "directBytes") == 0),
          "every slice's share came back at its drain, and every window's");
    }
  }

  @Test
  void tasksBeyondTheRequestersFreeDirectBytesWaitForThemAndAllMoveWhole() {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("direct-wait-req");
    tight = tight.withRdma(tight.rdma().withMaxDirectBytes(MIB));
    long region = 8 * MIB;
    try (TransferEngine source =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("direct-wait-src"));
        TransferEngine requester = TransferEngine.start(tight)) {
      RegisteredMemory remote = source.allocate(region, Access.READ_WRITE);
      long data = 61;
      Pattern.fill(remote.segment(), 0, region, data, 0);
      RegisteredMemory local = requester.allocate(region, Access.READ_WRITE);
      long guard = 62;
      Pattern.fill(local.segment(), 0, region, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      // Four tasks of 1 MiB, each the whole budget: at most one holds it at a time, the others
      // wait for it in order, and every one completes.
      Batch batch = requester.allocateBatch(4);
      List<TransferRequest> reads = new java.util.ArrayList<>();
      for (int i = 0; i < 4; i++) {
        reads.add(
            TransferRequest.read(local, 3 + i * 2 * MIB, peer, remote.regionId(), i * MIB, MIB)
                .withTransport(Transport.RDMA));
      }
      batch.submit(reads);
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      long at = 0;
      for (int i = 0; i < 4; i++) {
        long start = 3 + i * 2 * MIB;
        assertEquals(-1, Pattern.verify(local.segment(), at, start - at, guard, at), "guard " + i);
        assertEquals(-1, Pattern.verify(local.segment(), start, MIB, data, i * MIB), "task " + i);
        at = start + MIB;
      }
      assertEquals(-1, Pattern.verify(local.segment(), at, region - at, guard, at), "last guard");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaTransport", "tasksAwaitingDirectBytes") >= 3
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytesWaiting") == 0),
          () -> "three tasks waited, and everything came back: " + requester.ownerView().owners());
      assertEquals(
          0, RdmaPeerIT.charge(requester, "RdmaTransport", "directBytesRefused"), "none refused");
    }
  }

  @Test
  void aTaskBeyondTheSourcesPublishedDirectBytesIsRefusedByTheRequesterBeforeItIsSent() {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("direct-src-tight");
    tight = tight.withRdma(tight.rdma().withMaxDirectBytes(256 * 1024));
    // One slice per MiB, so each task asks the source for one 1 MiB window.
    EngineConfig oneSlice = RdmaTransferIT.rdmaConfig("direct-src-req");
    oneSlice = oneSlice.withSlicing(oneSlice.slicing().withBaseBlockBytes(MIB));
    long region = 4 * MIB;
    try (TransferEngine source = TransferEngine.start(tight);
        TransferEngine requester = TransferEngine.start(oneSlice)) {
      RegisteredMemory remote = source.allocate(region, Access.READ_WRITE);
      long data = 51;
      Pattern.fill(remote.segment(), 0, region, data, 0);
      RegisteredMemory local = requester.allocate(region, Access.READ_WRITE);
      long guard = 52;
      Pattern.fill(local.segment(), 0, region, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long bound = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");

      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, MIB)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(local, 2 * MIB, peer, remote.regionId(), 2 * MIB, MIB)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.done(), s::toString);
      for (TaskResult r : s.tasks()) {
        assertEquals(ErrorKind.RESOURCE_EXHAUSTED, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained(), r::toString);
        assertTrue(r.detail().contains("rdma.maxDirectBytes"), r::toString);
        assertTrue(r.detail().contains("262144 B that peer reserves at most"), r::toString);
        assertTrue(r.detail().contains("never sent"), r::toString);
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, region, guard, 0), "requester untouched");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, region, data, 0), "source untouched");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "directBytesRefused") == 2),
          "both refusals are counted on the requester");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerMaxTaskBytes") == 262_144),
          "from the source's RAILS");
      // Nothing was asked of the source: no reservation refused, no window bound.
      assertEquals(0, RdmaPeerIT.charge(source, "RdmaTransport", "directBytesRefused"));
      assertEquals(0, RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused"));
      assertEquals(
          bound, RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound"), "no window bound");

      // A window that fits is bound, served and released: the source's charge returns to 0.
      TaskResult fits =
          readOne(
              requester,
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, 256 * 1024)
                  .withTransport(Transport.RDMA));
      assertTrue(fits.completed(), fits::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, 256 * 1024, data, 0), "payload");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 256 * 1024, region - 256 * 1024, guard, 256 * 1024),
          "guard after");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") == bound + 1),
          "one window bound, for the READ that fit");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(source, "RdmaTransport", "directBytes") == 0
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0),
          "the window's bytes came back when it was released");
    }
  }

  /**
   * A source whose direct bytes are held by one requester's reservation refuses another's task that
   * fits its published limit but not what is free, after waiting 5 s for room: {@code
   * RESOURCE_EXHAUSTED}, before any window, nothing moved; the same task lands once the first was
   * let go.
   */
  @Test
  void aSourceRefusesATaskThatDoesNotFitItsFreeDirectBytesWithinFiveSecondsBeforeAnyWindow()
      throws Exception {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("direct-wait-source");
    tight = tight.withRdma(tight.rdma().withMaxDirectBytes(256 * 1024));
    HeldPosts hold = new HeldPosts();
    long region = MIB;
    try (TransferEngine source = TransferEngine.start(tight);
        TransferEngine first =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("direct-wait-first"), hold);
        TransferEngine second =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("direct-wait-second"))) {
      RegisteredMemory remote = source.allocate(region, Access.READ_WRITE);
      long data = 61;
      Pattern.fill(remote.segment(), 0, region, data, 0);
      long guard = 62;
      RegisteredMemory firstLocal = first.allocate(region, Access.READ_WRITE);
      Pattern.fill(firstLocal.segment(), 0, region, guard, 0);
      RegisteredMemory secondLocal = second.allocate(region, Access.READ_WRITE);
      Pattern.fill(secondLocal.segment(), 0, region, guard, 0);
      RemoteSegment firstPeer =
          first.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      RemoteSegment secondPeer =
          second.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      // 192 KiB of the source's 256 KiB reserved by the first requester, held on its lane.
      long held = 192 * 1024;
      Batch firstBatch = first.allocateBatch(1);
      firstBatch.submit(
          List.of(
              TransferRequest.read(firstLocal, 0, firstPeer, remote.regionId(), 0, held)
                  .withTransport(Transport.RDMA)));
      TaskResult refused;
      try {
        assertTrue(hold.awaitFirstPost(), "the first task's slice is about to post");
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> RdmaPeerIT.charge(source, "RdmaTransport", "directBytes") == held),
            "the first task's whole length is charged at the source");
        long bound = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");
        // 128 KiB fits the 256 KiB the source publishes, but not the 64 KiB free there.
        refused =
            readOne(
                second,
                TransferRequest.read(secondLocal, 0, secondPeer, remote.regionId(), 0, 128 * 1024)
                    .withTransport(Transport.RDMA));
        assertEquals(
            bound,
            RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound"),
            "no window bound for it");
      } finally {
        hold.letGo();
      }
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, refused.errorKind(), refused::toString);
      assertEquals(RemoteEffect.NONE, refused.remoteEffect(), refused::toString);
      assertEquals(0, refused.bytes(), refused::toString);
      assertTrue(refused.detail().contains("rdma.maxDirectBytes"), refused::toString);
      assertEquals(-1, Pattern.verify(secondLocal.segment(), 0, region, guard, 0), "untouched");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "directBytesRefused") == 1),
          "the source counted its refusal");

      BatchStatus s = firstBatch.await(Duration.ofSeconds(30));
      firstBatch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(firstLocal.segment(), 0, held, data, 0), "first READ");
      assertEquals(
          -1, Pattern.verify(firstLocal.segment(), held, region - held, guard, held), "after it");
      TaskResult again =
          readOne(
              second,
              TransferRequest.read(secondLocal, 0, secondPeer, remote.regionId(), 0, 128 * 1024)
                  .withTransport(Transport.RDMA));
      assertTrue(again.completed(), again::toString);
      assertEquals(-1, Pattern.verify(secondLocal.segment(), 0, 128 * 1024, data, 0), "landed");
      assertEquals(
          -1,
          Pattern.verify(secondLocal.segment(), 128 * 1024, region - 128 * 1024, guard, 128 * 1024),
          "guard after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, region, data, 0), "source unchanged");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "directBytes") == 0),
          "every charge came back");
    }
  }

  private static TaskResult readOne(TransferEngine requester, TransferRequest request) {
    Batch batch = requester.allocateBatch(1);
    batch.submit(List.of(request));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.done(), s::toString);
    return s.tasks().getFirst();
  }

  @Test
  void aStaleEpochOnTheRdmaControlConnectionIsRefusedAtItsHello() throws Exception {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("hello-src"))) {
      var self = source.localSegment();
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(self.host(), self.port()), 5_000);
        s.setSoTimeout(10_000);
        ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
        long stale = self.epoch() ^ 0x5a5a;
        FrameCodec.encode(
            hello, 0, FrameType.HELLO, 0, 0, 1, stale, 0x1234, 0, Transport.RDMA.code());
        s.getOutputStream().write(hello.array());
        byte[] ack = new byte[FrameCodec.HEADER_BYTES];
        new DataInputStream(s.getInputStream()).readFully(ack);
        ByteBuffer a = ByteBuffer.wrap(ack);
        assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
        assertEquals(ErrorKind.EPOCH_MISMATCH.code(), FrameCodec.status(a, 0));
        assertEquals(self.epoch(), FrameCodec.epoch(a, 0), "the answer names the live epoch");
        assertEquals(-1, s.getInputStream().read(), "and the connection is closed");
      }
      assertTrue(
          io.orbite.qualification.Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "sourceSessions") == 0),
          "no session is left");
    }
  }
}
