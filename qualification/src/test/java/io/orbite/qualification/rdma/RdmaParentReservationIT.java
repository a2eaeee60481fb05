package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code rdma.maxGrants} counts whole-parent reservations (spec 002), on both sides. A multi-slice
 * task takes one source slot for all its slices, and a source whose slots are all reserved refuses
 * a task at its RESERVE, before any window of it exists: none of its slices moves a byte (with
 * per-window charges, some could have moved before another was refused). A requester holds at most
 * its own {@code rdma.maxGrants} parents reserved at once, and at most the source's (published in
 * its RAILS) at that source: the tasks beyond either wait, in order, for an earlier parent's DONE,
 * and all of them land.
 */
class RdmaParentReservationIT {
  private static final long REGION = 2L << 20;
  private static final long SLICE = 64 * 1024;
  private static final long TASK = 4 * SLICE; // four slices of the 64 KiB base block

  @Test
  void aMultiSliceTaskTakesOneSlotForAllItsSlicesAndOneBeyondTheSlotsIsRefusedWhole()
      throws Exception {
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source =
            TransferEngine.start(
                RdmaCleanupIT.withMaxGrants(RdmaTransferIT.rdmaConfig("parents-source"), 2));
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("parents-requester"), hold);
        TransferEngine other = TransferEngine.start(RdmaTransferIT.rdmaConfig("parents-other"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 71;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 72;
      long written = 73;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      // The first task (one slice) takes one of the source's two slots and is held on its lane.
      Batch first = requester.allocateBatch(1);
      first.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, SLICE)
                  .withTransport(Transport.RDMA)));
      assertTrue(hold.awaitFirstPost(), "the first task's slice is about to post");

      // A READ of four slices takes the other slot for all four (with a slot per window, only one
      // of its slices could have had one, and the other three would have been refused).
      Batch four = requester.allocateBatch(1);
      four.submit(
          List.of(
              TransferRequest.read(local, TASK, peer, remote.regionId(), TASK, TASK)
                  .withTransport(Transport.RDMA)));
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 2),
          "both slots are reserved: one per task");

      // Another requester's WRITE of four slices finds no slot: refused at its RESERVE, before
      // any window. (The first requester holds the two parents the source publishes it admits, so
      // a third of its own would wait on its side, never asked of the source.)
      RegisteredMemory otherLocal = other.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(otherLocal.segment(), 0, REGION, guard, 0);
      Pattern.fill(otherLocal.segment(), 2 * TASK, TASK, written, 2 * TASK);
      RemoteSegment otherPeer =
          other.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long refusedBefore = RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused");
      Batch refused = other.allocateBatch(1);
      refused.submit(
          List.of(
              TransferRequest.write(
                      otherLocal, 2 * TASK, otherPeer, remote.regionId(), 2 * TASK, TASK)
                  .withTransport(Transport.RDMA)));
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused") > refusedBefore),
          "the WRITE's reservation was refused while both slots were held");
      hold.letGo();

      BatchStatus s = refused.await(Duration.ofSeconds(30));
      refused.free();
      TaskResult r = s.tasks().getFirst();
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, r.errorKind(), r::toString);
      assertTrue(r.detail().contains("rdma.maxGrants"), r::toString);
      assertTrue(r.detail().contains("refused before any window"), r::toString);
      assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertTrue(r.locallyDrained(), r::toString);
      for (Batch b : List.of(first, four)) {
        BatchStatus done = b.await(Duration.ofSeconds(30));
        b.free();
        assertTrue(done.allCompleted(), done::toString);
      }

      // Requester: both READs landed whole; the WRITE's source bytes and all else unchanged.
      assertEquals(-1, Pattern.verify(local.segment(), 0, SLICE, data, 0), "first READ");
      assertEquals(-1, Pattern.verify(local.segment(), SLICE, TASK - SLICE, guard, SLICE), "gap");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, TASK, data, TASK), "four slices");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 2 * TASK, REGION - 2 * TASK, guard, 2 * TASK),
          "guard after");
      assertEquals(
          -1,
          Pattern.verify(otherLocal.segment(), 2 * TASK, TASK, written, 2 * TASK),
          "WRITE source");
      assertEquals(-1, Pattern.verify(otherLocal.segment(), 0, 2 * TASK, guard, 0), "before it");
      assertEquals(
          -1,
          Pattern.verify(otherLocal.segment(), 3 * TASK, REGION - 3 * TASK, guard, 3 * TASK),
          "after it");
      // Source: no slice of the refused WRITE landed.
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source untouched");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 0
                      && RdmaPeerIT.charge(source, "RdmaTransport", "directBytes") == 0
                      && source.owed().loans() == 0),
          "the slots, the bytes and the loans came back");
      assertEquals(
          5,
          RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound"),
          "five windows bound (the first task's and the four-slice READ's), none of the WRITE");
      assertTrue(source.quarantined().isEmpty(), source.quarantined()::toString);
    }
  }

  @Test
  void aRequesterHoldsAtMostTheParentsItsSourcePublishesThereAndTheRestWaitAndLand()
      throws Exception {
    int tasks = 6; // one slice each, against a source that admits two parents at once
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source =
            TransferEngine.start(
                RdmaCleanupIT.withMaxGrants(RdmaTransferIT.rdmaConfig("published-source"), 2));
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("published-requester"), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 91;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 92;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerParentsLimit") == 2),
          "the endpoint knows the source's rdma.maxGrants from its RAILS");
      long refusedBefore = RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused");
      List<TransferRequest> requests = new ArrayList<>();
      for (int i = 0; i < tasks; i++) {
        requests.add(
            TransferRequest.read(local, i * TASK, peer, remote.regionId(), i * TASK, SLICE)
                .withTransport(Transport.RDMA));
      }
      Batch batch = requester.allocateBatch(tasks);
      batch.submit(requests);
      try {
        assertTrue(hold.awaitFirstPost(), "a slice is about to post");
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () ->
                    RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 2
                        && RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerParentsReserved") == 2
                        && RdmaPeerIT.charge(requester, "RdmaTransport", "tasksAwaitingGrants")
                            >= tasks - 2),
            () ->
                "two parents reserved at the source, the other four waiting here: "
                    + requester.ownerView());
      } finally {
        hold.letGo();
      }
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      for (int i = 0; i < tasks; i++) {
        long at = i * TASK;
        assertEquals(-1, Pattern.verify(local.segment(), at, SLICE, data, at), "task " + i);
        assertEquals(
            -1,
            Pattern.verify(local.segment(), at + SLICE, TASK - SLICE, guard, at + SLICE),
            "guard after task " + i);
      }
      long end = tasks * TASK;
      assertEquals(
          -1, Pattern.verify(local.segment(), end, REGION - end, guard, end), "guard after all");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertEquals(
          refusedBefore,
          RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused"),
          "the source was never asked for a third parent");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerParentsReserved") == 0
                      && RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 0),
          "every unit came back at its DONE");
    }
  }

  @Test
  void tasksBeyondTheRequestersOwnParentBudgetWaitInOrderAndAllLand() {
    int tasks = 3; // three READs and three WRITEs of four slices each
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("queue-source"));
        TransferEngine requester =
            TransferEngine.start(
                RdmaCleanupIT.withMaxGrants(RdmaTransferIT.rdmaConfig("queue-requester"), 1))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 81;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 82;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      long written = 83;
      long writeAt = tasks * TASK;
      Pattern.fill(local.segment(), writeAt, tasks * TASK, written, writeAt);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      List<TransferRequest> requests = new ArrayList<>();
      for (int i = 0; i < tasks; i++) {
        requests.add(
            TransferRequest.read(local, i * TASK, peer, remote.regionId(), i * TASK, TASK)
                .withTransport(Transport.RDMA));
        requests.add(
            TransferRequest.write(
                    local, writeAt + i * TASK, peer, remote.regionId(), writeAt + i * TASK, TASK)
                .withTransport(Transport.RDMA));
      }
      Batch batch = requester.allocateBatch(requests.size());
      batch.submit(requests);
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      for (TaskResult r : s.tasks()) {
        assertEquals(TASK, r.bytes(), r::toString);
      }
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "tasksAwaitingGrants") > 0),
          "one parent reserved at a time: the others waited for it");
      assertEquals(-1, Pattern.verify(local.segment(), 0, tasks * TASK, data, 0), "every READ");
      assertEquals(
          -1, Pattern.verify(local.segment(), writeAt, tasks * TASK, written, writeAt), "sources");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, writeAt, data, 0), "source before");
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), writeAt, tasks * TASK, written, writeAt),
          "every WRITE");
      long end = writeAt + tasks * TASK;
      assertEquals(
          -1, Pattern.verify(remote.segment(), end, REGION - end, data, end), "source after");
      assertEquals(
          -1, Pattern.verify(local.segment(), end, REGION - end, guard, end), "requester after");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "parentsReserved") == 0),
          "every parent unit came back at its DONE");
    }
  }
}
