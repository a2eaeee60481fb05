package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The monitor acts on an async event when it comes, not only at its one-second scan: each rail has
 * a thread waiting on its context's event descriptor ({@code awaitAsyncEvent}), which has the
 * context scan at once. Idle, it starts no scan. A port flap (DOWN, then ACTIVE again before any
 * scan could see the port state) leaves only its PORT_ERR event: the scan it starts fences the
 * rail's route, and the rail recovers once its port stays ACTIVE; READs over RDMA then land.
 */
class RdmaAsyncEventIT {
  private static final long REGION = 1L << 20;

  @Test
  void aPortFlapIsSeenByTheScanItsEventStartsAndTheRailRecovers() {
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("event-source"));
        TransferEngine requester =
            FaultInjection.start(
                RdmaTransferIT.rdmaConfig("event-requester"), RdmaTransferIT.hooks(faults))) {
      // Idle: the periodic scans run, and no event starts one.
      long ticks = RdmaPeerIT.charge(requester, "RdmaTransport", "monitorTicks");
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "monitorTicks") >= ticks + 4),
          "the monitor scans every second");
      assertEquals(0, RdmaPeerIT.charge(requester, "RdmaTransport", "eventScans"), "none by event");

      faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "eventScans") >= 1),
          () -> "the PORT_ERR event started a scan: " + requester.ownerView());
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "routeFences") >= 1),
          () -> "the flap fenced soft1's route: " + context(requester, "soft1"));
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () ->
                  context(requester, "soft1")
                      .map(
                          c ->
                              c.state() == OwnerState.ACTIVE
                                  && c.charges().get("routeRecoveries") >= 1)
                      .orElse(false)),
          () -> "soft1 recovered with its port ACTIVE: " + context(requester, "soft1"));

      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 91;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 92;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 4096, peer, remote.regionId(), 4096, REGION / 2)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, 4096, guard, 0), "guard before");
      assertEquals(-1, Pattern.verify(local.segment(), 4096, REGION / 2, data, 4096), "payload");
      long end = 4096 + REGION / 2;
      assertEquals(-1, Pattern.verify(local.segment(), end, REGION - end, guard, end), "guard");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
    }
  }

  private static Optional<OwnerView.Owner> context(TransferEngine engine, String device) {
    return engine.ownerView().owners().stream()
        .filter(o -> o.kind().equals("RdmaContext") && o.path().endsWith("context-" + device))
        .findFirst();
  }
}
