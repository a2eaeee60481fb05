package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.RawLane.awaitCondition;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * C10: bytes that break the protocol close the connection that carried them, are counted, and never
 * reach registered memory; other connections are not disturbed. A well-behaved requester keeps
 * moving verified READ and WRITE batches against the attacked source for the whole class; each
 * attack must be followed by at least one more fully verified round.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(60)
class MalformedFrameIT {
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(3);
  private static final Duration ROUND_WAIT = Duration.ofSeconds(20);
  private static final long TRAFFIC_BYTES = 40L << 20;
  private static final long TARGET_BYTES = 1L << 20;
  private static final long TARGET_GUARD = 0xBADC0DEL;
  private static final byte[] HTTP =
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private EnginePair pair;

  /** Source region the background traffic uses. */
  private RegisteredMemory trafficRemote;

  private RegisteredMemory trafficLocal;

  /** Source region only attacks aim at; it must keep its guard pattern for the whole class. */
  private RegisteredMemory target;

  private Thread traffic;
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicReference<Throwable> trafficFailure = new AtomicReference<>();
  private int attacks;
  private long rejectedBefore;

  @BeforeAll
  void startSourceAndTraffic() {
    // A long first-frame timeout: a close seen within CLOSE_WAIT is the refusal, not that timer.
    EngineConfig sourceConfig =
        EngineConfig.defaults()
            .withTimeouts(TimeoutConfig.defaults().withDescribeTimeoutMillis(60_000));
    pair = new EnginePair(sourceConfig, EngineConfig.defaults());
    trafficRemote = pair.source.allocate(TRAFFIC_BYTES, Access.READ_WRITE);
    trafficLocal = pair.requester.allocate(TRAFFIC_BYTES, Access.READ_WRITE);
    target = EnginePair.guarded(pair.source, TARGET_BYTES, Access.READ_WRITE, TARGET_GUARD);
    RemoteSegment remote = pair.open();
    traffic =
        Thread.ofPlatform().daemon().name("malformed-it-traffic").start(() -> trafficLoop(remote));
    assertTrue(
        awaitCondition(ROUND_WAIT, () -> rounds.get() >= 1 || trafficFailure.get() != null),
        "background traffic never completed a first round");
    assertNull(
        trafficFailure.get(),
        () -> "background traffic failed before any attack: " + trafficFailure.get());
  }

  @AfterAll
  void stopTrafficAndClose() throws InterruptedException {
    stop.set(true);
    if (traffic != null) {
      traffic.join(30_000);
    }
    try {
      assertFalse(traffic != null && traffic.isAlive(), "background traffic did not stop");
      assertNull(trafficFailure.get(), () -> "background traffic: " + trafficFailure.get());
      assertTrue(
          rounds.get() >= attacks + 1L,
          "background traffic completed "
              + rounds.get()
              + " verified rounds during "
              + attacks
              + " attacks");
    } finally {
      if (pair != null) {
        pair.close();
      }
    }
  }

  @BeforeEach
  void noteCounters() {
    rejectedBefore = pair.source.counters().framesRejected();
  }

  /**
   * After every attack: the target region is intact and the traffic still completes verified
   * rounds.
   */
  @AfterEach
  void trafficSurvivesAttack() {
    attacks++;
    assertTargetUnchanged("after the attack");
    long before = rounds.get();
    assertTrue(
        awaitCondition(ROUND_WAIT, () -> rounds.get() > before || trafficFailure.get() != null),
        "background traffic completed no round within " + ROUND_WAIT + " after the attack");
    assertNull(trafficFailure.get(), () -> "background traffic failed: " + trafficFailure.get());
  }

  // ---------------------------------------------------------------- first frame of a connection

