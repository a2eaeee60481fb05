package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.ShmConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What UNSPEC picks, proved by the per-transport counters and checked bytes, and reported in each
 * task's result with the reason ({@link Route}): SHM for memory a same-host peer exports, else RDMA
 * while a rail pair to the peer is healthy, else TCP (no healthy rail, or RDMA off here); a request
 * naming TCP gets TCP, REQUESTED, even while a rail is healthy.
 */
class RdmaSelectionIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void unspecPicksShmForExportedMemoryThenRdmaThenTcpWhenNoRailIsHealthy() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    EngineConfig sourceConfig =
        RdmaTransferIT.rdmaConfig("select-source").withShm(ShmConfig.defaults().withEnabled(true));
    try (TransferEngine source = TransferEngine.start(sourceConfig);
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("select-requester"), hooks)) {
      RegisteredMemory exported = source.allocate(REGION, Access.READ_WRITE);
      java.lang.foreign.MemorySegment own = java.lang.foreign.Arena.global().allocate(REGION, 4096);
      RegisteredMemory plain = source.register(own, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      assertEquals(
          Transport.SHM,
          read(requester, local, peer, exported, Transport.UNSPEC, Route.SHM_SAME_HOST),
          "exported: SHM");
      assertEquals(
          Transport.RDMA,
          read(requester, local, peer, plain, Transport.UNSPEC, Route.RDMA_HEALTHY_RAIL),
          "plain: RDMA");
      assertEquals(
          Transport.TCP,
          read(requester, local, peer, plain, Transport.TCP, Route.REQUESTED),
          "TCP named while a rail is healthy: TCP, because it was asked for");

      // Both rails' ports go down: the monitor opens every pair, so UNSPEC falls back to TCP.
      faults.setPortState("soft0", 1, Ibv.PORT_DOWN);
      faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "railPairsOpen") == 2),
          "both pairs opened");
      assertEquals(
          Transport.TCP,
          read(requester, local, peer, plain, Transport.UNSPEC, Route.TCP_NO_HEALTHY_RAIL),
          "no rail: TCP");
    }
  }

  @Test
  void unspecUsesTcpWhenThisEngineHasRdmaOff() {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("off-source"));
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("off-requester"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertEquals(
          Transport.TCP,
          read(requester, local, peer, remote, Transport.UNSPEC, Route.TCP_RDMA_NOT_ENABLED));
    }
  }

  /**
   * One READ of 1 MiB naming {@code transport}, its bytes checked in full with its guards, its
   * result reporting the transport whose dispatch counter moved and {@code route}; returns that
   * transport.
   */
  private static Transport read(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      RegisteredMemory src,
      Transport transport,
      Route route) {
    long data = System.nanoTime();
    long guard = data + 1;
    Pattern.fill(src.segment(), 0, REGION, data, 0);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    long[] before = dispatched(requester);
    Batch batch = requester.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(local, 7, peer, src.regionId(), 11, TASK)
                .withTransport(transport)));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    assertEquals(-1, Pattern.verify(local.segment(), 0, 7, guard, 0), "guard before");
    assertEquals(-1, Pattern.verify(local.segment(), 7, TASK, data, 11), "payload");
    assertEquals(
        -1, Pattern.verify(local.segment(), 7 + TASK, REGION - 7 - TASK, guard, 7 + TASK), "after");
    long[] after = dispatched(requester);
    Transport moved = null;
    for (Transport t : Transport.values()) {
      if (after[t.ordinal()] != before[t.ordinal()]) {
        assertEquals(null, moved, "one transport carried the task");
        moved = t;
      }
    }
    TaskResult result = s.tasks().getFirst();
    assertEquals(moved, result.transport(), "the result names the transport that carried it");
    assertEquals(route, result.route(), result::toString);
    return moved;
  }

  private static long[] dispatched(TransferEngine engine) {
    long[] out = new long[Transport.values().length];
    for (Transport t : Transport.values()) {
      out[t.ordinal()] = engine.counters().tasksDispatched(t);
    }
    return out;
  }
}
