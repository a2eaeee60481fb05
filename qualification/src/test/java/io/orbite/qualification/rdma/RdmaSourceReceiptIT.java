package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The source's receipt (spec 002: the exact completion receive, the window released, then ACK): a
 * multi-slice READ or WRITE does not succeed on the requester while the source holds one slice's
 * ACK, although every byte of it has landed; it succeeds, with every byte and guard of both regions
 * checked, once the ACK goes. The source then holds no window and no loan of the parent (its DONE
 * ended the reservation).
 */
class RdmaSourceReceiptIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 256 * 1024; // four 64 KiB slices

  @ParameterizedTest
  @EnumSource(Op.class)
  void aSliceSucceedsOnlyOnceTheSourceAcknowledgedIt(Op op) throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    AtomicInteger acks = new AtomicInteger();
    FaultHooks holdFirstAck =
        new FaultHooks() {
          @Override
          public void beforeRdmaAck(String lane, long sliceId) {
            if (acks.incrementAndGet() == 1) {
              held.countDown();
              try {
                letGo.await(20, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }
        };
    try (TransferEngine source =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("ack-source-" + op), holdFirstAck);
        TransferEngine requester =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("ack-requester-" + op))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long sourceSeed = 91;
      long localSeed = 92;
      Pattern.fill(remote.segment(), 0, REGION, sourceSeed, 0);
      Pattern.fill(local.segment(), 0, REGION, localSeed, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long at = 128 * 1024;
      TransferRequest request =
          (op == Op.READ
                  ? TransferRequest.read(local, at, peer, remote.regionId(), at, TASK)
                  : TransferRequest.write(local, at, peer, remote.regionId(), at, TASK))
              .withTransport(Transport.RDMA);
      Batch batch = requester.allocateBatch(1);
      batch.submit(List.of(request));
      try {
        assertTrue(held.await(20, TimeUnit.SECONDS), "the source holds the first slice's ACK");
        // Every slice's payload lands (the held one's too): only the receipt is missing.
        RegisteredMemory to = op == Op.READ ? local : remote;
        long seed = op == Op.READ ? sourceSeed : localSeed;
        assertTrue(
            Await.until(
                Duration.ofSeconds(10),
                () -> Pattern.verify(to.segment(), at, TASK, seed, at) == -1),
            "every byte of the task has landed");
        assertFalse(
            Await.until(Duration.ofMillis(500), () -> batch.status().allCompleted()),
            () -> "no success without the source's receipt: " + batch.status());
        assertEquals(
            TaskState.PENDING, batch.status().tasks().getFirst().state(), batch.status()::toString);
      } finally {
        letGo.countDown();
      }
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.COMPLETED, r.state(), r::toString);
      assertEquals(TASK, r.bytes(), r::toString);
      assertEquals(op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
      assertEquals(4, acks.get(), "one ACK per slice");
      // Both regions whole: the payload in its range, the guards around it untouched.
      RegisteredMemory to = op == Op.READ ? local : remote;
      RegisteredMemory from = op == Op.READ ? remote : local;
      long toSeed = op == Op.READ ? localSeed : sourceSeed;
      long fromSeed = op == Op.READ ? sourceSeed : localSeed;
      assertEquals(-1, Pattern.verify(to.segment(), 0, at, toSeed, 0), "guard before");
      assertEquals(-1, Pattern.verify(to.segment(), at, TASK, fromSeed, at), "payload");
      assertEquals(
          -1,
          Pattern.verify(to.segment(), at + TASK, REGION - at - TASK, toSeed, at + TASK),
          "guard after");
      assertEquals(-1, Pattern.verify(from.segment(), 0, REGION, fromSeed, 0), "source unchanged");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 0),
          () -> "the source holds no window: " + source.ownerView());
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> source.owed().loans() == 0),
          () -> "the reservation's loan is back: " + source.owed());
    }
  }

  /**
   * A multi-slice task whose reservation the source refuses (its region was unregistered after the
   * requester described it): every slice is refused with the reservation's reason before any window
   * is bound, so no slice moves a byte; both regions are whole and the source holds nothing.
   */
  @ParameterizedTest
  @EnumSource(Op.class)
  void aRefusedReservationRefusesEverySliceOfItsTaskAndNothingMoves(Op op) throws Exception {
    try (TransferEngine source =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("refused-source-" + op));
        TransferEngine requester =
            TransferEngine.start(RdmaTransferIT.rdmaConfig("refused-requester-" + op))) {
      java.lang.foreign.MemorySegment own = java.lang.foreign.Arena.global().allocate(REGION, 4096);
      RegisteredMemory remote = source.register(own, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long sourceSeed = 93;
      long localSeed = 94;
      Pattern.fill(own, 0, REGION, sourceSeed, 0);
      Pattern.fill(local.segment(), 0, REGION, localSeed, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      source.unregister(remote);
      long refusedBefore = RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused");
      long boundBefore = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              (op == Op.READ
                      ? TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                      : TransferRequest.write(local, 0, peer, remote.regionId(), 0, TASK))
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(io.orbite.engine.ErrorKind.PERMISSION_DENIED, r.errorKind(), r::toString);
      assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertTrue(r.locallyDrained(), r::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, localSeed, 0), "local whole");
      assertEquals(-1, Pattern.verify(own, 0, REGION, sourceSeed, 0), "source whole");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(source, "RdmaTransport", "grantsRefused") == refusedBefore + 4),
          () -> "each of the four slices was refused: " + source.ownerView());
      assertEquals(
          boundBefore,
          RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound"),
          "no window was bound");
      assertEquals(0, RdmaPeerIT.charge(source, "RdmaTransport", "grants"), "none is held");
    }
  }
}
