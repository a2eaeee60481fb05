package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Submission;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Per-submission completion: a {@link Submission} waits for its own tasks and reports their
 * results, whatever else the batch holds, so that one batch reused for a long run of submissions
 * (layer by layer) does not grow the cost of each wait. Every test checks the bytes of both regions
 * in full afterwards.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SubmissionIT {
  private static final int SUBMISSIONS = 100_000;
  private static final long TASK = 64;
  private static final long SOURCE_SEED = 0x5eed;
  private static final long GUARD_SEED = 0x9a4d;

  private EnginePair pair;
  private RegisteredMemory remote;
  private RegisteredMemory local;
  private RemoteSegment peer;

  @BeforeAll
  void start() {
    EngineConfig config =
        EngineConfig.defaults()
            .withBudgets(BudgetConfig.defaults().withMaxBatchCapacity(SUBMISSIONS));
    pair = new EnginePair(config, config);
    remote = pair.source.allocate(1 << 20, Access.READ_WRITE);
    Pattern.fill(remote.segment(), 0, remote.lengthBytes(), SOURCE_SEED, 0);
    local = pair.requester.allocate(SUBMISSIONS * TASK, Access.READ_WRITE);
    peer = pair.open();
  }

  @AfterAll
  void stop() {
    pair.close();
  }

  private TransferRequest read(long localOffset, long remoteOffset, long length) {
    return TransferRequest.read(local, localOffset, peer, remote.regionId(), remoteOffset, length);
  }

  @Test
  void eachSubmissionReportsItsOwnTasksAndWaitsForThemAlone() {
    Pattern.fill(local.segment(), 0, local.lengthBytes(), GUARD_SEED, 0);
    Batch batch = pair.requester.allocateBatch(16);
    try {
      // Three submissions on one batch, of 2, 3 and 1 tasks, each READ to its own local range.
      Submission a = batch.submit(List.of(read(0, 0, 100), read(200, 4096, 300)));
      Submission b =
          batch.submit(List.of(read(1000, 8192, 50), read(1100, 9000, 7), read(1200, 100, 1)));
      Submission c = batch.submit(List.of(read(5000, 70_000, 4096)));
      assertEquals(0, a.first());
      assertEquals(2, a.count());
      assertEquals(2, b.first());
      assertEquals(3, b.count());
      assertEquals(5, c.first());
      SubmissionStatus sb = b.await(Duration.ofSeconds(10));
      assertTrue(sb.done(), "submission b done");
      assertEquals(3, sb.tasks().size());
      for (int k = 0; k < 3; k++) {
        assertEquals(2 + k, sb.tasks().get(k).index(), "task " + k + " of b is batch task 2+k");
      }
      assertTrue(sb.allCompleted(), () -> "b: " + sb.tasks());
      assertEquals(58, sb.completedBytes());
      assertEquals(NotificationResult.NONE, sb.notification());
      SubmissionStatus sa = a.completion().toCompletableFuture().get(10, TimeUnit.SECONDS);
      SubmissionStatus sc = c.await(Duration.ofSeconds(10));
      assertTrue(sa.allCompleted() && sc.allCompleted(), () -> sa + " " + sc);
      assertEquals(List.of(0, 1), sa.tasks().stream().map(TaskResult::index).toList());
      assertEquals(4096, sc.completedBytes());
      assertTrue(batch.await(Duration.ofSeconds(10)).allCompleted());
      EnginePair.assertRegion(
          local.segment(),
          List.of(
              new Span(0, 100, SOURCE_SEED, 0),
              new Span(200, 300, SOURCE_SEED, 4096),
              new Span(1000, 50, SOURCE_SEED, 8192),
              new Span(1100, 7, SOURCE_SEED, 9000),
              new Span(1200, 1, SOURCE_SEED, 100),
              new Span(5000, 4096, SOURCE_SEED, 70_000)),
          GUARD_SEED,
          "requester region");
      EnginePair.assertRegion(
          remote.segment(), List.of(), SOURCE_SEED, "source region (READs leave it untouched)");
      // After reset, a submission of the earlier generation has no results to read.
      batch.reset();
      TransferException e = assertThrows(TransferException.class, () -> a.status());
      assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind());
      assertTrue(e.getMessage().contains("reset"), e.getMessage());
    } catch (Exception e) {
      throw new AssertionError(e);
    } finally {
      batch.free();
    }
  }

  /**
   * One batch serves 100,000 one-task submissions, each awaited through its Submission while the
   * next is already submitted (the layer-by-layer overlap). What each await allocates (the JVM's
   * per-thread allocation counter, the one JFR's jdk.ThreadAllocationStatistics reports) is the
   * same for the last thousand awaits as for the first thousand: it does not grow with the batch.
   * The same counter shows the whole-batch status growing, so it would see an await that grew.
   */
  @Test
  void awaitsOfOneReusedBatchAllocateTheSameAtTheEndAsAtTheStart() {
    Pattern.fill(local.segment(), 0, local.lengthBytes(), GUARD_SEED, 0);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    Batch batch = pair.requester.allocateBatch(SUBMISSIONS);
    List<Span> spans = new ArrayList<>(SUBMISSIONS);
    long firstAwaits = 0;
    long lastAwaits = 0;
    long firstStatus = 0;
    long lastStatus = 0;
    int window = 1000;
    try {
      Submission previous = null;
      for (int s = 0; s < SUBMISSIONS; s++) {
        long remoteOffset = (s * 4099L) % (remote.lengthBytes() - TASK);
        Submission next = batch.submit(List.of(read(s * TASK, remoteOffset, TASK)));
        spans.add(new Span(s * TASK, TASK, SOURCE_SEED, remoteOffset));
        if (previous != null) {
          long before = threads.getCurrentThreadAllocatedBytes();
          SubmissionStatus done = previous.await(Duration.ofSeconds(10));
          long spent = threads.getCurrentThreadAllocatedBytes() - before;
          assertTrue(done.allCompleted(), () -> "submission " + done.first() + ": " + done);
          if (s <= window) {
            firstAwaits += spent;
          } else if (s > SUBMISSIONS - window) {
            lastAwaits += spent;
          }
        }
        if (s == window || s == SUBMISSIONS - 1) {
          long before = threads.getCurrentThreadAllocatedBytes();
          batch.status();
          long spent = threads.getCurrentThreadAllocatedBytes() - before;
          if (s == window) {
            firstStatus = spent;
          } else {
            lastStatus = spent;
          }
        }
        previous = next;
      }
      assertTrue(previous.await(Duration.ofSeconds(10)).allCompleted());
      System.out.printf(
          "SubmissionIT: %d B per await over the first %d awaits, %d B over the last %d;"
              + " the whole batch's status allocated %d B at %d tasks and %d B at %d%n",
          firstAwaits / window,
          window,
          lastAwaits / (window - 1),
          window - 1,
          firstStatus,
          window + 1,
          lastStatus,
          SUBMISSIONS);
      assertTrue(
          lastStatus > 10 * firstStatus,
          "the allocation counter sees a call that grows with the batch");
      // Constant, not merely sub-linear: the last awaits allocate no more per await than the
      // first, within a 25% allowance for the JIT's state when the first ran.
      double first = (double) firstAwaits / window;
      double last = (double) lastAwaits / (window - 1);
      assertTrue(
          last <= first * 1.25 + 64,
          "an await allocated " + last + " B at the end against " + first + " B at the start");
      EnginePair.assertRegion(local.segment(), spans, GUARD_SEED, "requester region");
      EnginePair.assertRegion(remote.segment(), List.of(), SOURCE_SEED, "source region");
    } finally {
      batch.free();
    }
  }
}
