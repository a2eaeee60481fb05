package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Contract C2 (exact authority) and C12 (guards): every refusal, whether the requester refuses at
 * submit or the source refuses a frame, leaves every byte of both sides as it was.
 *
 * <p>All regions keep their guard pattern for the whole class; every test ends by checking every
 * region in full, so a stray byte from any earlier test also fails the next one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuthorityIT {
  private static final long SRC_LEN = 256 * 1024;
  private static final long LOCAL_LEN = 256 * 1024;
  private static final long SENTINEL_LEN = SRC_LEN + 8 * 1024;
  private static final long SENTINEL_AT = 4096;

  private static final long SEED_SRC_READ = 0xA11CE001L;
  private static final long SEED_SRC_WRITE = 0xA11CE002L;
  private static final long SEED_SRC_RW = 0xA11CE003L;
  private static final long SEED_LOCAL = 0xB0B0001L;
  private static final long SEED_SENTINEL = 0xB0B0002L;
  private static final long SEED_VICTIM = 0xC0FFEE01L;
  private static final long SEED_RAW_PAYLOAD = 0xD00D01L;

  private static final Duration AWAIT = Duration.ofSeconds(15);
  private static final int SOCKET_TIMEOUT_MILLIS = 10_000;
  private static final long UNKNOWN_REGION = 987_654_321L;

  private EnginePair pair;
  private RegisteredMemory srcRead;
  private RegisteredMemory srcWrite;
  private RegisteredMemory srcRw;
  private RegisteredMemory local;
  private RegisteredMemory sentinel;
  private RemoteSegment remote;

  @BeforeAll
  void start() {
    pair = new EnginePair();
    srcRead = EnginePair.guarded(pair.source, SRC_LEN, Access.READ, SEED_SRC_READ);
    srcWrite = EnginePair.guarded(pair.source, SRC_LEN, Access.WRITE, SEED_SRC_WRITE);
    srcRw = EnginePair.guarded(pair.source, SRC_LEN, Access.READ_WRITE, SEED_SRC_RW);
    local = EnginePair.guarded(pair.requester, LOCAL_LEN, Access.READ_WRITE, SEED_LOCAL);
    sentinel = EnginePair.guarded(pair.requester, SENTINEL_LEN, Access.READ_WRITE, SEED_SENTINEL);
    remote = pair.open();
  }

  @AfterAll
  void stop() {
    if (pair != null) {
      pair.close();
    }
  }

  // ---------------------------------------------------------------- requester-side refusals

  @Test
  void readOrWriteBeyondTheRemoteRegionEndIsRefusedAtSubmitAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcRead.regionId(), SRC_LEN - 100, 200)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region " + srcRead.regionId());
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcWrite.regionId(), SRC_LEN - 100, 200)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region " + srcWrite.regionId());
    // One byte past the end, starting exactly at the end.
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcRw.regionId(), SRC_LEN, 1)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region " + srcRw.regionId());
    // An offset so large that offset + length overflows.
    assertRefusedAtSubmit(
        List.of(
            TransferRequest.write(local, 0, remote, srcRw.regionId(), Long.MAX_VALUE - 10, 100)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region " + srcRw.regionId());
  }

  @Test
  void negativeRemoteOffsetIsRefusedAtSubmitAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcRead.regionId(), -1, 100)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region");
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcWrite.regionId(), -4096, 100)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "remote range",
        "outside region");
  }

  @Test
  void localRangeOutsideTheLocalRegionIsRefusedAtSubmitAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, LOCAL_LEN - 10, remote, srcRead.regionId(), 0, 11)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "local range",
        "outside region " + local.regionId());
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, LOCAL_LEN - 10, remote, srcWrite.regionId(), 0, 11)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "local range",
        "outside region " + local.regionId());
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, -1, remote, srcRead.regionId(), 0, 10)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "local range",
        "outside region " + local.regionId());
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcWrite.regionId(), 0, LOCAL_LEN + 1)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "local range",
        "outside region " + local.regionId());
  }

  @Test
  void zeroAndNegativeLengthsAreRefusedAtSubmitAndMoveNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcRead.regionId(), 0, 0)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "length must be positive");
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcWrite.regionId(), 0, 0)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "length must be positive");
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcRead.regionId(), 0, -5)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "length must be positive");
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcWrite.regionId(), 0, -5)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "length must be positive");
  }

  @Test
  void writeIntoReadOnlyRegionIsRefusedWithPermissionDeniedAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, srcRead.regionId(), 0, 4096)),
        ErrorKind.PERMISSION_DENIED,
        "task 0",
        "region " + srcRead.regionId(),
        "not remote WRITE");
  }

  @Test
  void readFromWriteOnlyRegionIsRefusedWithPermissionDeniedAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, srcWrite.regionId(), 0, 4096)),
        ErrorKind.PERMISSION_DENIED,
        "task 0",
        "region " + srcWrite.regionId(),
        "not remote READ");
  }

  @Test
  void regionIdTheSourceNeverPublishedIsRefusedWithInvalidArgumentAndMovesNothing() {
    assertRefusedAtSubmit(
        List.of(TransferRequest.read(local, 0, remote, UNKNOWN_REGION, 0, 4096)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "region " + UNKNOWN_REGION,
        "not published");
    assertRefusedAtSubmit(
        List.of(TransferRequest.write(local, 0, remote, UNKNOWN_REGION, 0, 4096)),
        ErrorKind.INVALID_ARGUMENT,
        "task 0",
        "region " + UNKNOWN_REGION,
        "not published");
  }

  @Test
  void regionRegisteredAfterTheSegmentWasOpenedIsNotPublishedInThatSnapshot() {
    RegisteredMemory late =
        EnginePair.guarded(pair.source, 64 * 1024, Access.READ_WRITE, SEED_VICTIM);
    try {
      assertRefusedAtSubmit(
          List.of(TransferRequest.write(local, 0, remote, late.regionId(), 0, 4096)),
          ErrorKind.INVALID_ARGUMENT,
          "task 0",
          "region " + late.regionId(),
          "not published");
      assertRegion(late.segment(), List.of(), SEED_VICTIM, "late source region");
    } finally {
      pair.source.unregister(late);
    }
  }

  @Test
  void oneInvalidRequestRefusesTheWholeSubmitAndNoValidRequestMovesBytes() {
    List<TransferRequest> requests =
        List.of(
            TransferRequest.read(local, 0, remote, srcRead.regionId(), 0, 16 * 1024),
            TransferRequest.write(
                local, 32 * 1024, remote, srcWrite.regionId(), 8 * 1024, 16 * 1024),
            TransferRequest.write(local, 64 * 1024, remote, srcRw.regionId(), 0, 16 * 1024),
            TransferRequest.read(
                local, 96 * 1024, remote, srcRw.regionId(), SRC_LEN - 10, 20), // invalid: task 3
            TransferRequest.read(local, 128 * 1024, remote, srcRw.regionId(), 0, 16 * 1024));
    assertRefusedAtSubmit(
        requests, ErrorKind.INVALID_ARGUMENT, "task 3", "remote range", "outside region");

    List<TransferRequest> wrongDirectionLast =
        List.of(
            TransferRequest.read(local, 0, remote, srcRead.regionId(), 0, 16 * 1024),
            TransferRequest.write(
                local, 32 * 1024, remote, srcWrite.regionId(), 8 * 1024, 16 * 1024),
            TransferRequest.write(
                local, 64 * 1024, remote, srcRead.regionId(), 0, 16 * 1024)); // task 2: read-only
    assertRefusedAtSubmit(
        wrongDirectionLast, ErrorKind.PERMISSION_DENIED, "task 2", "not remote WRITE");
  }

  // ---------------------------------------------------------------- source-side refusals

  @Test
  void regionUnregisteredAfterOpenIsRefusedBySourceForReadAndWriteAndMovesNothing() {
    long victimLen = 128 * 1024;
    try (Arena arena = Arena.ofShared()) {
      // Caller-owned, so its bytes stay readable after unregister and can be checked in full.
      MemorySegment victimMemory = arena.allocate(victimLen, 64);
      Pattern.fill(victimMemory, 0, victimLen, SEED_VICTIM, 0);
      RegisteredMemory victim = pair.source.register(victimMemory, Access.READ_WRITE);
      RemoteSegment withVictim = pair.open();
      assertTrue(
          withVictim.region(victim.regionId()).isPresent(),
          "the reopened segment must publish the victim");
      pair.source.unregister(victim);

      long readBefore = pair.source.counters().sourceBytesRead();
      long writtenBefore = pair.source.counters().sourceBytesWritten();
      long refusalsBefore = pair.source.counters().sourceRefusals();

      Batch batch = pair.requester.allocateBatch(4);
      try {
        batch.submit(
            List.of(
                TransferRequest.read(
                    local, 8 * 1024, withVictim, victim.regionId(), 4096, 64 * 1024),
                TransferRequest.write(
                    local, 96 * 1024, withVictim, victim.regionId(), 0, 100 * 1024)));
        BatchStatus status = batch.await(AWAIT);
        assertTrue(status.done(), () -> "both tasks must end within " + AWAIT + ": " + status);
        assertEquals(2, status.tasks().size(), status::toString);
        for (TaskResult t : status.tasks()) {
          assertAll(
              "task " + t.index() + " against an unregistered region: " + t,
              () -> assertEquals(TaskState.FAILED, t.state(), "state"),
              () -> assertEquals(ErrorKind.PERMISSION_DENIED, t.errorKind(), "errorKind"),
              () -> assertEquals(0, t.bytes(), "bytes of a failed task"),
              () ->
                  assertEquals(
                      RemoteEffect.NONE, t.remoteEffect(), "remoteEffect of a refused task"),
              () -> assertTrue(t.locallyDrained(), "locallyDrained"));
        }
      } finally {
        batch.free();
      }
      assertEquals(
          readBefore, pair.source.counters().sourceBytesRead(), "source must serve no READ byte");
      assertEquals(
          writtenBefore,
          pair.source.counters().sourceBytesWritten(),
          "source must apply no WRITE byte");
      assertTrue(
          pair.source.counters().sourceRefusals() >= refusalsBefore + 2,
          "the source must count its refusals (at least one frame per task)");
      assertRegion(
          victimMemory, List.of(), SEED_VICTIM, "unregistered source region (caller memory)");
      assertEverythingUntouched("after source-side refusals");
    }
  }

  // ---------------------------------------------------------------- raw-frame refusals

  @Test
  void rawFramesBeyondTheRegionEndAreRefusedWithInvalidArgumentAndTheLaneStaysUsable()
      throws Exception {
    try (RawLane lane = RawLane.open(pair, pair.source.localSegment().epoch())) {
      long epoch = sourceEpoch();
      long refusalsBefore = pair.source.counters().sourceRefusals();
      long writtenBefore = pair.source.counters().sourceBytesWritten();
      assertReadRefused(
          lane.read(11, epoch, srcRead.regionId(), SRC_LEN - 100, 200),
          11,
          ErrorKind.INVALID_ARGUMENT);
      assertReadRefused(
          lane.read(12, epoch, srcRead.regionId(), SRC_LEN, 1), 12, ErrorKind.INVALID_ARGUMENT);
      assertReadRefused(
          lane.read(13, epoch, srcRead.regionId(), -1, 16), 13, ErrorKind.INVALID_ARGUMENT);
      assertReadRefused(
          lane.read(14, epoch, srcRead.regionId(), Long.MAX_VALUE - 8, 64),
          14,
          ErrorKind.INVALID_ARGUMENT);
      assertWriteRefused(
          lane.write(15, epoch, srcWrite.regionId(), SRC_LEN - 100, payload(200)),
          15,
          ErrorKind.INVALID_ARGUMENT);
      assertWriteRefused(
          lane.write(16, epoch, srcRw.regionId(), -8, payload(64)), 16, ErrorKind.INVALID_ARGUMENT);
      assertEquals(
          refusalsBefore + 6,
          pair.source.counters().sourceRefusals(),
          "every refused frame is counted");
      assertEquals(
          writtenBefore, pair.source.counters().sourceBytesWritten(), "no WRITE byte applied");
      assertLaneStillServes(lane);
    }
    assertEverythingUntouched("after raw out-of-bounds frames");
  }

  @Test
  void rawFramesInTheWrongDirectionAreRefusedWithPermissionDeniedAndTheLaneStaysUsable()
      throws Exception {
    try (RawLane lane = RawLane.open(pair, sourceEpoch())) {
      long epoch = sourceEpoch();
      assertReadRefused(
          lane.read(21, epoch, srcWrite.regionId(), 0, 4096), 21, ErrorKind.PERMISSION_DENIED);
      assertWriteRefused(
          lane.write(22, epoch, srcRead.regionId(), 0, payload(4096)),
          22,
          ErrorKind.PERMISSION_DENIED);
      // A large refused WRITE: its payload must be drained from the socket, not parsed as frames.
      assertWriteRefused(
          lane.write(23, epoch, srcRead.regionId(), 0, payload(SRC_LEN)),
          23,
          ErrorKind.PERMISSION_DENIED);
      assertLaneStillServes(lane);
    }
    assertEverythingUntouched("after raw wrong-direction frames");
  }

  @Test
  void rawFramesForAnUnknownRegionAreRefusedWithPermissionDeniedAndTheLaneStaysUsable()
      throws Exception {
    try (RawLane lane = RawLane.open(pair, sourceEpoch())) {
      long epoch = sourceEpoch();
      assertReadRefused(
          lane.read(31, epoch, UNKNOWN_REGION, 0, 4096), 31, ErrorKind.PERMISSION_DENIED);
      assertWriteRefused(
          lane.write(32, epoch, UNKNOWN_REGION, 0, payload(4096)), 32, ErrorKind.PERMISSION_DENIED);
      assertReadRefused(lane.read(33, epoch, 0, 0, 4096), 33, ErrorKind.PERMISSION_DENIED);
      assertLaneStillServes(lane);
    }
    assertEverythingUntouched("after raw unknown-region frames");
  }

  @Test
  void rawFramesWithAStaleEpochAreRefusedWithEpochMismatchAndTheLaneStaysUsable() throws Exception {
    try (RawLane lane = RawLane.open(pair, sourceEpoch())) {
      long stale = sourceEpoch() + 1;
      assertReadRefused(
          lane.read(41, stale, srcRead.regionId(), 0, 4096), 41, ErrorKind.EPOCH_MISMATCH);
      assertReadRefused(lane.read(42, 0, srcRw.regionId(), 0, 4096), 42, ErrorKind.EPOCH_MISMATCH);
      assertWriteRefused(
          lane.write(43, stale, srcWrite.regionId(), 0, payload(4096)),
          43,
          ErrorKind.EPOCH_MISMATCH);
      assertWriteRefused(
          lane.write(44, stale, srcRw.regionId(), 0, payload(4096)), 44, ErrorKind.EPOCH_MISMATCH);
      assertLaneStillServes(lane);
    }
    assertEverythingUntouched("after raw stale-epoch frames");
  }

  /** One READ request of a pipeline, and the refusal it must get (null: served). */
  private record Ask(
      long id,
      long epoch,
      RegisteredMemory region,
      long offset,
      long count,
      ErrorKind refusal,
      long seed) {}

  /**
   * READs sent back to back are served as groups, each written out in one gathering write; a group
   * takes one loan per run of READs of the same range, yet every READ in it is checked on its own:
   * a refusal among them refuses only itself, every served READ carries exactly its range's bytes,
   * and once the responses are out every loan the lane took has come back.
   */
  @Test
  void pipelinedReadsAreEachCheckedWhileAGroupSharesItsLoansAndEveryLoanComesBack()
      throws Exception {
    long refusalsBefore = pair.source.counters().sourceRefusals();
    long epoch = sourceEpoch();
    List<Ask> asks = new java.util.ArrayList<>();
    asks.add(new Ask(101, epoch, srcRead, 0, 4096, null, SEED_SRC_READ));
    asks.add(new Ask(102, epoch, srcRead, SRC_LEN - 100, 200, ErrorKind.INVALID_ARGUMENT, 0));
    asks.add(new Ask(103, epoch + 1, srcRead, 0, 4096, ErrorKind.EPOCH_MISMATCH, 0));
    asks.add(new Ask(104, epoch, srcWrite, 0, 4096, ErrorKind.PERMISSION_DENIED, 0));
    asks.add(new Ask(105, epoch, srcRead, 8192 + 7, 5000, null, SEED_SRC_READ));
    asks.add(new Ask(106, epoch, srcRw, 64, 4096, null, SEED_SRC_RW));
    asks.add(new Ask(107, epoch, srcRead, 100, 64, null, SEED_SRC_READ));
    asks.add(new Ask(108, epoch, null, 0, 4096, ErrorKind.PERMISSION_DENIED, 0));
    // More READs than one gathering write holds, so that groups end and start within the run.
    for (int i = 0; i < 700; i++) {
      boolean other = i % 50 == 7;
      asks.add(
          new Ask(
              200 + i,
              epoch,
              other ? srcRw : srcRead,
              (i * 4097L) % (SRC_LEN - 4096),
              4096,
              null,
              other ? SEED_SRC_RW : SEED_SRC_READ));
    }
    ByteBuffer frames = ByteBuffer.allocate(asks.size() * FrameCodec.HEADER_BYTES);
    for (int i = 0; i < asks.size(); i++) {
      Ask a = asks.get(i);
      FrameCodec.encode(
          frames,
          i * FrameCodec.HEADER_BYTES,
          FrameType.READ_REQUEST,
          0,
          0,
          a.id(),
          a.epoch(),
          a.region() == null ? UNKNOWN_REGION : a.region().regionId(),
          a.offset(),
          a.count());
    }
    try (RawLane lane = RawLane.open(pair, epoch)) {
      lane.sendAll(frames.array());
      for (Ask a : asks) {
        RawLane.Response response = lane.next();
        if (a.refusal() != null) {
          assertReadRefused(response, a.id(), a.refusal());
          continue;
        }
        FrameHeader h = response.header();
        assertAll(
            "READ_RESPONSE to request " + a.id() + ": " + h,
            () -> assertEquals(FrameType.READ_RESPONSE, h.type(), "type"),
            () -> assertEquals(a.id(), h.requestId(), "responses come in request order"),
            () -> assertEquals(0, h.status(), "a valid READ is served"),
            () -> assertEquals(a.count(), h.payloadLength(), "payload length"));
        long bad =
            Pattern.verify(
                MemorySegment.ofArray(response.payload()), 0, a.count(), a.seed(), a.offset());
        assertEquals(
            -1, bad, () -> "request " + a.id() + ": payload differs from the source at " + bad);
      }
    }
    assertEquals(
        refusalsBefore + 4, pair.source.counters().sourceRefusals(), "four refusals counted");
    for (RegisteredMemory m : List.of(srcRead, srcWrite, srcRw)) {
      io.orbite.engine.spi.Registration r = io.orbite.engine.spi.Registration.of(m, "region");
      assertTrue(
          io.orbite.qualification.Await.until(Duration.ofSeconds(10), () -> r.loans() == 0),
          () -> r + " still has " + r.loans() + " loan(s) after every response was read");
    }
    assertEverythingUntouched("after a pipeline of READs with refusals among them");
  }

  @Test
  void rawValidWriteAfterRefusalsIsAppliedExactlyOnTheSameLane() throws Exception {
    long at = 10_000;
    int length = 5_000;
    try (RawLane lane = RawLane.open(pair, sourceEpoch())) {
      long epoch = sourceEpoch();
      assertWriteRefused(
          lane.write(51, epoch, srcRead.regionId(), at, payload(length)),
          51,
          ErrorKind.PERMISSION_DENIED);
      FrameHeader ack = lane.write(52, epoch, srcRw.regionId(), at, payload(length));
      assertEquals(FrameType.WRITE_ACK, ack.type(), ack::toString);
      assertEquals(52, ack.requestId(), ack::toString);
      assertEquals(
          0, ack.status(), () -> "a valid WRITE must be acknowledged with status 0: " + ack);
      assertRegion(
          srcRw.segment(),
          List.of(new Span(at, length, SEED_RAW_PAYLOAD, 0)),
          SEED_SRC_RW,
          "source READ_WRITE region after one valid raw WRITE");
    } finally {
      Pattern.fill(
          srcRw.segment(), 0, SRC_LEN, SEED_SRC_RW, 0); // restore the guard for the other tests
    }
    assertEverythingUntouched("after restoring the raw WRITE target");
  }

  @Test
  void helloWithAWrongEpochIsRefusedWithEpochMismatchAndTheConnectionCloses() throws Exception {
    long wrong = sourceEpoch() ^ 0x5A5A5A5AL;
    try (Socket socket = connect(pair)) {
      FrameHeader ack = RawLane.hello(socket, wrong);
      assertEquals(FrameType.HELLO_ACK, ack.type(), ack::toString);
      assertEquals(
          ErrorKind.EPOCH_MISMATCH.code(),
          ack.status(),
          () ->
              "HELLO for epoch "
                  + Long.toHexString(wrong)
                  + " must be refused with EPOCH_MISMATCH: "
                  + ack);
      assertEquals(sourceEpoch(), ack.epoch(), "the refusal names the live epoch");
      assertEquals(-1, socket.getInputStream().read(), "the source must close a lane it refused");
    }
    assertEverythingUntouched("after a refused HELLO");
  }

  // ---------------------------------------------------------------- helpers

  private long sourceEpoch() {
    return pair.source.localSegment().epoch();
  }

  /** Submit must throw; nothing is admitted; after the lanes drained no region changed. */
  private void assertRefusedAtSubmit(
      List<TransferRequest> requests, ErrorKind kind, String... fragments) {
    long readBefore = pair.source.counters().sourceBytesRead();
    long writtenBefore = pair.source.counters().sourceBytesWritten();
    Batch batch = pair.requester.allocateBatch(16);
    try {
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> batch.submit(requests),
              () -> "submit must be refused with " + kind + ": " + requests);
      assertEquals(kind, e.kind(), e::getMessage);
      for (String fragment : fragments) {
        assertTrue(
            e.getMessage().contains(fragment),
            () -> "refusal message must name '" + fragment + "': " + e.getMessage());
      }
      BatchStatus status = batch.status();
      assertEquals(
          0, status.tasks().size(), () -> "a refused submit must admit no task: " + status);
    } finally {
      batch.free();
    }
    assertEquals(
        writtenBefore,
        pair.source.counters().sourceBytesWritten(),
        "a refused submit must not make the source apply any WRITE byte");
    drainLanes();
    assertEquals(
        readBefore + SRC_LEN,
        pair.source.counters().sourceBytesRead(),
        "the source must serve only the sentinel READ, nothing of the refused submit");
    assertEverythingUntouched("after refused submit " + requests.size() + " request(s)");
  }

  /** A valid READ over every lane: once it completes, anything sent before it has been served. */
  private void drainLanes() {
    Pattern.fill(sentinel.segment(), 0, SENTINEL_LEN, SEED_SENTINEL, 0);
    Batch batch = pair.requester.allocateBatch(1);
    try {
      batch.submit(
          List.of(
              TransferRequest.read(sentinel, SENTINEL_AT, remote, srcRw.regionId(), 0, SRC_LEN)));
      BatchStatus status = batch.await(AWAIT);
      assertTrue(status.allCompleted(), () -> "sentinel READ must complete: " + status);
      assertEquals(SRC_LEN, status.completedBytes(), status::toString);
    } finally {
      batch.free();
    }
    assertRegion(
        sentinel.segment(),
        List.of(new Span(SENTINEL_AT, SRC_LEN, SEED_SRC_RW, 0)),
        SEED_SENTINEL,
        "sentinel region after a full READ of the source READ_WRITE region");
  }

  private void assertEverythingUntouched(String when) {
    assertAll(
        "every region holds its guard pattern " + when,
        () -> assertRegion(srcRead.segment(), List.of(), SEED_SRC_READ, "source READ region"),
        () -> assertRegion(srcWrite.segment(), List.of(), SEED_SRC_WRITE, "source WRITE region"),
        () -> assertRegion(srcRw.segment(), List.of(), SEED_SRC_RW, "source READ_WRITE region"),
        () -> assertRegion(local.segment(), List.of(), SEED_LOCAL, "requester region"));
  }

  static void assertRegion(MemorySegment region, List<Span> spans, long guardSeed, String what) {
    long bad = RegionCheck.check(region, spans, guardSeed);
    assertEquals(-1, bad, () -> what + ": first wrong byte at " + bad + " of " + region.byteSize());
  }

  private static byte[] payload(long length) {
    byte[] bytes = new byte[(int) length];
    Pattern.fill(MemorySegment.ofArray(bytes), 0, length, SEED_RAW_PAYLOAD, 0);
    return bytes;
  }

  private void assertReadRefused(RawLane.Response response, long requestId, ErrorKind kind) {
    FrameHeader h = response.header();
    assertAll(
        "READ_RESPONSE to request " + requestId + ": " + h,
        () -> assertEquals(FrameType.READ_RESPONSE, h.type(), "type"),
        () -> assertEquals(requestId, h.requestId(), "requestId echoed"),
        () -> assertEquals(kind.code(), h.status(), "status must be " + kind),
        () -> assertEquals(0, h.payloadLength(), "a refused READ carries no payload"),
        () -> assertEquals(0, response.payload().length, "no payload bytes"),
        () -> assertEquals(sourceEpoch(), h.epoch(), "the response carries the source epoch"));
  }

  private void assertWriteRefused(FrameHeader h, long requestId, ErrorKind kind) {
    assertAll(
        "WRITE_ACK to request " + requestId + ": " + h,
        () -> assertEquals(FrameType.WRITE_ACK, h.type(), "type"),
        () -> assertEquals(requestId, h.requestId(), "requestId echoed"),
        () -> assertNotEquals(0, h.status(), "a refused WRITE must not be acknowledged as applied"),
        () -> assertEquals(kind.code(), h.status(), "status must be " + kind),
        () -> assertEquals(0, h.payloadLength(), "WRITE_ACK carries no payload"));
  }

  private void assertLaneStillServes(RawLane lane) throws IOException {
    long offset = SRC_LEN / 2 + 3;
    int count = 8192;
    RawLane.Response response = lane.read(99, sourceEpoch(), srcRead.regionId(), offset, count);
    FrameHeader h = response.header();
    assertEquals(FrameType.READ_RESPONSE, h.type(), h::toString);
    assertEquals(99, h.requestId(), h::toString);
    assertEquals(
        0, h.status(), () -> "the lane must still serve a valid READ after refusals: " + h);
    assertEquals(count, h.payloadLength(), h::toString);
    long bad =
        Pattern.verify(MemorySegment.ofArray(response.payload()), 0, count, SEED_SRC_READ, offset);
    assertEquals(-1, bad, () -> "valid READ payload differs from the source bytes at " + bad);
  }

  private static Socket connect(EnginePair pair) throws IOException {
    Socket socket = new Socket();
    socket.setTcpNoDelay(true);
    socket.connect(
        new InetSocketAddress(pair.source.localSegment().host(), pair.source.localSegment().port()),
        SOCKET_TIMEOUT_MILLIS);
    socket.setSoTimeout(SOCKET_TIMEOUT_MILLIS);
    return socket;
  }

  /** A data lane opened by hand, bypassing every requester-side check. Blocking, with timeouts. */
  static final class RawLane implements AutoCloseable {
    record Response(FrameHeader header, byte[] payload) {}

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;

    private RawLane(Socket socket) throws IOException {
      this.socket = socket;
      this.in = new DataInputStream(socket.getInputStream());
      this.out = socket.getOutputStream();
    }

    static RawLane open(EnginePair pair, long targetEpoch) throws Exception {
      Socket socket = connect(pair);
      try {
        FrameHeader ack = hello(socket, targetEpoch);
        assertEquals(FrameType.HELLO_ACK, ack.type(), ack::toString);
        assertEquals(0, ack.status(), () -> "HELLO for the live epoch must be accepted: " + ack);
        return new RawLane(socket);
      } catch (Exception | Error e) {
        socket.close();
        throw e;
      }
    }

    /** Sends a HELLO for lane 0 of the TCP transport and reads the HELLO_ACK. */
    static FrameHeader hello(Socket socket, long targetEpoch) throws IOException {
      ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      long requesterEpoch = 0x7E57_0000_0000_0001L;
      FrameCodec.encode(
          hello,
          0,
          FrameType.HELLO,
          0,
          0,
          77,
          targetEpoch,
          requesterEpoch,
          0,
          1 /* TCP's wire code */);
      socket.getOutputStream().write(hello.array());
      socket.getOutputStream().flush();
      FrameHeader ack = readHeader(new DataInputStream(socket.getInputStream()));
      assertEquals(77, ack.requestId(), () -> "HELLO_ACK must echo the HELLO's request id: " + ack);
      return ack;
    }

    /** Sends {@code frames}, request headers back to back, in one write. */
    void sendAll(byte[] frames) throws IOException {
      out.write(frames);
      out.flush();
    }

    /** Reads the next response: its header and the payload it announces. */
    Response next() throws IOException {
      FrameHeader h = readHeader(in);
      byte[] payload = new byte[(int) h.payloadLength()];
      in.readFully(payload);
      return new Response(h, payload);
    }

    Response read(long requestId, long epoch, long regionId, long offset, long count)
        throws IOException {
      ByteBuffer frame = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(
          frame, 0, FrameType.READ_REQUEST, 0, 0, requestId, epoch, regionId, offset, count);
      out.write(frame.array());
      out.flush();
      FrameHeader h = readHeader(in);
      byte[] payload = new byte[(int) h.payloadLength()];
      in.readFully(payload);
      return new Response(h, payload);
    }

    FrameHeader write(long requestId, long epoch, long regionId, long offset, byte[] payload)
        throws IOException {
      ByteBuffer frame = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.length);
      FrameCodec.encode(
          frame,
          0,
          FrameType.WRITE_REQUEST,
          0,
          payload.length,
          requestId,
          epoch,
          regionId,
          offset,
          payload.length);
      frame.put(FrameCodec.HEADER_BYTES, payload);
      out.write(frame.array());
      out.flush();
      FrameHeader h = readHeader(in);
      if (h.payloadLength() != 0) {
        in.readFully(new byte[(int) h.payloadLength()]);
      }
      return h;
    }

    private static FrameHeader readHeader(DataInputStream in) throws IOException {
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      in.readFully(header);
      ByteBuffer h = ByteBuffer.wrap(header);
      try {
        FrameCodec.check(h, 0, header.length, 64L << 20);
      } catch (io.orbite.engine.wire.FrameRejectedException e) {
        throw new AssertionError(
            "the source answered with a frame that breaks the protocol: " + e.getMessage(), e);
      }
      return FrameCodec.decode(h, 0);
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