  @Test
  void foreignMagicIsRefusedAfterFourBytesWithoutWaitingForAHeader() throws Exception {
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(Arrays.copyOf(HTTP, 4));
      assertClosedAndCounted(lane, "4 bytes 'GET ' as the first bytes of a connection");
    }
  }

  @Test
  void foreignProtocolRequestIsRefusedAndNotAnswered() throws Exception {
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(HTTP);
      assertClosedAndCounted(lane, "an HTTP request as the first bytes of a connection");
    }
  }

  @Test
  void truncatedDescribeHeaderThenEndOfStreamIsRefused() throws Exception {
    byte[] describe = RawLane.header(FrameType.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0);
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(Arrays.copyOf(describe, 20));
      lane.shutdownOutput();
      assertClosedAndCounted(lane, "20 of 56 header bytes, then end of stream");
    }
  }

  @Test
  void unknownFrameTypeAsFirstFrameIsRefused() throws Exception {
    byte[] h = RawLane.header(FrameType.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0);
    h[5] = (byte) 0x63;
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(h);
      assertClosedAndCounted(lane, "frame type code 99");
    }
  }

  @Test
  void unsupportedVersionAsFirstFrameIsRefused() throws Exception {
    byte[] h = RawLane.header(FrameType.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0);
    h[4] = 2;
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(h);
      assertClosedAndCounted(lane, "protocol version 2");
    }
  }

  @Test
  void describeResponseAsFirstFrameIsRefused() throws Exception {
    try (RawLane lane = RawLane.connect(source())) {
      lane.send(RawLane.header(FrameType.DESCRIBE_RESPONSE, 0, 0, 1, 0, 0, 0, 0));
      assertClosedAndCounted(lane, "DESCRIBE_RESPONSE as the first frame");
    }
  }

  @Test
  void writeRequestAsFirstFrameIsRefusedBeforeItsPayload() throws Exception {
    SegmentDescriptor src = pair.source.localSegment();
    byte[] payload = patternBytes(4096, 0x1234);
    byte[] frame =
        RawLane.concat(
            RawLane.header(
                FrameType.WRITE_REQUEST,
                0,
                payload.length,
                1,
                src.epoch(),
                target.regionId(),
                64,
                payload.length),
            payload);
    try (RawLane lane = RawLane.connect(src)) {
      lane.send(frame);
      assertClosedAndCounted(lane, "a WRITE_REQUEST without a HELLO");
    }
  }

  // ---------------------------------------------------------------- data lane after a valid HELLO

  @Test
  void writeWithAbsurdPayloadLengthClosesLaneAndNoPayloadByteLands() throws Exception {
    attackWrite(1L << 40, 1L << 40, "WRITE_REQUEST payloadLength = count = 2^40");
  }

  @Test
  void writeLongerThanMaxFramePayloadClosesLaneAndNoPayloadByteLands() throws Exception {
    long tooLong = TcpConfig.DEFAULT_MAX_FRAME_PAYLOAD_BYTES + 1L;
    attackWrite(tooLong, tooLong, "WRITE_REQUEST of maxFramePayloadBytes + 1");
  }

  @Test
  void writeWhosePayloadLengthDisagreesWithCountClosesLaneAndNoPayloadByteLands() throws Exception {
    attackWrite(4096, 1L << 40, "WRITE_REQUEST payloadLength 4096, count 2^40");
  }

  @Test
  void writeWithNegativePayloadLengthClosesLaneAndNoPayloadByteLands() throws Exception {
    attackWrite(-4096, -4096, "WRITE_REQUEST payloadLength = count = -4096");
  }

  @Test
  void foreignMagicAfterAnsweredReadClosesLane() throws Exception {
    SegmentDescriptor src = pair.source.localSegment();
    long offset = 4097;
    int count = 4099;
    try (RawLane lane = helloLane(src)) {
      lane.send(
          RawLane.header(
              FrameType.READ_REQUEST, 0, 0, 1, src.epoch(), target.regionId(), offset, count));
      assertReadAnswer(lane, 1, offset, count);
      lane.send(HTTP);
      assertClosedAndCounted(lane, "foreign magic after an answered READ on a data lane");
    }
  }

  @Test
  void validReadFollowedAtOnceByForeignMagicIsAnsweredBeforeTheLaneCloses() throws Exception {
    SegmentDescriptor src = pair.source.localSegment();
    long offset = 77;
    int count = 8191;
    try (RawLane lane = helloLane(src)) {
      // One write: the READ and the garbage arrive together; the READ was whole and valid.
      lane.send(
          RawLane.concat(
              RawLane.header(
                  FrameType.READ_REQUEST, 0, 0, 1, src.epoch(), target.regionId(), offset, count),
              HTTP));
      try {
        assertReadAnswer(lane, 1, offset, count);
      } catch (java.io.IOException | java.util.concurrent.TimeoutException e) {
        fail(
            "a valid READ received before the foreign bytes must be answered before the lane is closed: "
                + e);
      }
      assertClosedAndCounted(lane, "foreign magic right behind a valid READ on a data lane");
    }
  }

  @Test
  void describeResponseOnDataLaneClosesLane() throws Exception {
    SegmentDescriptor src = pair.source.localSegment();
    try (RawLane lane = helloLane(src)) {
      lane.send(RawLane.header(FrameType.DESCRIBE_RESPONSE, 0, 0, 9, src.epoch(), 0, 0, 0));
      assertClosedAndCounted(lane, "DESCRIBE_RESPONSE on a data lane");
    }
  }

  // ---------------------------------------------------------------- a requester facing a bad
  // source

  @Test
  void requesterRefusesForeignBytesAnsweringItsReadAndLandsNothing() throws Exception {
    badSource(request -> HTTP.clone(), "foreign magic");
  }

  @Test
  void requesterRefusesReadResponseForAnotherRequestAndLandsNothing() throws Exception {
    badSource(
        request ->
            RawLane.concat(
                RawLane.header(
                    FrameType.READ_RESPONSE,
                    0,
                    request.count(),
                    request.requestId() + 100,
                    request.epoch(),
                    0,
                    0,
                    request.count()),
                patternBytes((int) request.count(), 0x5555)),
        "READ_RESPONSE naming another request id");
  }

  @Test
  void requesterRefusesReadResponseOfWrongLengthAndLandsNothing() throws Exception {
    badSource(
        request ->
            RawLane.concat(
                RawLane.header(
                    FrameType.READ_RESPONSE,
                    0,
                    request.count() + 1,
                    request.requestId(),
                    request.epoch(),
                    0,
                    0,
                    request.count() + 1),
                patternBytes((int) request.count() + 1, 0x6666)),
        "READ_RESPONSE one byte longer than requested");
  }

  @Test
  void requesterRefusesReadResponseWithAbsurdLengthAndLandsNothing() throws Exception {
    badSource(
        request ->
            RawLane.concat(
                RawLane.header(
                    FrameType.READ_RESPONSE,
                    0,
                    1L << 40,
                    request.requestId(),
                    request.epoch(),
                    0,
                    0,
                    1L << 40),
                patternBytes(8192, 0x7777)),
        "READ_RESPONSE of 2^40 bytes");
  }

  // ---------------------------------------------------------------- attacks and checks

  private SegmentDescriptor source() {
    return pair.source.localSegment();
  }

  private RawLane helloLane(SegmentDescriptor src) throws Exception {
    RawLane lane = RawLane.connect(src);
    try {
      FrameHeader ack = lane.hello(src.epoch(), 0x5EED_0001L, 0);
      assertEquals(FrameType.HELLO_ACK, ack.type(), "answer to HELLO");
      assertEquals(0, ack.status(), "HELLO_ACK status for the source's own epoch");
      assertEquals(src.epoch(), ack.epoch(), "HELLO_ACK carries the source's epoch");
      return lane;
    } catch (Exception | AssertionError e) {
      lane.close();
      throw e;
    }
  }

  /**
   * Sends a malformed WRITE header plus a few KiB of payload on a data lane aimed inside the
   * target.
   */
  private void attackWrite(long payloadLength, long count, String what) throws Exception {
    SegmentDescriptor src = pair.source.localSegment();
    byte[] payload = patternBytes(8192, 0xFEED);
    byte[] frame =
        RawLane.concat(
            RawLane.header(
                FrameType.WRITE_REQUEST,
                0,
                payloadLength,
                1,
                src.epoch(),
                target.regionId(),
                1000,
                count),
            payload);
    try (RawLane lane = helloLane(src)) {
      lane.send(frame);
      assertClosedAndCounted(lane, what);
    }
    assertTargetUnchanged("after " + what + " (not one payload byte may land)");
  }

  /** Reads a READ_RESPONSE and checks its payload is the target's guard bytes at {@code offset}. */
  private void assertReadAnswer(RawLane lane, long requestId, long offset, int count)
      throws Exception {
    FrameHeader h = lane.readHeader(CLOSE_WAIT);
    assertEquals(FrameType.READ_RESPONSE, h.type(), "answer to a valid READ: " + h);
    assertEquals(0, h.status(), "status of a valid READ: " + h);
    assertEquals(requestId, h.requestId(), "request id echoed: " + h);
    assertEquals(count, h.payloadLength(), "READ payload length: " + h);
    byte[] bytes = lane.readExactly(count, CLOSE_WAIT);
    assertEquals(
        -1,
        Pattern.verify(MemorySegment.ofArray(bytes), 0, count, TARGET_GUARD, offset),
        "READ payload must be the target region's bytes [" + offset + ", +" + count + ")");
  }

  private void assertClosedAndCounted(RawLane lane, String what) {
    RawLane.CloseResult closed = lane.awaitClosed(CLOSE_WAIT);
    assertTrue(
        closed.closed(),
        "the source must close the connection after " + what + ": " + closed.how());
    assertEquals(0, closed.bytesBeforeClose(), "the source must not answer " + what);
    assertTrue(
        awaitCondition(CLOSE_WAIT, () -> pair.source.counters().framesRejected() > rejectedBefore),
        "framesRejected must count " + what);
    assertEquals(
        rejectedBefore + 1,
        pair.source.counters().framesRejected(),
        "framesRejected must count " + what + " exactly once");
  }

  private void assertTargetUnchanged(String when) {
    long bad = RegionCheck.check(target.segment(), List.of(), TARGET_GUARD);
    assertEquals(
        -1,
        bad,
        "the attacked source region must be unchanged in full "
            + when
            + " (first wrong byte shown)");
  }

  /**
   * Opens a fake source that answers the first READ with {@code answer}; the requester's tasks must
   * fail honestly and its whole local region must be unchanged. Other traffic of the same requester
   * engine (the background loop) must not notice.
   */
  private void badSource(StallingPeer.Responder answer, String what) throws Exception {
    long guard = 0xC0FFEE;
    RegisteredMemory local =
        EnginePair.guarded(pair.requester, 256 * 1024, Access.READ_WRITE, guard);
    try (StallingPeer fake = StallingPeer.answering(1 << 20, answer)) {
      RemoteSegment remote = pair.requester.openSegment(fake.endpoint(), Duration.ofSeconds(10));
      Batch batch = pair.requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 3, remote, StallingPeer.REGION_ID, 5, 64 * 1024 + 1),
              TransferRequest.read(local, 100_003, remote, StallingPeer.REGION_ID, 100_000, 4096)));
      BatchStatus status = batch.await(Duration.ofSeconds(10));
      assertTrue(status.done(), "tasks answered with " + what + " must end: " + status);
      for (TaskResult t : status.tasks()) {
        assertEquals(TaskState.FAILED, t.state(), what + ": " + t);
        assertTrue(
            t.errorKind() == ErrorKind.PROTOCOL || t.errorKind() == ErrorKind.PEER_LOST,
            what + ": expected PROTOCOL or PEER_LOST: " + t);
        assertTrue(t.locallyDrained(), what + ": " + t);
        assertEquals(0, t.bytes(), what + ": " + t);
        assertEquals(RemoteEffect.NONE, t.remoteEffect(), what + ": " + t);
      }
      assertTrue(fake.requests().size() >= 1, "the fake source saw the READ it answered badly");
      assertEquals(List.of(), fake.problems(), "fake source problems");
      long bad = RegionCheck.check(local.segment(), List.of(), guard);
      assertEquals(
          -1,
          bad,
          "requester region must be unchanged in full after "
              + what
              + ": a malformed answer is refused before any payload byte lands (first wrong byte shown)");
      batch.free();
    } finally {
      pair.requester.unregister(local);
    }
  }

  private static byte[] patternBytes(int n, long seed) {
    byte[] b = new byte[n];
    Pattern.fill(MemorySegment.ofArray(b), 0, n, seed, 0);
    return b;
  }

  // ---------------------------------------------------------------- background traffic

  private void trafficLoop(RemoteSegment remote) {
    SplittableRandom rnd = new SplittableRandom(42);
    long regionId = trafficRemote.regionId();
    MemorySegment remoteMem = trafficRemote.segment();
    MemorySegment localMem = trafficLocal.segment();
    try {
      while (!stop.get()) {
        long round = rounds.get();
        // READ: the source holds pattern A everywhere; the local region holds guard G.
        long a = 0xA000 + round;
        long g = 0xB000 + round;
        Pattern.fill(remoteMem, 0, TRAFFIC_BYTES, a, 0);
        Pattern.fill(localMem, 0, TRAFFIC_BYTES, g, 0);
        Layout reads = Layout.random(rnd, 32, TRAFFIC_BYTES);
        runBatch(reads.requests(true, trafficLocal, remote, regionId), "READ round " + round);
        check(localMem, reads.spans(true, a), g, "requester region after READ round " + round);
        check(remoteMem, List.of(), a, "source region after READ round " + round);

        // WRITE: the local region holds pattern W everywhere; the source holds guard H.
        long w = 0xC000 + round;
        long h = 0xD000 + round;
        Pattern.fill(localMem, 0, TRAFFIC_BYTES, w, 0);
        Pattern.fill(remoteMem, 0, TRAFFIC_BYTES, h, 0);
        Layout writes = Layout.random(rnd, 32, TRAFFIC_BYTES);
        runBatch(writes.requests(false, trafficLocal, remote, regionId), "WRITE round " + round);
        check(remoteMem, writes.spans(false, w), h, "source region after WRITE round " + round);
        check(localMem, List.of(), w, "requester region after WRITE round " + round);
        rounds.incrementAndGet();
      }
    } catch (Throwable t) {
      trafficFailure.compareAndSet(null, t);
    }
  }

  private void runBatch(List<TransferRequest> requests, String what) {
    Batch batch = pair.requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus status = batch.await(Duration.ofSeconds(30));
    if (!status.allCompleted()) {
      throw new AssertionError(what + ": not every task completed: " + status);
    }
    for (TaskResult t : status.tasks()) {
      if (t.bytes() != requests.get(t.index()).lengthBytes()) {
        throw new AssertionError(
            what + ": task confirmed " + t.bytes() + " B of " + requests.get(t.index()) + ": " + t);
      }
    }
    batch.free();
  }

  private static void check(MemorySegment region, List<Span> spans, long guard, String what) {
    long bad = RegionCheck.check(region, spans, guard);
    if (bad >= 0) {
      throw new AssertionError(what + ": byte " + bad + " is wrong (payload or guard mismatch)");
    }
  }

  /** Non-overlapping ranges at unaligned offsets, placed in different orders on the two sides. */
  private record Layout(long[] local, long[] remote, long[] length) {
    static Layout random(SplittableRandom rnd, int n, long regionBytes) {
      long[] length = new long[n];
      for (int i = 0; i < n; i++) {
        length[i] = rnd.nextLong(64 * 1024, (1 << 20) + 1);
      }
      long[] local = place(rnd, length, regionBytes);
      long[] remote = place(rnd, length, regionBytes);
      return new Layout(local, remote, length);
    }

    /** Offsets for the ranges, in a random order with random unaligned gaps. */
    private static long[] place(SplittableRandom rnd, long[] length, long regionBytes) {
      int n = length.length;
      int[] order = new int[n];
      for (int i = 0; i < n; i++) {
        order[i] = i;
      }
      for (int i = n - 1; i > 0; i--) {
        int j = rnd.nextInt(i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
      long[] at = new long[n];
      long cursor = 0;
      for (int k = 0; k < n; k++) {
        cursor += rnd.nextLong(1, 4096);
        at[order[k]] = cursor;
        cursor += length[order[k]];
      }
      if (cursor > regionBytes) {
        throw new IllegalStateException("layout of " + cursor + " B does not fit " + regionBytes);
      }
      return at;
    }

    List<TransferRequest> requests(
        boolean read, RegisteredMemory localMem, RemoteSegment remote, long regionId) {
      List<TransferRequest> out = new ArrayList<>();
      for (int i = 0; i < length.length; i++) {
        out.add(
            read
                ? TransferRequest.read(
                    localMem, local[i], remote, regionId, this.remote[i], length[i])
                : TransferRequest.write(
                    localMem, local[i], remote, regionId, this.remote[i], length[i]));
      }
      return out;
    }

    /**
     * What the destination should hold: READ lands source bytes locally, WRITE lands local bytes
     * remotely.
     */
    List<Span> spans(boolean read, long seed) {
      List<Span> out = new ArrayList<>();
      for (int i = 0; i < length.length; i++) {
        out.add(
            read
                ? new Span(local[i], length[i], seed, remote[i])
                : new Span(remote[i], length[i], seed, local[i]));
      }
      return out;
    }
  }
}
