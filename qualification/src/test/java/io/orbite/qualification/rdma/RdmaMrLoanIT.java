package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * A persistent MR holds a loan on its registration for as long as it exists, so unregistering a
 * range the device may still reach never frees its memory: the unregister hides the range, the
 * context's MR sweep deregisters the MR once no work holds the range, and only then is the memory
 * freed. An MR whose deregistration fails keeps its loan for good, so the unregister ends {@code
 * UNQUIESCED} with the memory retained, bytes and all.
 */
class RdmaMrLoanIT {
  private static final long REGION = 2L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void unregisteringMemoryWithAnMrFreesItOnlyAfterTheMrIsGone() {
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source =
            FaultInjection.start(
                RdmaTransferIT.rdmaConfig("loan-source"), RdmaTransferIT.hooks(faults));
        TransferEngine requester =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("loan-requester"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 0x61;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.localSegment().endpoint(), WAIT);
      read(requester, local, peer, remote.regionId(), data);
      Registration served = (Registration) remote;
      assertTrue(served.loans() > 0, "the source's MRs hold loans on the range they name");
      int deregsBefore = faults.destroyCalls(SoftFaults.Kind.MR);

      source.unregister(remote);
      int deregs = faults.destroyCalls(SoftFaults.Kind.MR) - deregsBefore;
      assertTrue(served.released(), "the unregister returned once the MRs were gone");
      assertEquals(0, served.loans(), "and every MR gave its loan back");
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () ->
                  RdmaPeerIT.charge(source, "RdmaContext", "mrs") == 0
                      && RdmaPeerIT.charge(source, "RdmaContext", "mrsKept") == 0),
          "no MR is left on the source, and none was kept");
      // The provider's own count: each MR the READ made (as the contexts publish them) was
      // deregistered once, before the unregister returned.
      long mrs = RdmaPeerIT.charge(source, "RdmaContext", "mrsRegistered");
      assertTrue(mrs > 0, "the READ made the source's MRs");
      assertEquals(mrs, deregs, "one deregistration per MR");
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "the READ's bytes");
    }
  }

  @Test
  void anMrThatCannotBeDeregisteredKeepsUnregisteredMemoryRetained() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    EngineConfig quick = RdmaTransferIT.rdmaConfig("kept-source");
    quick = quick.withTimeouts(quick.timeouts().withDestructionWindowMillis(1_000));
    try (TransferEngine source = FaultInjection.start(quick, hooks);
        TransferEngine requester =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("kept-requester"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 0x62;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.localSegment().endpoint(), WAIT);
      read(requester, local, peer, remote.regionId(), data);
      Registration served = (Registration) remote;

      int deregsBefore = faults.destroyCalls(SoftFaults.Kind.MR);
      faults.failDeregAt(remote.segment().address(), 5, true);
      TransferException refused =
          assertThrows(TransferException.class, () -> source.unregister(remote));
      assertEquals(ErrorKind.UNQUIESCED, refused.kind(), refused::getMessage);
      assertFalse(served.released(), "the memory the device may still reach was not freed");
      assertTrue(served.loans() > 0, "the kept MRs hold their loans");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "and it holds its bytes");
      assertTrue(
          Await.until(
              Duration.ofSeconds(2), () -> RdmaPeerIT.charge(source, "RdmaContext", "mrsKept") > 0),
          "the context shows the kept MRs");
      long mrs = RdmaPeerIT.charge(source, "RdmaContext", "mrsRegistered");
      assertTrue(mrs > 0, "the READ made the source's MRs");
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () -> RdmaPeerIT.charge(source, "RdmaContext", "mrsKept") == mrs),
          "every MR of the range kept");
      assertEquals(
          deregsBefore + mrs,
          faults.destroyCalls(SoftFaults.Kind.MR),
          "the provider was asked once per MR, and never again");
      List<QuarantinedOwner> quarantined = source.quarantined();
      assertTrue(
          quarantined.stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.REGISTRATION),
          () -> "the registration is quarantined, memory retained: " + quarantined);
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
