package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.FaultHooks;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * MR cleanup failure and engine replacement: the requester's persistent MR cannot be deregistered
 * when its engine closes. The MR is kept (never deregistered again), its context is quarantined,
 * and its registration stays loaned, so its memory is never freed under the device: it still holds
 * its bytes. A fresh engine in the same process, with a fresh epoch, then moves verified bytes over
 * RDMA to the same source.
 */
class RdmaCleanupIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void anMrThatCannotBeDeregisteredKeepsItsMemoryAndAFreshEngineCarriesOn() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        };
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("mr-source"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 71;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);

      TransferEngine first = TransferEngine.start(RdmaTransferIT.rdmaConfig("mr-first"), hooks);
      RegisteredMemory local = first.allocate(REGION, Access.READ_WRITE);
      long firstEpoch = first.localSegment().epoch();
      read(first, local, source, remote, data);
      faults.failNextDestroy(SoftFaults.Kind.MR, 5, true);
      first.close(Duration.ofSeconds(30));

      Registration kept = (Registration) local;
      assertFalse(kept.released(), "the memory under the kept MR was not freed");
      assertTrue(kept.loans() > 0, "the kept MR holds a loan on its registration");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, TASK, data, 0),
          "and it still holds the bytes the READ brought");
      List<QuarantinedOwner> quarantined = first.quarantined();
      assertTrue(
          quarantined.stream().anyMatch(q -> q.owner().startsWith("RdmaContext")),
          () -> "its context is quarantined: " + quarantined);

      try (TransferEngine second = TransferEngine.start(RdmaTransferIT.rdmaConfig("mr-second"))) {
        assertNotEquals(firstEpoch, second.localSegment().epoch(), "a fresh epoch");
        RegisteredMemory fresh = second.allocate(REGION, Access.READ_WRITE);
        read(second, fresh, source, remote, data);
      }
    }
  }

  /**
   * A CQ, then (in a second engine) a PD, whose destroy fails when its engine closes: the context
   * is quarantined naming the call, what depends on the failed object is kept (a failed CQ stops
   * the PD and the context from being released), and a second close retries nothing.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(
      value = SoftFaults.Kind.class,
      names = {"CQ", "PD"})
  void aFailedCqOrPdDestroyQuarantinesItsContextAndIsNeverRetried(SoftFaults.Kind kind) {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        };
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("dep-source"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 81;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      TransferEngine engine = TransferEngine.start(RdmaTransferIT.rdmaConfig("dep-" + kind), hooks);
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      read(engine, local, source, remote, data);
      faults.failNextDestroy(kind, 5, true);
      engine.close(Duration.ofSeconds(30));
      String call = kind == SoftFaults.Kind.CQ ? "ibv_destroy_cq" : "ibv_dealloc_pd";
      List<QuarantinedOwner> q = engine.quarantined();
      assertTrue(
          q.stream()
              .anyMatch(o -> o.owner().startsWith("RdmaContext") && o.reason().contains(call)),
          () -> "the context is quarantined naming " + call + ": " + q);
      engine.close(Duration.ofSeconds(5)); // a second close: nothing is destroyed again
      assertEquals(q, engine.quarantined(), "nothing changed, nothing retried");
      assertTrue(((Registration) local).released(), "no MR was kept: the memory was freed");
    }
  }

  /** One RDMA READ of 1 MiB into {@code local}, its bytes and guards checked. */
  private static void read(
      TransferEngine requester,
      RegisteredMemory local,
      TransferEngine source,
      RegisteredMemory remote,
      long data) {
    long guard = data + 1;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    RemoteSegment peer =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
    Batch batch = requester.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                .withTransport(Transport.RDMA)));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "payload");
    assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");
  }
}
