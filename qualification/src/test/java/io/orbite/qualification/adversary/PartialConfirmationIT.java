package io.orbite.qualification.adversary;

import static io.orbite.qualification.adversary.Bytes.assertEachByteIsOneOf;
import static io.orbite.qualification.adversary.Bytes.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
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
import io.orbite.qualification.verify.Span;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * C4, judged by an adversarial source: a task whose frames are only partly confirmed never reports
 * COMPLETED. The peer confirms some frames of a multi-frame task in full and withholds the rest (a
 * READ response cut short, a WRITE acknowledgement never sent); the task must end TIMEOUT with 0
 * bytes, touch nothing outside its range, and, when the withheld bytes arrive after the report, not
 * take them in. Both regions are checked in full; which frames went where comes from the peer's
 * ledger.
 */
class PartialConfirmationIT {
  private static final long REGION = 4L << 20;
  private static final long PEER_SEED = 0xC1;
  private static final long GUARD = 0xC2;
  private static final long LOCAL_OFFSET = 333;
  private static final long REMOTE_OFFSET = 4097;

  /** 16 slices of the 64 KiB base block: over two idle lanes, two frames of 512 KiB. */
  private static final long LENGTH = 1L << 20;

  private static final long CUT = 100 * 1024;

  @Test
  void aReadWithOneFrameConfirmedAndOneCutShortEndsTimeoutAndNeverTakesTheRest() throws Exception {
    CountDownLatch release = Script.gate();
    // The frame at the task's start is served in full; every other frame gets CUT bytes, then
    // waits.
    Script script =
        r ->
            r.header().offset() == REMOTE_OFFSET
                ? new Script.Reply.Serve()
                : new Script.Reply.Partial(CUT, release);
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, script);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("partial-read"))) {
      RegisteredMemory local = guarded(engine, GUARD);
      TaskResult t = runOne(engine, peer, TransferRequest::read, local);
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);

      List<Ledger.Received> frames = peer.ledger().received(Wire.Type.READ_REQUEST);
      assertEquals(2, frames.size(), () -> "two frames: " + frames);
      assertEquals(2, peer.ledger().lanesCarrying(r -> true), "one frame per lane");
      Ledger.Received confirmed =
          frames.stream()
              .filter(f -> f.header().offset() == REMOTE_OFFSET)
              .findFirst()
              .orElseThrow();
      Ledger.Received cut = frames.stream().filter(f -> f != confirmed).findFirst().orElseThrow();
      assertEquals(REMOTE_OFFSET + LENGTH, cut.end(), "the frames tile the task");
      assertEquals(cut.header().offset(), confirmed.end(), "the frames tile the task");

      // The confirmed frame landed whole; the cut frame at most its first CUT bytes; nothing else
      // moved.
      MemorySegment m = local.segment();
      long cutLocal = LOCAL_OFFSET + confirmed.header().count();
      assertEachByteIsOneOf(
          m,
          cutLocal,
          CUT,
          PEER_SEED,
          cut.header().offset(),
          GUARD,
          cutLocal,
          "the cut frame's first bytes");
      MemorySegment atFailure = Bytes.snapshot(m);
      Pattern.fill(atFailure, cutLocal, CUT, GUARD, cutLocal);
      assertRegion(
          atFailure,
          List.of(new Span(LOCAL_OFFSET, confirmed.header().count(), PEER_SEED, REMOTE_OFFSET)),
          GUARD,
          "requester region when the task was reported failed (the cut frame's first bytes aside)");

      MemorySegment reported = Bytes.snapshot(m);
      release.countDown();
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> !peer.ledger().lateSends().isEmpty()),
          peer.ledger()::toString);
      Bytes.assertStaysUnchanged(
          m, reported, Duration.ofSeconds(1), "requester region after the withheld bytes came");
      assertTrue(peer.ledger().lateSends().getFirst().peerClosedFirst(), peer.ledger()::toString);
      assertRegion(peer.region(), List.of(), PEER_SEED, "peer region (READs change nothing there)");
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  @Test
  void aReadOfFourFramesOnOneLaneWithTwoConfirmedEndsTimeout() throws Exception {
    CountDownLatch release = Script.gate();
    long frame = 64 * 1024;
    // Frames 0 and 1 of the lane are served; frame 2 is held (and 3 waits behind it).
    Script script =
        r -> r.frameOnLane() < 2 ? new Script.Reply.Serve() : new Script.Reply.Hold(release);
    EngineConfig config =
        EngineConfig.defaults()
            .withName("partial-one-lane")
            .withTcp(TcpConfig.defaults().withLanes(1).withMaxFramePayloadBytes((int) frame));
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, script);
        TransferEngine engine = TransferEngine.start(config)) {
      RegisteredMemory local = guarded(engine, GUARD);
      RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
      TaskResult t =
          submitAndAwait(
              engine,
              TransferRequest.read(
                  local,
                  LOCAL_OFFSET,
                  segment,
                  AdversarialSource.REGION_ID,
                  REMOTE_OFFSET,
                  4 * frame));
      assertFailedTimeout(t);
      assertTrue(
          peer.ledger().received(Wire.Type.READ_REQUEST).size() >= 3, peer.ledger()::toString);
      assertEquals(2, peer.ledger().answered().size(), "two frames answered in full");
      assertRegion(
          local.segment(),
          List.of(new Span(LOCAL_OFFSET, 2 * frame, PEER_SEED, REMOTE_OFFSET)),
          GUARD,
          "requester region: the two confirmed frames, nothing else");
      MemorySegment reported = Bytes.snapshot(local.segment());
      release.countDown();
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> !peer.ledger().lateSends().isEmpty()),
          peer.ledger()::toString);
      Bytes.assertStaysUnchanged(
          local.segment(),
          reported,
          Duration.ofSeconds(1),
          "requester region after the late frame");
      assertTrue(peer.ledger().lateSends().getFirst().peerClosedFirst(), peer.ledger()::toString);
      assertRegion(peer.region(), List.of(), PEER_SEED, "peer region (READs change nothing there)");
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  @Test
  void aWriteWithOneFrameAcknowledgedAndOneNeverEndsTimeoutUnknown() throws Exception {
    long localSeed = 0xC3;
    // The frame at the task's start is applied and acknowledged; the other is read and dropped
    // unapplied.
    Script script =
        r ->
            r.header().offset() == REMOTE_OFFSET
                ? new Script.Reply.Serve()
                : new Script.Reply.Silent();
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, script);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("partial-write"))) {
      RegisteredMemory local = guarded(engine, localSeed);
      TaskResult t = runOne(engine, peer, TransferRequest::write, local);
      assertEquals(
          RemoteEffect.UNKNOWN,
          t.remoteEffect(),
          () -> "an unacknowledged frame reached the peer: " + t);

      List<Ledger.Received> frames = peer.ledger().received(Wire.Type.WRITE_REQUEST);
      assertEquals(2, frames.size(), () -> "two frames: " + frames);
      Ledger.Received acked =
          frames.stream()
              .filter(f -> f.header().offset() == REMOTE_OFFSET)
              .findFirst()
              .orElseThrow();
      assertTrue(peer.ledger().ackedInto(acked.header().offset(), acked.header().count()));
      assertEquals(
          acked.header().count(),
          peer.ledger().bytesAppliedInto(REMOTE_OFFSET, LENGTH),
          "only the acked frame applied");
      assertRegion(
          peer.region(),
          List.of(new Span(REMOTE_OFFSET, acked.header().count(), localSeed, LOCAL_OFFSET)),
          PEER_SEED,
          "peer region: the acknowledged frame, nothing else");
      assertRegion(
          local.segment(), List.of(), localSeed, "requester region (a WRITE only reads it)");
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  @FunctionalInterface
  private interface Op {
    TransferRequest make(
        RegisteredMemory local,
        long localOffset,
        RemoteSegment peer,
        long regionId,
        long remoteOffset,
        long length);
  }

  private static TaskResult runOne(
      TransferEngine engine, AdversarialSource peer, Op op, RegisteredMemory local) {
    RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
    TaskResult t =
        submitAndAwait(
            engine,
            op.make(
                local, LOCAL_OFFSET, segment, AdversarialSource.REGION_ID, REMOTE_OFFSET, LENGTH));
    assertFailedTimeout(t);
    return t;
  }

  private static TaskResult submitAndAwait(TransferEngine engine, TransferRequest request) {
    Batch batch = engine.allocateBatch(1);
    batch.submit(List.of(request.withDeadline(Duration.ofMillis(800))));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    assertTrue(s.done(), s::toString);
    batch.free();
    return s.tasks().getFirst();
  }

  private static void assertFailedTimeout(TaskResult t) {
    assertNotEquals(TaskState.COMPLETED, t.state(), () -> "partly confirmed, yet " + t);
    assertEquals(TaskState.FAILED, t.state(), t::toString);
    assertEquals(ErrorKind.TIMEOUT, t.errorKind(), t::toString);
    assertEquals(0, t.bytes(), t::toString);
    assertTrue(t.locallyDrained(), t::toString);
  }

  private static RegisteredMemory guarded(TransferEngine engine, long seed) {
    RegisteredMemory m = engine.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(m.segment(), 0, REGION, seed, 0);
    return m;
  }
}
