package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Engine replacement after a source-side MR cleanup failure (spec 001's "MR/MW cleanup failure and
 * engine replacement" profile): the source's persistent MR cannot be deregistered when its engine
 * closes, so the MR, its context and its memory are kept. A fresh engine then starts in the same
 * process on the same address: the requester's segment of the old incarnation is refused {@code
 * EPOCH_MISMATCH} before anything is admitted or any byte moves, a segment of the new incarnation
 * moves verified bytes over RDMA, and the old allocation still holds its bytes.
 */
class RdmaEngineReplacementIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void aFreshEngineOnTheSameAddressRefusesTheOldEpochAndTheKeptMemoryStaysRetained()
      throws Exception {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    int port;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    EngineConfig at = RdmaTransferIT.rdmaConfig("replaced-source");
    at = at.withListen(at.listen().withPort(port));
    try (TransferEngine requester =
        TransferEngine.start(RdmaTransferIT.rdmaConfig("replacement-requester"))) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);

      TransferEngine first = FaultInjection.start(at, hooks);
      RegisteredMemory firstMemory = first.allocate(REGION, Access.READ_WRITE);
      long firstData = 0x51;
      Pattern.fill(firstMemory.segment(), 0, REGION, firstData, 0);
      RemoteSegment stale = requester.openSegment(first.localSegment().endpoint(), WAIT);
      read(requester, local, stale, firstMemory.regionId(), firstData);
      // The owner view re-publishes every 200 ms: wait for the READ's MR to show.
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () -> RdmaPeerIT.charge(first, "RdmaContext", "mrsRegistered") > 0),
          "the source made an MR to serve the READ");

      // Every MR of the served range (one per rail) fails its deregistration, and keeps failing.
      faults.failDeregAt(firstMemory.segment().address(), 5, true);
      first.close(Duration.ofSeconds(30));
      Registration kept = (Registration) firstMemory;
      assertFalse(kept.released(), "the memory under the kept MRs was not freed");
      assertTrue(kept.loans() > 0, "each kept MR holds a loan on its registration");
      List<QuarantinedOwner> quarantined = first.quarantined();
      assertTrue(
          quarantined.stream().anyMatch(q -> q.owner().startsWith("RdmaContext")),
          () -> "the context whose MR was kept is quarantined: " + quarantined);

      try (TransferEngine second = TransferEngine.start(at)) {
        assertEquals(
            port, second.localSegment().port(), "the fresh engine listens where the old one did");
        assertEquals(port, stale.descriptor().port(), "and so did the old one");
        assertNotEquals(stale.descriptor().epoch(), second.localSegment().epoch(), "fresh epoch");
        RegisteredMemory secondMemory = second.allocate(REGION, Access.READ_WRITE);
        long secondData = 0x52;
        Pattern.fill(secondMemory.segment(), 0, REGION, secondData, 0);
        RemoteSegment fresh = requester.openSegment(second.localSegment().endpoint(), WAIT);
        assertEquals(second.localSegment().epoch(), fresh.descriptor().epoch());

        long dispatched = requester.counters().tasksDispatched(Transport.RDMA);
        long guard = 0xdead;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        TransferException reopen =
            assertThrows(
                TransferException.class,
                () -> requester.openSegment(stale.descriptor(), WAIT),
                "reopening the old incarnation");
        assertEquals(ErrorKind.EPOCH_MISMATCH, reopen.kind(), reopen::getMessage);
        Batch batch = requester.allocateBatch(2);
        TransferException submit =
            assertThrows(
                TransferException.class,
                () ->
                    batch.submit(
                        List.of(
                            TransferRequest.read(local, 0, stale, firstMemory.regionId(), 0, TASK)
                                .withTransport(Transport.RDMA),
                            TransferRequest.write(
                                    local, TASK, stale, firstMemory.regionId(), TASK, TASK)
                                .withTransport(Transport.RDMA))),
                "submitting to the old incarnation");
        assertEquals(ErrorKind.EPOCH_MISMATCH, submit.kind(), submit::getMessage);
        assertEquals(0, batch.status().tasks().size(), "nothing admitted");
        batch.free();
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
        assertEquals(
            dispatched,
            requester.counters().tasksDispatched(Transport.RDMA),
            "nothing was dispatched to the old incarnation: no slice, no QP, no WR");

        read(requester, local, fresh, secondMemory.regionId(), secondData);
        assertEquals(
            -1,
            Pattern.verify(secondMemory.segment(), 0, REGION, secondData, 0),
            "a READ leaves its source untouched");
      }
      assertFalse(kept.released(), "the old allocation is still retained");
      assertEquals(
          -1,
          Pattern.verify(firstMemory.segment(), 0, REGION, firstData, 0),
          "and still holds every byte it held");
    }
  }

  private static final Duration WAIT = Duration.ofSeconds(20);

  /** One RDMA READ of {@code TASK} bytes into the start of {@code local}, payload and guards. */
  private static void read(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      long region,
      long data) {
    long guard = data + 1;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    Batch batch = requester.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(local, 0, peer, region, 0, TASK).withTransport(Transport.RDMA)));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "payload");
    assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");
  }
}
