package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.RawLane.awaitCondition;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Batch lifecycle against a peer that never answers ({@link StallingPeer}), so a task is
 * deterministically pending, and against a real source: free while busy, cancel of unsent frames,
 * peer loss, await with a timeout, and a clean completion. Every test checks the bytes of the
 * regions involved in full, not only the statuses.
 */
@Timeout(60)
@SuppressWarnings(
    "try") // tests close their StallingPeer early, on purpose, inside try-with-resources
class BatchLifecycleIT {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration CANCEL_WAIT = Duration.ofSeconds(3);
  private static final long LOCAL_BYTES = 256 * 1024;
  private static final long PEER_BYTES = 1 << 20;
  private static final int TASK_BYTES = 4096;

  /** One lane, one frame in flight: the second frame of a lane always waits behind the first. */
  private static TransferEngine requester;

  @BeforeAll
  static void startRequester() {
    requester =
        TransferEngine.start(
            EngineConfig.defaults()
                .withName("lifecycle-requester")
                .withTcp(TcpConfig.defaults().withLanes(1).withLaneWindowFrames(1)));
  }

  @AfterAll
  static void closeRequester() {
    if (requester != null) {
      requester.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void freeOfBatchWithPendingTaskFailsBatchBusyAndBatchStaysUsable() throws Exception {
    long guard = 0x1001;
    RegisteredMemory local = EnginePair.guarded(requester, LOCAL_BYTES, Access.READ_WRITE, guard);
    try (StallingPeer peer = StallingPeer.start(PEER_BYTES)) {
      RemoteSegment remote = requester.openSegment(peer.endpoint(), WAIT);
      Batch batch = requester.allocateBatch(4);
      batch.submit(
          List.of(
              TransferRequest.read(local, 101, remote, StallingPeer.REGION_ID, 333, TASK_BYTES)));
      awaitRequests(peer, 1);

      TransferException busy =
          assertThrows(
              TransferException.class,
              batch::free,
              "free() of a batch whose READ is on the wire unanswered must refuse");
      assertEquals(
          ErrorKind.BATCH_BUSY, busy.kind(), "free() of a busy batch: " + busy.getMessage());

      BatchStatus status = batch.status();
      assertFalse(
          status.done(), "the batch must still report a pending task after the refused free()");
      TaskResult t = status.tasks().get(0);
      assertEquals(TaskState.PENDING, t.state(), "task after refused free(): " + t);
      assertFalse(
          t.locallyDrained(),
          "a PENDING READ may still land bytes: locallyDrained must be false: " + t);
      assertEquals(0, t.bytes(), "a pending task confirms no bytes: " + t);
      // The batch is still usable: a refused free() did not stop it.
      assertFalse(batch.await(Duration.ofMillis(50)).done(), "await after the refused free()");
      assertLocalUnchanged(local, guard, "while the READ is pending (nothing answered it)");

      peer.close();
      BatchStatus after = batch.await(WAIT);
      assertTrue(after.done(), "the READ must end once its peer is gone: " + after);
      batch.free();
      assertLocalUnchanged(local, guard, "after the peer dropped a READ that was never answered");
      assertEquals(List.of(), peer.problems(), "fake source problems");
    } finally {
      requester.unregister(local);
    }
  }

  @Test
  void cancelFailsEveryUnsentTaskCancelledAndLeavesTheSentOnePending() throws Exception {
    long guard = 0x2002;
    int tasks = 5;
    RegisteredMemory local = EnginePair.guarded(requester, LOCAL_BYTES, Access.READ_WRITE, guard);
    try (StallingPeer peer = StallingPeer.start(PEER_BYTES)) {
      RemoteSegment remote = requester.openSegment(peer.endpoint(), WAIT);
      Batch batch = requester.allocateBatch(tasks);
      List<TransferRequest> reads = new ArrayList<>();
      for (int i = 0; i < tasks; i++) {
        reads.add(
            TransferRequest.read(
                local,
                7 + i * (TASK_BYTES + 13L),
                remote,
                StallingPeer.REGION_ID,
                3 + i * (TASK_BYTES + 5L),
                TASK_BYTES));
      }
      batch.submit(reads);
      awaitRequests(peer, 1);
      assertEquals(
          1,
          peer.requests().size(),
          "with laneWindowFrames=1 and one lane only one frame may be on the wire");

      batch.cancel();

      boolean unsentEnded =
          awaitCondition(
              CANCEL_WAIT,
              () -> {
                List<TaskResult> ts = batch.status().tasks();
                return ts.subList(1, tasks).stream().allMatch(t -> t.state().isTerminal());
              });
      BatchStatus status = batch.status();
      assertTrue(
          unsentEnded,
          "cancel(): the "
              + (tasks - 1)
              + " frames waiting behind a full window were never sent and"
              + " must fail CANCELLED without waiting for the window to open; still pending after "
              + CANCEL_WAIT
              + ": "
              + status);
      TaskResult first = status.tasks().get(0);
      assertEquals(
          TaskState.PENDING,
          first.state(),
          "the frame on the wire is not cancelled, it stays pending: " + first);
      assertFalse(first.locallyDrained(), "the sent READ may still land: " + first);
      for (TaskResult t : status.tasks().subList(1, tasks)) {
        assertEquals(TaskState.FAILED, t.state(), "unsent task after cancel: " + t);
        assertEquals(ErrorKind.CANCELLED, t.errorKind(), "unsent task after cancel: " + t);
        assertEquals(0, t.bytes(), "a cancelled task confirms no bytes: " + t);
        assertEquals(
            RemoteEffect.NONE, t.remoteEffect(), "a cancelled READ never touched the peer: " + t);
        assertTrue(t.locallyDrained(), "a cancelled unsent task is drained: " + t);
      }
      assertEquals(1, peer.requests().size(), "cancelled frames must never reach the wire");
      assertLocalUnchanged(local, guard, "after cancel (no READ was answered)");

      peer.close();
      assertTrue(batch.await(WAIT).done(), "the sent READ must end once its peer is gone");
      assertEquals(1, peer.requests().size(), "cancelled frames must never reach the wire");
      batch.free();
      assertLocalUnchanged(local, guard, "after the peer dropped the only sent READ");
    } finally {
      requester.unregister(local);
    }
  }

  @Test
  void pendingReadFailsPeerLostWhenPeerDropsAndFreeThenSucceeds() throws Exception {
    long guard = 0x3003;
    RegisteredMemory local = EnginePair.guarded(requester, LOCAL_BYTES, Access.READ_WRITE, guard);
    try (StallingPeer peer = StallingPeer.start(PEER_BYTES)) {
      RemoteSegment remote = requester.openSegment(peer.endpoint(), WAIT);
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(
                  local, 4099, remote, StallingPeer.REGION_ID, 12345, TASK_BYTES)));
      StallingPeer.Request sent = awaitRequests(peer, 1).get(0);
      assertEquals(FrameType.READ_REQUEST, sent.header().type(), "frame on the wire");
      assertEquals(12345, sent.header().offset(), "READ offset on the wire");
      assertEquals(TASK_BYTES, sent.header().count(), "READ count on the wire");
      assertEquals(peer.epoch(), sent.header().epoch(), "READ must name the peer's epoch");

      peer.close();
      BatchStatus status = batch.await(WAIT);
      assertTrue(status.done(), "a READ whose peer dropped must end: " + status);
      TaskResult t = status.tasks().get(0);
      assertEquals(TaskState.FAILED, t.state(), "READ after peer loss: " + t);
      assertEquals(ErrorKind.PEER_LOST, t.errorKind(), "READ after peer loss: " + t);
      assertTrue(t.locallyDrained(), "a failed task is reported only after local drain (C5): " + t);
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), "a READ never changes remote bytes: " + t);
      assertEquals(0, t.bytes(), "a failed task confirms no bytes: " + t);
      batch.free();
      assertLocalUnchanged(local, guard, "after a READ lost with its peer");
    } finally {
      requester.unregister(local);
    }
  }

  @Test
  void pendingWriteAlreadyOnTheSocketEndsRemoteEffectUnknownWhenPeerDrops() throws Exception {
    long guard = 0x4004;
    long localOffset = 777;
    RegisteredMemory local = EnginePair.guarded(requester, LOCAL_BYTES, Access.READ_WRITE, guard);
    try (StallingPeer peer = StallingPeer.start(PEER_BYTES)) {
      RemoteSegment remote = requester.openSegment(peer.endpoint(), WAIT);
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.write(
                  local, localOffset, remote, StallingPeer.REGION_ID, 65, TASK_BYTES)));
      StallingPeer.Request sent = awaitRequests(peer, 1).get(0);
      assertEquals(FrameType.WRITE_REQUEST, sent.header().type(), "frame on the wire");
      assertEquals(TASK_BYTES, sent.payload().length, "the WRITE's whole payload reached the peer");
      assertEquals(
          -1,
          Pattern.verify(MemorySegment.ofArray(sent.payload()), 0, TASK_BYTES, guard, localOffset),
          "the WRITE payload on the wire must be the local bytes ["
              + localOffset
              + ", +"
              + TASK_BYTES
              + ")");
      assertEquals(
          TaskState.PENDING,
          batch.status().tasks().get(0).state(),
          "an unacknowledged WRITE is pending");

      peer.close();
      BatchStatus status = batch.await(WAIT);
      assertTrue(status.done(), "a WRITE whose peer dropped must end: " + status);
      TaskResult t = status.tasks().get(0);
      assertEquals(TaskState.FAILED, t.state(), "WRITE after peer loss: " + t);
      assertEquals(ErrorKind.PEER_LOST, t.errorKind(), "WRITE after peer loss: " + t);
      assertEquals(
          RemoteEffect.UNKNOWN,
          t.remoteEffect(),
          "a WRITE whose bytes reached the socket without an acknowledgement has an UNKNOWN remote effect (C6): "
              + t);
      assertTrue(t.locallyDrained(), "a failed task is reported only after local drain (C5): " + t);
      assertEquals(0, t.bytes(), "a failed task confirms no bytes: " + t);
      assertEquals(1, peer.requests().size(), "the WRITE must not be replayed (C6)");
      batch.free();
      assertLocalUnchanged(local, guard, "a WRITE only reads its local range");
    } finally {
      requester.unregister(local);
    }
  }

  @Test
  void awaitWithShortTimeoutOnPendingBatchReturnsNotDoneWithoutThrowing() throws Exception {
    long guard = 0x5005;
    Duration shortWait = Duration.ofMillis(300);
    RegisteredMemory local = EnginePair.guarded(requester, LOCAL_BYTES, Access.READ_WRITE, guard);
    try (StallingPeer peer = StallingPeer.start(PEER_BYTES)) {
      RemoteSegment remote = requester.openSegment(peer.endpoint(), WAIT);
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(TransferRequest.read(local, 0, remote, StallingPeer.REGION_ID, 0, TASK_BYTES)));
      awaitRequests(peer, 1);

      long start = System.nanoTime();
      BatchStatus status = batch.await(shortWait);
      long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
      assertFalse(status.done(), "await on a batch whose READ is never answered: " + status);
      assertEquals(
          TaskState.PENDING, status.tasks().get(0).state(), "task after a timed-out await");
      assertFalse(status.tasks().get(0).locallyDrained(), "task after a timed-out await");
      assertTrue(
          elapsedMillis >= shortWait.toMillis() * 9 / 10,
          "await(" + shortWait + ") returned 'not done' after only " + elapsedMillis + " ms");
      assertTrue(
          elapsedMillis < shortWait.toMillis() + 5_000,
          "await(" + shortWait + ") took " + elapsedMillis + " ms");
      assertLocalUnchanged(local, guard, "while the READ is pending");

      peer.close();
      assertTrue(batch.await(WAIT).done(), "the READ must end once its peer is gone");
      batch.free();
      assertLocalUnchanged(local, guard, "after the peer dropped an unanswered READ");
    } finally {
      requester.unregister(local);
    }
  }

  @Test
  void completedBatchReportsEveryTaskCompletedWithExactBytesAndEffectsAndFrees() {
    long sourceGuard = 0x6006;
    long localGuard = 0x7007;
    long regionBytes = 8L << 20;
    try (EnginePair pair = new EnginePair()) {
      RegisteredMemory src =
          EnginePair.guarded(pair.source, regionBytes, Access.READ_WRITE, sourceGuard);
      RegisteredMemory local =
          EnginePair.guarded(pair.requester, regionBytes, Access.READ_WRITE, localGuard);
      RemoteSegment remote = pair.open();
      long[] lengths = {4096, 1, 65_535, 65_537, (1 << 20) + 3, 333_333};
      List<TransferRequest> requests = new ArrayList<>();
      List<Span> localSpans = new ArrayList<>();
      List<Span> remoteSpans = new ArrayList<>();
      long localAt = 5;
      long remoteAt = 11;
      for (long len : lengths) {
        // READ: remote [remoteAt, +len) holds the source guard there; it lands in local [localAt,
        // +len).
        requests.add(TransferRequest.read(local, localAt, remote, src.regionId(), remoteAt, len));
        localSpans.add(new Span(localAt, len, sourceGuard, remoteAt));
        localAt += len + 17;
        remoteAt += len + 29;
        // WRITE: local [localAt, +len) holds the local guard there; it lands in remote [remoteAt,
        // +len).
        requests.add(TransferRequest.write(local, localAt, remote, src.regionId(), remoteAt, len));
        remoteSpans.add(new Span(remoteAt, len, localGuard, localAt));
        localAt += len + 3;
        remoteAt += len + 41;
      }
      assertTrue(localAt < regionBytes && remoteAt < regionBytes, "layout fits");

      Batch batch = pair.requester.allocateBatch(requests.size());
      batch.submit(requests);
      BatchStatus status = batch.await(Duration.ofSeconds(20));
      assertTrue(
          status.done(), "await must report done for a batch against a live source: " + status);
      assertEquals(requests.size(), status.tasks().size(), "one result per task");
      for (TaskResult t : status.tasks()) {
        TransferRequest r = requests.get(t.index());
        assertEquals(TaskState.COMPLETED, t.state(), "task " + t);
        assertEquals(r.lengthBytes(), t.bytes(), "completed bytes == length: " + t);
        assertNull(t.errorKind(), "task " + t);
        assertTrue(t.locallyDrained(), "task " + t);
        assertEquals(
            r.op() == Op.READ ? RemoteEffect.NONE : RemoteEffect.APPLIED,
            t.remoteEffect(),
            r.op() + " remote effect: " + t);
      }
      assertTrue(status.allCompleted(), "allCompleted");

      long badLocal = RegionCheck.check(local.segment(), localSpans, localGuard);
      assertEquals(
          -1,
          badLocal,
          "requester region: READ payloads and every guard byte (first wrong byte shown)");
      long badRemote = RegionCheck.check(src.segment(), remoteSpans, sourceGuard);
      assertEquals(
          -1,
          badRemote,
          "source region: WRITE payloads and every guard byte (first wrong byte shown)");

      batch.free();
      // Freed: the engine can charge a new batch and still moves exact bytes.
      Batch next = pair.requester.allocateBatch(1);
      next.submit(List.of(TransferRequest.read(local, 0, remote, src.regionId(), 0, 1)));
      assertTrue(next.await(Duration.ofSeconds(10)).allCompleted(), "a batch after free()");
      next.free();
      assertEquals(
          Pattern.at(sourceGuard, 0),
          local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0),
          "the 1-byte READ after free() landed the source's byte 0");
    }
  }

  /** Waits until the peer has received {@code n} data requests (payloads included). */
  private static List<StallingPeer.Request> awaitRequests(StallingPeer peer, int n) {
    assertTrue(
        awaitCondition(WAIT, () -> peer.requests().size() >= n),
        "the fake source received "
            + peer.requests().size()
            + " of "
            + n
            + " data requests within "
            + WAIT);
    return peer.requests();
  }

  private static void assertLocalUnchanged(RegisteredMemory local, long guard, String when) {
    long bad = RegionCheck.check(local.segment(), List.of(), guard);
    assertEquals(
        -1,
        bad,
        "requester region must be unchanged in full " + when + " (first wrong byte shown)");
  }
}
