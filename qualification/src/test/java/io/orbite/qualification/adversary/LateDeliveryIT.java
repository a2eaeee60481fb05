package io.orbite.qualification.adversary;

import static io.orbite.qualification.adversary.Bytes.assertEachByteIsOneOf;
import static io.orbite.qualification.adversary.Bytes.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * C5 over TCP, judged by an adversarial source: a READ whose response the peer holds past the
 * task's deadline is reported FAILED only once nothing can land in its memory any more. The proof
 * is not the engine's {@code locallyDrained} flag: after the report the peer sends the payload
 * anyway, and the destination must stay byte for byte as it was when the failure was reported. The
 * peer's ledger also shows that the requester had closed the lane before the late send.
 */
class LateDeliveryIT {
  private static final long REGION = 1L << 20;
  private static final long PEER_SEED = 0xA1;
  private static final long GUARD = 0xA2;
  private static final long LOCAL_OFFSET = 1000;
  private static final long REMOTE_OFFSET = 5000;

  /** One slice (at most the 64 KiB base block), so one frame on one lane. */
  private static final long LENGTH = 64 * 1024;

  @Test
  void aReadReportedFailedAtItsDeadlineNeverReceivesItsLatePayload() throws Exception {
    CountDownLatch release = Script.gate();
    try (AdversarialSource peer =
            AdversarialSource.start(
                REGION,
                PEER_SEED,
                r -> r.read() ? new Script.Reply.Hold(release) : new Script.Reply.Serve());
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("late-delivery"))) {
      RegisteredMemory local = guarded(engine);
      TaskResult t = readUntilFailed(engine, local, peer);
      assertRegion(
          local.segment(), List.of(), GUARD, "requester region when the READ was reported failed");
      MemorySegment atFailure = Bytes.snapshot(local.segment());

      release.countDown();
      Ledger.LateSend late = awaitLateSend(peer);
      Bytes.assertStaysUnchanged(
          local.segment(),
          atFailure,
          Duration.ofSeconds(1),
          "requester region after the late payload");
      assertTrue(
          late.peerClosedFirst(),
          () -> "the lane was still open after " + t + " was reported: " + late);
      assertRegion(local.segment(), List.of(), GUARD, "requester region after the late payload");
      assertRegion(
          peer.region(), List.of(), PEER_SEED, "peer region (a READ changes nothing there)");
      assertEquals(List.of(), peer.ledger().problems());
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> engine.owed().isIdle()),
          () -> "owed " + engine.owed());
    }
  }

  @Test
  void aReadWhosePayloadStopsHalfwayIsFailedAndTheRestNeverLands() throws Exception {
    CountDownLatch release = Script.gate();
    long sentFirst = 40 * 1024;
    try (AdversarialSource peer =
            AdversarialSource.start(
                REGION,
                PEER_SEED,
                r ->
                    r.read()
                        ? new Script.Reply.Partial(sentFirst, release)
                        : new Script.Reply.Serve());
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("late-rest"))) {
      RegisteredMemory local = guarded(engine);
      TaskResult t = readUntilFailed(engine, local, peer);
      // What landed before the failure: inside the part the peer sent, only its bytes or the guard;
      // everywhere else (the rest of the task and outside it) only the guard.
      MemorySegment landed = Bytes.snapshot(local.segment());
      assertEachByteIsOneOf(
          landed,
          LOCAL_OFFSET,
          sentFirst,
          PEER_SEED,
          REMOTE_OFFSET,
          GUARD,
          LOCAL_OFFSET,
          "the part of the READ the peer sent");
      assertEquals(-1, Pattern.verify(landed, 0, LOCAL_OFFSET, GUARD, 0), "guard before the task");
      long rest = LOCAL_OFFSET + sentFirst;
      assertEquals(
          -1,
          Pattern.verify(landed, rest, REGION - rest, GUARD, rest),
          "the part never sent, and after");

      release.countDown();
      Ledger.LateSend late = awaitLateSend(peer);
      Bytes.assertStaysUnchanged(
          local.segment(), landed, Duration.ofSeconds(1), "requester region after the late rest");
      assertTrue(
          late.peerClosedFirst(),
          () -> "the lane was still open after " + t + " was reported: " + late);
      assertRegion(peer.region(), List.of(), PEER_SEED, "peer region");
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  private static RegisteredMemory guarded(TransferEngine engine) {
    RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, REGION, GUARD, 0);
    return local;
  }

  /**
   * Submits the READ with a short deadline and returns its result once terminal: FAILED, drained.
   */
  private static TaskResult readUntilFailed(
      TransferEngine engine, RegisteredMemory local, AdversarialSource peer) {
    RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
    Batch batch = engine.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(
                    local,
                    LOCAL_OFFSET,
                    segment,
                    AdversarialSource.REGION_ID,
                    REMOTE_OFFSET,
                    LENGTH)
                .withDeadline(Duration.ofMillis(500))));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    assertTrue(s.done(), s::toString);
    TaskResult t = s.tasks().getFirst();
    assertEquals(TaskState.FAILED, t.state(), t::toString);
    assertEquals(ErrorKind.TIMEOUT, t.errorKind(), t::toString);
    assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
    assertEquals(0, t.bytes());
    assertTrue(t.locallyDrained(), t::toString);
    assertEquals(
        1,
        peer.ledger().received(Wire.Type.READ_REQUEST).size(),
        () -> "one READ frame: " + peer.ledger());
    batch.free();
    return t;
  }

  private static Ledger.LateSend awaitLateSend(AdversarialSource peer) {
    assertTrue(
        Await.until(Duration.ofSeconds(10), () -> !peer.ledger().lateSends().isEmpty()),
        () -> "the peer did not get to its late send: " + peer.ledger());
    return peer.ledger().lateSends().getFirst();
  }
}
