package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertAll;
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
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
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
 * <p>With request merging on (the default), the engine hands the channel these neighbouring tasks
 * already merged into physical transfers of up to 1 MiB ({@code merge.maxBytes}), which a transfer
 * of more than one slice spreads across the lanes; with {@code merge.enabled=false} every task goes
 * in a request of its own ({@link #withMergingOffEveryTaskIsARequestOfItsOwn}).
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
    int lanes = EngineConfig.defaults().tcp().lanes();
    long data = 0x3e61L;
    long guard = 0x51c7L;
    try (Engines e = Engines.open("merge", responses, REGION, data, guard)) {
      List<Integer> inOrder = new ArrayList<>();
      List<Integer> swapped = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        inOrder.add(i);
        swapped.add(i ^ 1);
      }

      int before = responses.count.get();
      readAll(e, inOrder);
      int merged = responses.count.get() - before;
      assertTrue(
          merged >= 1 && merged <= lanes,
          "64 neighbouring READs took " + merged + " request(s), over " + lanes + " lane(s)");
      assertRunLanded(e, TASKS, REGION, data, guard, "the neighbouring READs");

      Pattern.fill(e.local().segment(), 0, REGION, guard, 0);
      before = responses.count.get();
      readAll(e, swapped);
      assertEquals(
          TASKS,
          responses.count.get() - before,
          "the same pages in swapped pairs take one request each");
      assertRunLanded(e, TASKS, REGION, data, guard, "the swapped READs");
    }
  }

  /**
   * 576 neighbouring READs of 4 KiB (2.25 MiB): the engine merges them into physical transfers of
   * at most 1 MiB ({@code merge.maxBytes}), each spread across the lanes, so they take at most one
   * request per lane for each MiB (6 with two lanes; 576 with one per task), and land whole with
   * the guards around them intact.
   */
  @Test
  void aLongRunOfNeighbouringReadsGoesInRequestsOfUpToOneMebibyte() {
    ReadResponses responses = new ReadResponses();
    int lanes = EngineConfig.defaults().tcp().lanes();
    int tasks = 64 + 512;
    long region = GAP + tasks * TASK + GAP;
    long data = 0x5a0fL;
    long guard = 0x1d6bL;
    try (Engines e = Engines.open("merge-long", responses, region, data, guard)) {
      readAll(e, pagesInOrder(tasks));
      int requests = responses.count.get();
      long mebibytes = (tasks * TASK + (1 << 20) - 1) >> 20;
      long mostExpected = lanes * mebibytes;
      assertTrue(
          requests >= 2 && requests <= mostExpected,
          tasks
              + " neighbouring READs took "
              + requests
              + " request(s) over "
              + lanes
              + " lane(s), expected at most "
              + mostExpected);
      assertRunLanded(e, tasks, region, data, guard, "the long run of READs");
    }
  }

  /**
   * {@code merge.enabled=false} turns off every kind of request merging, the TCP channel's
   * coalescing of neighbouring frames included: 64 neighbouring READs take 64 requests, and land
   * whole with the guards intact.
   */
  @Test
  void withMergingOffEveryTaskIsARequestOfItsOwn() {
    ReadResponses responses = new ReadResponses();
    long data = 0x7c1dL;
    long guard = 0x2b3eL;
    try (Engines e =
        Engines.open(
            "merge-off",
            responses,
            REGION,
            data,
            guard,
            EngineConfig.defaults().merge().withEnabled(false))) {
      List<Integer> inOrder = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        inOrder.add(i);
      }
      readAll(e, inOrder);
      assertEquals(TASKS, responses.count.get(), "one request per task with merging off");
      assertEquals(0, e.requester().counters().tasksMerged());
      assertRunLanded(e, TASKS, REGION, data, guard, "the unmerged READs");
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
    long data = 0x6c2bL;
    long guard = 0x0f4dL;
    try (Engines e = Engines.open("merge-retry", breakOnce, REGION, data, guard)) {
      readAll(e, pagesInOrder(TASKS));
      assertTrue(fired.get(), "the hook broke a lane");
      long retries = e.requester().counters().readRetries();
      assertTrue(
          retries >= 1 && retries <= EngineConfig.defaults().tcp().lanes(),
          "the broken lane's merged READ was sent again as one frame: " + retries + " retries");
      assertRunLanded(e, TASKS, REGION, data, guard, "the retried READ");
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
    long data = 0x4b17L;
    long guard = 0x19e3L;
    try (Engines e = Engines.open("merge-write", FaultHooks.NONE, REGION, guard, data)) {
      RegisteredMemory remote = e.remote();
      RegisteredMemory local = e.local();
      long writtenBefore = e.source().counters().sourceBytesWritten();
      List<TransferRequest> writes = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        long at = GAP + i * TASK;
        writes.add(
            TransferRequest.write(local, at, e.peer(), remote.regionId(), at, TASK)
                .withTransport(Transport.TCP));
      }
      Batch batch = e.requester().allocateBatch(TASKS);
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
          e.source().counters().sourceBytesWritten() - writtenBefore,
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
            FaultInjection.start(d.withName("merge-refusal-requester"), responses);
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

      long refusalsBefore = source.counters().sourceRefusals();
      long readBefore = source.counters().sourceBytesRead();
      List<Integer> inOrder = pagesInOrder(TASKS);
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
      long refused = source.counters().sourceRefusals() - refusalsBefore;
      assertTrue(
          refused >= 1 && refused <= lanes,
          "64 neighbouring READs were refused as " + refused + " request(s)");
      assertEquals(readBefore, source.counters().sourceBytesRead(), "no byte served");
      assertEquals(0, responses.count.get(), "no READ payload reached the requester");
      EnginePair.assertRegion(local.segment(), List.of(), guard, "requester region");
      assertEquals(-1, Pattern.verify(victimMemory, 0, REGION, data, 0), "the source untouched");
    }
  }

  /** The pages 0 .. {@code n - 1}, in order. */
  private static List<Integer> pagesInOrder(int n) {
    List<Integer> pages = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      pages.add(i);
    }
    return pages;
  }

  /**
   * A source and a requester engine (default config, the requester with {@code hooks}), a region of
   * {@code regionBytes} on each, filled with {@code remoteSeed} at the source and {@code localSeed}
   * at the requester, and the source opened as the requester's peer.
   */
  private record Engines(
      TransferEngine source,
      TransferEngine requester,
      RegisteredMemory remote,
      RegisteredMemory local,
      RemoteSegment peer)
      implements AutoCloseable {
    static Engines open(
        String name, FaultHooks hooks, long regionBytes, long remoteSeed, long localSeed) {
      return open(name, hooks, regionBytes, remoteSeed, localSeed, EngineConfig.defaults().merge());
    }

    static Engines open(
        String name,
        FaultHooks hooks,
        long regionBytes,
        long remoteSeed,
        long localSeed,
        io.orbite.config.MergeConfig merge) {
      EngineConfig d = EngineConfig.defaults();
      TransferEngine source = TransferEngine.start(d.withName(name + "-source"));
      TransferEngine requester = null;
      try {
        requester = FaultInjection.start(d.withName(name + "-requester").withMerge(merge), hooks);
        RegisteredMemory remote =
            EnginePair.guarded(source, regionBytes, Access.READ_WRITE, remoteSeed);
        RegisteredMemory local =
            EnginePair.guarded(requester, regionBytes, Access.READ_WRITE, localSeed);
        RemoteSegment peer =
            requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
        return new Engines(source, requester, remote, local, peer);
      } catch (RuntimeException e) {
        if (requester != null) {
          requester.close();
        }
        source.close();
        throw e;
      }
    }

    @Override
    public void close() {
      try {
        requester.close();
      } finally {
        source.close();
      }
    }
  }

  /** {@link #readAll(TransferEngine, RegisteredMemory, RemoteSegment, RegisteredMemory, List)}. */
  private static void readAll(Engines e, List<Integer> pages) {
    readAll(e.requester(), e.local(), e.peer(), e.remote(), pages);
  }

  /**
   * After {@code what}: the requester's region holds the source's bytes over the first {@code
   * pages} pages of the run and its guard pattern around them, and the source's region of {@code
   * regionBytes} is untouched.
   */
  private static void assertRunLanded(
      Engines e, int pages, long regionBytes, long data, long guard, String what) {
    EnginePair.assertRegion(
        e.local().segment(),
        List.of(new Span(GAP, pages * TASK, data, GAP)),
        guard,
        "requester region after " + what);
    assertEquals(
        -1,
        Pattern.verify(e.remote().segment(), 0, regionBytes, data, 0),
        "the source is untouched after " + what);
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
