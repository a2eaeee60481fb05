package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * READ and WRITE over TCP between two engines (C4 completion, C12 guards, C15 slicing): every test
 * checks the whole of both regions afterwards: each task's destination range holds exactly the
 * bytes of its source range, every other destination byte still holds its guard pattern, and the
 * side the bytes came from is untouched.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TcpTransferIT {
  private static final long REGION = 48L << 20;
  private EnginePair pair;
  private RegisteredMemory remote;
  private RegisteredMemory local;
  private RemoteSegment peer;
  private final Random random = new Random(42);

  @BeforeAll
  void start() {
    pair = new EnginePair();
    remote = pair.source.allocate(REGION, Access.READ_WRITE);
    local = pair.requester.allocate(REGION, Access.READ_WRITE);
    peer = pair.open();
  }

  @AfterAll
  void stop() {
    pair.close();
  }

  /** A task's placement: same length on both sides, its own offsets. */
  private record Task(long localOffset, long remoteOffset, long length) {}

  @Test
  void singleSliceReadAtUnalignedOffsetsMovesExactlyItsBytes() {
    runAndCheck(Op.READ, List.of(new Task(4093, 7, 4096 + 5)));
  }

  @Test
  void singleSliceWriteAtUnalignedOffsetsMovesExactlyItsBytes() {
    runAndCheck(Op.WRITE, List.of(new Task(13, 65_537, 3000)));
  }

  @Test
  void oneByteTransfersTouchOnlyThatByte() {
    runAndCheck(Op.READ, List.of(new Task(1, 2, 1)));
    runAndCheck(Op.WRITE, List.of(new Task(3, 5, 1)));
  }

  @Test
  void multiSliceReadAcrossLanesReassemblesInOrder() {
    // 10 MiB + 13 B: 64 slices of an adaptive block, spread over both lanes, unaligned.
    runAndCheck(Op.READ, List.of(new Task(1_000_003, 77, (10L << 20) + 13)));
  }

  @Test
  void multiSliceWriteAcrossLanesLandsInOrder() {
    runAndCheck(Op.WRITE, List.of(new Task(5, 3_333_331, (10L << 20) + 13)));
  }

  @Test
  void largestSingleTaskSpansManyFrames() {
    // 40 MiB: 64 slices of 640 KiB (READ) / 32 of 1.25 MiB (WRITE), several frames per lane.
    runAndCheck(Op.READ, List.of(new Task(17, 31, 40L << 20)));
    runAndCheck(Op.WRITE, List.of(new Task(31, 17, 40L << 20)));
  }

  @Test
  void manyTasksOfMixedSizesInOneBatch() {
    for (Op op : Op.values()) {
      runAndCheck(op, layout(1000, new long[] {1, 100, 4096, 4099, 65_536, 65_536 + 77, 30_000}));
    }
  }

  @Test
  void manyConcurrentBatchesFromSeveralThreads() throws Exception {
    long guardLocal = random.nextLong();
    long data = random.nextLong();
    Pattern.fill(local.segment(), 0, REGION, guardLocal, 0);
    Pattern.fill(remote.segment(), 0, REGION, data, 0);
    List<Task> tasks = layout(800, new long[] {4096, 65_536, 150_000, 12_345});
    int batches = 16;
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      List<Future<BatchStatus>> done = new ArrayList<>();
      for (int b = 0; b < batches; b++) {
        List<TransferRequest> requests = new ArrayList<>();
        for (int i = b; i < tasks.size(); i += batches) {
          Task t = tasks.get(i);
          requests.add(
              TransferRequest.read(
                  local, t.localOffset(), peer, remote.regionId(), t.remoteOffset(), t.length()));
        }
        done.add(
            threads.submit(
                () -> {
                  Batch batch = pair.requester.allocateBatch(requests.size());
                  batch.submit(requests);
                  BatchStatus s = batch.await(Duration.ofSeconds(60));
                  batch.free();
                  return s;
                }));
      }
      for (Future<BatchStatus> f : done) {
        BatchStatus s = f.get();
        assertTrue(s.allCompleted(), () -> "batch not complete: " + firstFailure(s));
      }
    } finally {
      threads.shutdownNow();
    }
    List<Span> spans = new ArrayList<>();
    for (Task t : tasks) {
      spans.add(new Span(t.localOffset(), t.length(), data, t.remoteOffset()));
    }
    assertEquals(
        -1,
        RegionCheck.check(local.segment(), spans, guardLocal),
        "requester region after concurrent READs");
    assertEquals(
        -1,
        Pattern.verify(remote.segment(), 0, REGION, data, 0),
        "source region must be untouched by READs");
  }

  @Test
  void submitsToOneBatchAccumulateAndAwaitCoversThemAll() {
    long guard = random.nextLong();
    long data = random.nextLong();
    Pattern.fill(local.segment(), 0, REGION, data, 0);
    Pattern.fill(remote.segment(), 0, REGION, guard, 0);
    Batch batch = pair.requester.allocateBatch(10);
    List<Task> tasks = layout(10, new long[] {70_000});
    int first = batch.submit(tasks.subList(0, 4).stream().map(this::write).toList()).first();
    int second = batch.submit(tasks.subList(4, 10).stream().map(this::write).toList()).first();
    assertEquals(0, first);
    assertEquals(4, second);
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    assertTrue(s.allCompleted(), () -> firstFailure(s));
    assertEquals(10, s.tasks().size());
    batch.free();
    List<Span> spans =
        tasks.stream()
            .map(t -> new Span(t.remoteOffset(), t.length(), data, t.localOffset()))
            .toList();
    assertEquals(
        -1,
        RegionCheck.check(remote.segment(), spans, guard),
        "source region: the ten WRITEs, guards elsewhere");
    assertEquals(
        -1,
        Pattern.verify(local.segment(), 0, REGION, data, 0),
        "requester region: WRITEs only read it");
  }

  /**
   * One batch reused for 1000 rounds of 64 small and mid-sized tasks, READ and WRITE in turn: the
   * lanes' frames are pooled and refilled for every round, so a frame that kept anything of its
   * last request (its offsets, its length, its WRITE view, its batch) would land bytes in the wrong
   * place or answer the wrong task. Every round checks its whole stripe of the destination, payload
   * and guards, and the engine owes nothing afterwards.
   */
  @Test
  void aReusedBatchOfSmallTasksLandsEveryRoundExactlyWhilePooledFramesAreRefilled() {
    long stripe = 1L << 20;
    int stripes = (int) (REGION / stripe);
    int perRound = 64;
    long[] small = {1, 100, 4096, 4099, 8192, 30_000};
    long sourceSeed = random.nextLong();
    Pattern.fill(remote.segment(), 0, REGION, sourceSeed, 0);
    Batch batch = pair.requester.allocateBatch(perRound);
    for (int round = 0; round < 1000; round++) {
      Op op = round % 2 == 0 ? Op.READ : Op.WRITE;
      long base = (round % stripes) * stripe;
      // Lengths: the small ones cycling, one single-slice 100 KiB task and one 3-slice 200 KB one.
      List<Task> tasks = new ArrayList<>(perRound);
      long at = 0;
      for (int i = 0; i < perRound; i++) {
        long length = i == 7 ? 100 * 1024 : i == 40 ? 200_000 : small[(i + round) % small.length];
        at += 1 + random.nextInt(300);
        tasks.add(new Task(at, at, length));
        at += length;
      }
      assertTrue(at < stripe, "round fits its stripe");
      long guard = random.nextLong();
      long data = random.nextLong();
      RegisteredMemory dst = op == Op.READ ? local : remote;
      Pattern.fill(dst.segment(), base, stripe, guard, 0);
      if (op == Op.WRITE) {
        Pattern.fill(local.segment(), base, stripe, data, 0);
      }
      List<TransferRequest> requests = new ArrayList<>(perRound);
      List<Span> spans = new ArrayList<>(perRound);
      for (Task t : tasks) {
        requests.add(
            op == Op.READ
                ? TransferRequest.read(
                    local,
                    base + t.localOffset(),
                    peer,
                    remote.regionId(),
                    base + t.remoteOffset(),
                    t.length())
                : TransferRequest.write(
                    local,
                    base + t.localOffset(),
                    peer,
                    remote.regionId(),
                    base + t.remoteOffset(),
                    t.length()));
        // READ: the source's pattern at its own offsets; WRITE: the stripe's data pattern (from 0).
        spans.add(
            new Span(
                t.remoteOffset(),
                t.length(),
                op == Op.READ ? sourceSeed : data,
                op == Op.READ ? base + t.remoteOffset() : t.localOffset()));
      }
      assertEquals(0, batch.submit(requests).first(), "every round starts at task 0");
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      int n = round;
      assertTrue(s.allCompleted(), () -> "round " + n + ": " + firstFailure(s));
      for (TaskResult r : s.tasks()) {
        assertEquals(
            tasks.get(r.index()).length(), r.bytes(), "round's task " + r.index() + " bytes");
      }
      long bad = RegionCheck.check(dst.segment().asSlice(base, stripe), spans, guard);
      assertEquals(-1, bad, op + " round " + round + ": first wrong byte of its stripe at " + bad);
      if (op == Op.WRITE) {
        // Give the source its pattern back for the READ rounds that use this stripe later.
        Pattern.fill(remote.segment(), base, stripe, sourceSeed, base);
      }
      batch.reset();
    }
    batch.free();
    var owed = pair.requester.owed();
    assertEquals(0, owed.tasksInFlight(), owed::toString);
    assertEquals(0, owed.bytesInFlight(), owed::toString);
    assertEquals(0, owed.batches(), owed::toString);
  }

  private TransferRequest write(Task t) {
    return TransferRequest.write(
        local, t.localOffset(), peer, remote.regionId(), t.remoteOffset(), t.length());
  }

  /**
   * Lays {@code n} tasks out with unaligned guard gaps on both sides, lengths cycling through
   * {@code lengths}.
   */
  private List<Task> layout(int n, long[] lengths) {
    List<Task> tasks = new ArrayList<>(n);
    long l = 0;
    long r = 0;
    for (int i = 0; i < n; i++) {
      long length = lengths[i % lengths.length];
      l += 1 + random.nextInt(300);
      r += 1 + random.nextInt(300);
      tasks.add(new Task(l, r, length));
      l += length;
      r += length;
    }
    assertTrue(l < REGION && r < REGION, "layout fits the regions");
    return tasks;
  }

  /** Runs {@code tasks} as one batch in direction {@code op} and checks both regions in full. */
  private void runAndCheck(Op op, List<Task> tasks) {
    long srcSeed = random.nextLong();
    long dstGuard = random.nextLong();
    RegisteredMemory src = op == Op.READ ? remote : local;
    RegisteredMemory dst = op == Op.READ ? local : remote;
    Pattern.fill(src.segment(), 0, REGION, srcSeed, 0);
    Pattern.fill(dst.segment(), 0, REGION, dstGuard, 0);
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (Task t : tasks) {
      requests.add(
          op == Op.READ
              ? TransferRequest.read(
                  local, t.localOffset(), peer, remote.regionId(), t.remoteOffset(), t.length())
              : TransferRequest.write(
                  local, t.localOffset(), peer, remote.regionId(), t.remoteOffset(), t.length()));
      long dstOffset = op == Op.READ ? t.localOffset() : t.remoteOffset();
      long srcOffset = op == Op.READ ? t.remoteOffset() : t.localOffset();
      spans.add(new Span(dstOffset, t.length(), srcSeed, srcOffset));
    }
    Batch batch = pair.requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus status = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(status.done(), "batch drained");
    for (TaskResult r : status.tasks()) {
      assertTrue(r.completed(), () -> "task " + r);
      assertEquals(
          tasks.get(r.index()).length(), r.bytes(), "confirmed bytes of task " + r.index());
      assertEquals(op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
    }
    assertEquals(
        -1,
        RegionCheck.check(dst.segment(), spans, dstGuard),
        op + ": destination payload and guards");
    assertEquals(
        -1, Pattern.verify(src.segment(), 0, REGION, srcSeed, 0), op + ": source region untouched");
  }

  private static String firstFailure(BatchStatus s) {
    return s.tasks().stream()
        .filter(t -> !t.completed())
        .findFirst()
        .map(TaskResult::toString)
        .orElse("none");
  }
}
