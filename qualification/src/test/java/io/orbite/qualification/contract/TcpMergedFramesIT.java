package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.FaultHooks;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Neighbouring small tasks over TCP share wire requests ({@code TcpPeerChannel.dispatchRun}): a
 * batch of 64 READs of 4 KiB, each the next 4 KiB on both sides, goes as at most one request per
 * lane, and every task still lands whole with its own receipt and the guards around the run
 * untouched; the same pages in swapped pairs (no task follows the one before it) cost one request
 * each. Later runs of a submission merge into requests of up to 1 MiB. A merged request the source
 * refuses fails every one of its tasks, and copies nothing.
 *
 * <p>Requests are counted where they show: the requester's lane calls {@link
 * FaultHooks#beforeReadPayload} once per READ response with a payload, and the source counts each
 * refused request in {@code sourceRefusals}.
 */
class TcpMergedFramesIT {
  private static final long TASK = 4096;
  private static final int TASKS = 64;

  /** Guard bytes before and after the run, on both sides. */
  private static final long GAP = 3 * TASK + 5;

  private static final long REGION = GAP + TASKS * TASK + GAP;
  private static final Duration AWAIT = Duration.ofSeconds(30);

  @Test
  void neighbouringTasksShareOneRequestPerLaneAndEachLandsWithTheGuardsIntact() {
    ReadResponses responses = new ReadResponses();
    EngineConfig d = EngineConfig.defaults();
    int lanes = d.tcp().lanes();
    try (TransferEngine source = TransferEngine.start(d.withName("merge-source"));
        TransferEngine requester = TransferEngine.start(d.withName("merge-requester"), responses)) {
      long data = 0x3e61L;
      long guard = 0x51c7L;
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, data);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, guard);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));

      List<Integer> inOrder = new ArrayList<>();
      List<Integer> swapped = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        inOrder.add(i);
        swapped.add(i ^ 1);
      }

      int before = responses.count.get();
      readAll(requester, local, peer, remote, inOrder);
      int merged = responses.count.get() - before;
      assertTrue(
          merged >= 1 && merged <= lanes,
          "64 neighbouring READs took " + merged + " request(s), over " + lanes + " lane(s)");
      EnginePair.assertRegion(
          local.segment(),
          List.of(new Span(GAP, TASKS * TASK, data, GAP)),
          guard,
          "requester region after the neighbouring READs");

      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      before = responses.count.get();
      readAll(requester, local, peer, remote, swapped);
      assertEquals(
          TASKS,
          responses.count.get() - before,
          "the same pages in swapped pairs take one request each");
      EnginePair.assertRegion(
          local.segment(),
          List.of(new Span(GAP, TASKS * TASK, data, GAP)),
          guard,
          "requester region after the swapped READs");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "the source is untouched");
    }
  }

  /**
   * After a submission's first run (64 tasks), the engine hands the channel up to 512 tasks at a
   * time, and a part of a run may grow to 1 MiB: 576 neighbouring READs of 4 KiB take at most one
   * request per lane for the first run and two more for the second (8 per lane with 256 KiB parts,
   * 576 with one per task), and land whole with the guards around them intact.
   */
  @Test
  void aLongRunOfNeighbouringReadsGoesInRequestsOfUpToOneMebibyte() {
    ReadResponses responses = new ReadResponses();
    EngineConfig d = EngineConfig.defaults();
    int lanes = d.tcp().lanes();
    int tasks = 64 + 512;
    long region = GAP + tasks * TASK + GAP;
    try (TransferEngine source = TransferEngine.start(d.withName("merge-long-source"));
        TransferEngine requester =
            TransferEngine.start(d.withName("merge-long-requester"), responses)) {
      long data = 0x5a0fL;
      long guard = 0x1d6bL;
      RegisteredMemory remote = EnginePair.guarded(source, region, Access.READ_WRITE, data);
      RegisteredMemory local = EnginePair.guarded(requester, region, Access.READ_WRITE, guard);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      List<Integer> inOrder = new ArrayList<>();
      for (int i = 0; i < tasks; i++) {
        inOrder.add(i);
      }
      readAll(requester, local, peer, remote, inOrder);
      int requests = responses.count.get();
      int mostExpected = lanes + Math.max(2, lanes);
      assertTrue(
          requests >= 2 && requests <= mostExpected,
          tasks
              + " neighbouring READs took "
              + requests
              + " request(s) over "
              + lanes
              + " lane(s), expected at most "
              + mostExpected);
      EnginePair.assertRegion(
          local.segment(),
          List.of(new Span(GAP, tasks * TASK, data, GAP)),
          guard,
          "requester region after the long run of READs");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, region, data, 0), "the source is untouched");
    }
  }

  /**
   * A merged READ whose lane breaks just before its payload lands (a reset from the hook, once) is
   * sent once more, whole, on the other lane after the broken one drained it (C6): every task of
   * the batch completes with its own bytes, the run lands with its guards intact, and the retry is
   * counted once per merged frame the broken lane held.
   */
  @Test
  void aMergedReadCutByABrokenLaneIsRetriedWholeOnTheOtherLane() {
    AtomicBoolean fired = new AtomicBoolean();
    FaultHooks breakOnce =
        new FaultHooks() {
          @Override
          public void beforeReadPayload(String lane) throws IOException {
            if (fired.compareAndSet(false, true)) {
              throw new IOException("test hook: connection reset on " + lane);
            }
          }
        };
    EngineConfig d = EngineConfig.defaults();
    try (TransferEngine source = TransferEngine.start(d.withName("merge-retry-source"));
        TransferEngine requester =
            TransferEngine.start(d.withName("merge-retry-requester"), breakOnce)) {
      long data = 0x6c2bL;
      long guard = 0x0f4dL;
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, data);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, guard);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      List<Integer> inOrder = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        inOrder.add(i);
      }
      readAll(requester, local, peer, remote, inOrder);
      assertTrue(fired.get(), "the hook broke a lane");
      long retries = requester.counters().readRetries.sum();
      assertTrue(
          retries >= 1 && retries <= d.tcp().lanes(),
          "the broken lane's merged READ was sent again as one frame: " + retries + " retries");
      EnginePair.assertRegion(
          local.segment(),
          List.of(new Span(GAP, TASKS * TASK, data, GAP)),
          guard,
          "requester region after the retried READ");
    }
  }

  /**
   * Neighbouring WRITEs share requests the same way (the rule does not look at the op); no hook
   * counts WRITE requests, so this checks what the merged path must keep: each task APPLIED with
   * its own 4096 B, the source's run holding the requester's bytes, its guards around it intact,
   * and the source counting exactly the run's bytes written.
   */
  @Test
  void neighbouringWritesLandWholeAtTheSourceEachAppliedWithTheGuardsIntact() {
    EngineConfig d = EngineConfig.defaults();
    try (TransferEngine source = TransferEngine.start(d.withName("merge-write-source"));
        TransferEngine requester = TransferEngine.start(d.withName("merge-write-requester"))) {
      long data = 0x4b17L;
      long guard = 0x19e3L;
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, guard);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, data);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      long writtenBefore = source.counters().sourceBytesWritten.sum();
      List<TransferRequest> writes = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        long at = GAP + i * TASK;
        writes.add(
            TransferRequest.write(local, at, peer, remote.regionId(), at, TASK)
                .withTransport(Transport.TCP));
      }
      Batch batch = requester.allocateBatch(TASKS);
      try {
        batch.submit(writes);
        BatchStatus status = batch.await(AWAIT);
        assertTrue(status.done(), status::toString);
        assertEquals(TASKS, status.tasks().size(), status::toString);
        for (TaskResult t : status.tasks()) {
          assertAll(
              "task " + t.index() + " of the neighbouring WRITEs: " + t,
              () -> assertTrue(t.completed(), "completed"),
              () -> assertEquals(TASK, t.bytes(), "bytes"),
              () -> assertEquals(RemoteEffect.APPLIED, t.remoteEffect(), "remoteEffect"));
        }
      } finally {
        batch.free();
      }
      assertEquals(
          TASKS * TASK,
          source.counters().sourceBytesWritten.sum() - writtenBefore,
          "the source received exactly the run");
      EnginePair.assertRegion(
          remote.segment(),
          List.of(new Span(GAP, TASKS * TASK, data, GAP)),
          guard,
          "source region after the neighbouring WRITEs");
      assertEquals(
          -1, Pattern.verify(local.segment(), 0, REGION, data, 0), "the requester is untouched");
    }
  }

  @Test
  void aRefusedMergedRequestFailsEachOfItsTasksAndCopiesNothing() {
    ReadResponses responses = new ReadResponses();
    EngineConfig d = EngineConfig.defaults();
    int lanes = d.tcp().lanes();
    try (TransferEngine source = TransferEngine.start(d.withName("merge-refusal-source"));
        TransferEngine requester =
            TransferEngine.start(d.withName("merge-refusal-requester"), responses);
        Arena arena = Arena.ofShared()) {
      long data = 0x2d93L;
      long guard = 0x7a05L;
      // Caller-owned, so its bytes stay readable after unregister and can be checked in full.
      MemorySegment victimMemory = arena.allocate(REGION, 64);
      Pattern.fill(victimMemory, 0, REGION, data, 0);
      RegisteredMemory victim = source.register(victimMemory, Access.READ_WRITE);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, guard);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      source.unregister(victim);

      long refusalsBefore = source.counters().sourceRefusals.sum();
      long readBefore = source.counters().sourceBytesRead.sum();
      List<Integer> inOrder = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        inOrder.add(i);
      }
      Batch batch = requester.allocateBatch(TASKS);
      try {
        batch.submit(requests(local, peer, victim.regionId(), inOrder));
        BatchStatus status = batch.await(AWAIT);
        assertTrue(status.done(), status::toString);
        assertEquals(TASKS, status.tasks().size(), status::toString);
        for (TaskResult t : status.tasks()) {
          assertAll(
              "task " + t.index() + " of a refused merged request: " + t,
              () -> assertEquals(TaskState.FAILED, t.state(), "state"),
              () -> assertEquals(ErrorKind.PERMISSION_DENIED, t.errorKind(), "errorKind"),
              () -> assertEquals(0, t.bytes(), "bytes"),
              () -> assertEquals(RemoteEffect.NONE, t.remoteEffect(), "remoteEffect"),
              () -> assertTrue(t.locallyDrained(), "locallyDrained"));
        }
      } finally {
        batch.free();
      }
      long refused = source.counters().sourceRefusals.sum() - refusalsBefore;
      assertTrue(
          refused >= 1 && refused <= lanes,
          "64 neighbouring READs were refused as " + refused + " request(s)");
      assertEquals(readBefore, source.counters().sourceBytesRead.sum(), "no byte served");
      assertEquals(0, responses.count.get(), "no READ payload reached the requester");
      EnginePair.assertRegion(local.segment(), List.of(), guard, "requester region");
      assertEquals(-1, Pattern.verify(victimMemory, 0, REGION, data, 0), "the source untouched");
    }
  }

  /** READs of the 4 KiB pages {@code pages} of the run, in that order, as one batch; all land. */
  private static void readAll(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      RegisteredMemory remote,
      List<Integer> pages) {
    Batch batch = requester.allocateBatch(pages.size());
    try {
      batch.submit(requests(local, peer, remote.regionId(), pages));
      BatchStatus status = batch.await(AWAIT);
      assertTrue(status.done(), status::toString);
      for (TaskResult t : status.tasks()) {
        assertTrue(t.completed() && t.locallyDrained(), t::toString);
        assertEquals(TASK, t.bytes(), t::toString);
      }
    } finally {
      batch.free();
    }
  }

  private static List<TransferRequest> requests(
      RegisteredMemory local, RemoteSegment peer, long region, List<Integer> pages) {
    List<TransferRequest> requests = new ArrayList<>();
    for (int page : pages) {
      long at = GAP + page * TASK;
      requests.add(
          TransferRequest.read(local, at, peer, region, at, TASK).withTransport(Transport.TCP));
    }
    return requests;
  }

  /** Counts READ responses with a payload, as the requester's lanes see them. */
  private static final class ReadResponses implements FaultHooks {
    final AtomicInteger count = new AtomicInteger();

    @Override
    public void beforeReadPayload(String lane) {
      count.incrementAndGet();
    }
  }
}
