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
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The RDMA transport's owners in the owner view (what the dashboard's tree renders): each rail's CQ
 * lanes below their context, each source session below the transport, and below it the owner actor
 * of each grant held past the session owner's tick (counting the task's windows), for as long as it
 * holds the task's loan.
 */
class RdmaOwnerRowsIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 64 * 1024;

  @Test
  void lanesSessionsAndGrantsAppearBelowTheirOwnersAndLeaveWithThem() throws Exception {
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("rows-source"));
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("rows-requester"), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 81;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 82;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      // Two rails of three lanes each: six CqLane rows, each below its rail's context.
      int lanes = requester.config().rdma().lanes();
      assertTrue(
          Await.until(Duration.ofSeconds(2), () -> rows(requester, "CqLane").size() == 2 * lanes),
          () -> "every lane has its row: " + rows(requester, "CqLane"));
      // Each row is published by the lane's owner actor, its figures again every 100 ms.
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () -> rows(requester, "CqLane").stream().allMatch(l -> l.charges().get("qps") > 0)),
          () -> "every lane's QPs are counted: " + rows(requester, "CqLane"));
      for (OwnerView.Owner lane : rows(requester, "CqLane")) {
        assertTrue(
            lane.path().matches(".*/transport-rdma/context-soft[01]/lane-[0-9]+"), lane::path);
        assertEquals(OwnerState.ACTIVE, lane.state(), lane::toString);
      }
      assertTrue(
          Await.until(Duration.ofSeconds(2), () -> rows(source, "RdmaSourceSession").size() == 1),
          () -> "the source shows the session serving the requester: " + source.ownerView());

      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      assertTrue(hold.awaitFirstPost(), "the payload is about to be posted");
      // Held past a second, the task's reservation is promoted: its grant gets an owner actor.
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  rows(source, "RdmaGrant").size() == 1
                      && rows(source, "RdmaGrant").getFirst().charges().get("windows") == 1),
          () -> "the reserved task's grant has its row, with its window: " + source.ownerView());
      OwnerView.Owner grant = rows(source, "RdmaGrant").getFirst();
      OwnerView.Owner session = rows(source, "RdmaSourceSession").getFirst();
      assertTrue(grant.path().startsWith(session.path() + "/grant-"), grant::path);
      assertEquals(TASK, grant.charges().get("bytes"), grant::toString);
      assertEquals(remote.regionId(), grant.charges().get("regionId"), grant::toString);
      assertEquals(OwnerState.ACTIVE, grant.state(), grant::toString);
      assertTrue(
          Await.until(
              Duration.ofSeconds(2),
              () -> rows(source, "RdmaSourceSession").getFirst().charges().get("grants") == 1),
          () -> "the session counts the window: " + rows(source, "RdmaSourceSession"));

      hold.letGo();
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "payload");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertTrue(
          Await.until(Duration.ofSeconds(2), () -> rows(source, "RdmaGrant").isEmpty()),
          () -> "the ended grant's row is gone: " + source.ownerView());
      // The grant was held past its session owner's tick, so its owner actor held the task's loan
      // and gave it back when the task ended.
      assertTrue(
          Await.until(Duration.ofSeconds(2), () -> source.owed().loans() == 0),
          () -> "the promoted grant gave its loan back: " + source.owed());
      assertTrue(source.quarantined().isEmpty(), source.quarantined()::toString);
    }
  }

  private static List<OwnerView.Owner> rows(TransferEngine engine, String kind) {
    return engine.ownerView().owners().stream().filter(o -> o.kind().equals(kind)).toList();
  }
}
