package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A source session's owner actor that throws (a bug, injected through {@link
 * FaultHooks#beforeOwnerMessage}) turns quarantined instead of stopping: it is listed once, its row
 * says so, its session is closed (the requester's task fails unsent, nothing copied), and neither
 * the source side nor the engine waits on it: a new requester is served whole, and the engine
 * closes.
 */
class RdmaOwnerFailureIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 256 * 1024;

  /** Throws once, in the next message a source session's owner handles after it is armed. */
  private static final class FailingOwner implements FaultHooks {
    final AtomicBoolean armed = new AtomicBoolean();

    @Override
    public void beforeOwnerMessage(String owner, Object message) {
      // Supervised as "RdmaSourceSession <session>": one owner name per session.
      if (owner.startsWith("RdmaSourceSession ") && armed.compareAndSet(true, false)) {
        throw new IllegalStateException("injected failure in the session's owner");
      }
    }
  }

  @Test
  void aSessionOwnerThatThrowsIsQuarantinedItsSessionClosedAndTheSourceServesOn() throws Exception {
    FailingOwner failing = new FailingOwner();
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("owner-fail-source"), failing);
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("owner-fail-requester"), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 41;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 42;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      TaskResult r;
      try {
        assertTrue(hold.awaitFirstPost(), "the task is reserved at the source, its post held");
        failing.armed.set(true); // the owner's next tick throws
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () ->
                    source.quarantined().stream()
                        .anyMatch(q -> q.kind() == QuarantinedOwner.Kind.OWNER)),
            () -> "listed: " + source.quarantined());
        // Its session closed and its thread ended (its QPs destroyed, the control connection
        // closed long before, so the requester's endpoint is closing) before the held post goes on.
        assertTrue(
            Await.until(
                Duration.ofSeconds(10),
                () -> RdmaPeerIT.charge(source, "RdmaTransport", "sourceSessions") == 0),
            () -> "the transport was told the session ended: " + source.ownerView());
      } finally {
        hold.letGo();
      }
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      r = s.tasks().getFirst();
      assertFalse(r.completed(), r::toString);
      assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertTrue(r.locallyDrained(), r::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing copied");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");

      List<QuarantinedOwner> listed =
          source.quarantined().stream()
              .filter(q -> q.kind() == QuarantinedOwner.Kind.OWNER)
              .toList();
      assertEquals(1, listed.size(), listed::toString);
      QuarantinedOwner q = listed.getFirst();
      assertTrue(q.owner().startsWith("RdmaSourceSession rdma source session"), q::toString);
      assertTrue(q.reason().contains("injected failure"), q::toString);
      assertTrue(q.reason().contains("it keeps what it held"), q::toString);
      OwnerView.Owner row =
          source.ownerView().owners().stream()
              .filter(o -> o.kind().equals("RdmaSourceSession"))
              .findFirst()
              .orElse(null);
      assertNotNull(row, () -> "its row stays: " + source.ownerView());
      assertEquals(OwnerState.QUARANTINED, row.state(), row::toString);
      assertTrue(row.detail().contains("injected failure"), row::toString);

      // The source serves on: a fresh requester's READ lands whole.
      try (TransferEngine again =
          TransferEngine.start(RdmaTransferIT.rdmaConfig("owner-fail-again"))) {
        // RdmaCleanupIT's READ: 1 MiB, the whole of remote, into 4 MiB with its guards checked.
        RegisteredMemory mine = again.allocate(4L << 20, Access.READ_WRITE);
        RdmaCleanupIT.read(again, mine, source, remote, data);
      }
    }
  }
}
