package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.BudgetConfig;
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
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;

/**
 * Contract C9 (bounded resources): a request beyond a budget is refused with RESOURCE_EXHAUSTED
 * before anything is charged or sent, so no byte of either side moves; work within the budget then
 * moves exactly its bytes; and charges come back, so the budget edge stays reachable forever.
 *
 * <p>One default source serves a "tight" requester whose budgets are small. Every test resets the
 * requester region to its guard pattern afterwards and checks both regions in full.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BudgetIT {
  private static final long MIB = 1024 * 1024;
  private static final long KIB = 1024;
  private static final long MAX_INFLIGHT = MIB; // the smallest accepted value
  private static final int MAX_TASKS = 4;
  private static final int MAX_BATCHES = 2;
  private static final int MAX_CAPACITY = 8;

  private static final long SRC_LEN = 2 * MIB;
  private static final long LOCAL_LEN = 2 * MIB + 64 * KIB;
  private static final long SEED_SRC = 0x5EED0001L;
  private static final long SEED_LOCAL = 0x5EED0002L;
  private static final long SEED_GONE = 0x5EED0003L;
  private static final Duration AWAIT = Duration.ofSeconds(15);

  private EnginePair pair;
  private TransferEngine tight;
  private RegisteredMemory src;
  private RegisteredMemory gone;
  private RegisteredMemory local;
  private RemoteSegment remote;
  private final List<Batch> toFree = new ArrayList<>();

  @BeforeAll
  void start() {
    BudgetConfig budgets =
        BudgetConfig.defaults()
            .withMaxInflightBytes(MAX_INFLIGHT)
            .withMaxTasksInFlight(MAX_TASKS)
            .withMaxBatches(MAX_BATCHES)
            .withMaxBatchCapacity(MAX_CAPACITY)
            .withMaxPeerSegments(1);
    pair = new EnginePair(EngineConfig.defaults(), EngineConfig.defaults().withBudgets(budgets));
    tight = pair.requester;
    src = EnginePair.guarded(pair.source, SRC_LEN, Access.READ_WRITE, SEED_SRC);
    gone = EnginePair.guarded(pair.source, 512 * KIB, Access.READ_WRITE, SEED_GONE);
    local = EnginePair.guarded(tight, LOCAL_LEN, Access.READ_WRITE, SEED_LOCAL);
    remote = pair.open();
    // Published in the snapshot, unregistered at the source: tasks on it fail at the source.
    pair.source.unregister(gone);
  }

  @AfterEach
  void freeLeftovers() {
    TransferException failure = null;
    for (Batch b : toFree) {
      try {
        b.free();
      } catch (TransferException e) {
        failure = failure == null ? e : failure;
      }
    }
    toFree.clear();
    Pattern.fill(local.segment(), 0, LOCAL_LEN, SEED_LOCAL, 0);
    Pattern.fill(src.segment(), 0, SRC_LEN, SEED_SRC, 0);
    if (failure != null) {
      throw failure;
    }
  }

  @AfterAll
  void stop() {
    if (pair != null) {
      pair.close();
    }
  }

  @Test
  void
      submissionBeyondTheInFlightByteBudgetIsRefusedAndMovesNothingThenOneWithinItMovesExactlyItsBytes() {
    Batch batch = batch(MAX_CAPACITY);
    assertRefused(
        () -> batch.submit(List.of(read(0, 0, MAX_INFLIGHT + 1))),
        ErrorKind.RESOURCE_EXHAUSTED,
        "in-flight bytes");
    assertRefused(
        () ->
            batch.submit(List.of(read(0, 0, 512 * KIB), read(512 * KIB, 512 * KIB, 512 * KIB + 1))),
        ErrorKind.RESOURCE_EXHAUSTED,
        "in-flight bytes");
    assertRefused(
        () -> batch.submit(List.of(write(0, 0, MAX_INFLIGHT + 1))),
        ErrorKind.RESOURCE_EXHAUSTED,
        "in-flight bytes");
    assertNoTasks(batch);
    assertBothUntouched("after in-flight byte refusals");

    long at = MIB + 32 * KIB;
    long from = 8 * KIB;
    batch.submit(List.of(read(at, from, MAX_INFLIGHT)));
    assertAllCompleted(batch, 1, MAX_INFLIGHT);
    assertRegion(
        local.segment(),
        List.of(new Span(at, MAX_INFLIGHT, SEED_SRC, from)),
        SEED_LOCAL,
        "requester region after a READ of exactly the byte budget");
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region after a READ");
  }

  @Test
  void submissionOfMoreTasksThanTheInFlightTaskBudgetIsRefusedAndMovesNothing() {
    Batch batch = batch(MAX_CAPACITY);
    List<TransferRequest> five = new ArrayList<>();
    for (int i = 0; i < MAX_TASKS + 1; i++) {
      five.add(read(i * 8 * KIB, i * 4 * KIB, 4 * KIB));
    }
    assertRefused(() -> batch.submit(five), ErrorKind.RESOURCE_EXHAUSTED, "tasks in flight");
    assertNoTasks(batch);
    assertBothUntouched("after a task budget refusal");

    List<TransferRequest> four = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < MAX_TASKS; i++) {
      long at = 128 * KIB + i * 8 * KIB;
      four.add(read(at, i * 4 * KIB, 4 * KIB));
      spans.add(new Span(at, 4 * KIB, SEED_SRC, i * 4 * KIB));
    }
    batch.submit(four);
    assertAllCompleted(batch, MAX_TASKS, MAX_TASKS * 4 * KIB);
    assertRegion(
        local.segment(), spans, SEED_LOCAL, "requester region after four READs at the task budget");
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
  }

  @Test
  void batchBeyondTheBatchBudgetIsRefusedUntilOneIsFreed() {
    Batch first = batch(1);
    Batch second = batch(1);
    assertRefused(() -> tight.allocateBatch(1), ErrorKind.RESOURCE_EXHAUSTED, "batches");
    free(first);
    Batch third = batch(1);
    assertRefused(() -> tight.allocateBatch(1), ErrorKind.RESOURCE_EXHAUSTED, "batches");

    third.submit(List.of(read(4 * KIB, 100, 64 * KIB)));
    second.submit(List.of(write(300 * KIB, 400 * KIB, 32 * KIB)));
    assertAllCompleted(third, 1, 64 * KIB);
    assertAllCompleted(second, 1, 32 * KIB);
    assertRegion(
        local.segment(),
        List.of(new Span(4 * KIB, 64 * KIB, SEED_SRC, 100)),
        SEED_LOCAL,
        "requester region after a READ in the re-allocated batch");
    assertRegion(
        src.segment(),
        List.of(new Span(400 * KIB, 32 * KIB, SEED_LOCAL, 300 * KIB)),
        SEED_SRC,
        "source region after a WRITE");
    Pattern.fill(src.segment(), 0, SRC_LEN, SEED_SRC, 0);
  }

  @Test
  void submissionBeyondBatchCapacityIsRefusedAndMovesNothingAndCapacityOutsideOneToMaxIsInvalid() {
    Batch batch = batch(2);
    assertRefused(
        () ->
            batch.submit(
                List.of(
                    read(0, 0, 4 * KIB), read(8 * KIB, 0, 4 * KIB), read(16 * KIB, 0, 4 * KIB))),
        ErrorKind.RESOURCE_EXHAUSTED,
        "batch capacity");
    assertNoTasks(batch);
    assertBothUntouched("after a capacity refusal");

    batch.submit(List.of(read(0, 12 * KIB, 4 * KIB), read(8 * KIB, 20 * KIB, 4 * KIB)));
    assertAllCompleted(batch, 2, 8 * KIB);
    // The batch is full now: even one more task does not fit.
    assertRefused(
        () -> batch.submit(List.of(read(32 * KIB, 0, 4 * KIB))),
        ErrorKind.RESOURCE_EXHAUSTED,
        "batch capacity");
    assertEquals(2, batch.status().tasks().size(), "a refused submit adds no task to a full batch");
    assertRegion(
        local.segment(),
        List.of(
            new Span(0, 4 * KIB, SEED_SRC, 12 * KIB),
            new Span(8 * KIB, 4 * KIB, SEED_SRC, 20 * KIB)),
        SEED_LOCAL,
        "requester region: exactly the two admitted READs");
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region");

    assertRefused(
        () -> tight.allocateBatch(0),
        ErrorKind.INVALID_ARGUMENT,
        "capacity must be 1.." + MAX_CAPACITY);
    assertRefused(
        () -> tight.allocateBatch(-1),
        ErrorKind.INVALID_ARGUMENT,
        "capacity must be 1.." + MAX_CAPACITY);
    assertRefused(
        () -> tight.allocateBatch(MAX_CAPACITY + 1),
        ErrorKind.INVALID_ARGUMENT,
        "capacity must be 1.." + MAX_CAPACITY);
    // Invalid capacities charged no batch slot: the last slot is still free.
    Batch last = batch(MAX_CAPACITY);
    assertEquals(MAX_CAPACITY, last.capacity());
  }

  @Test
  void registrationBeyondTheRegistrationBudgetIsRefusedUntilOneIsUnregistered() {
    TransferEngine regs =
        TransferEngine.start(
            EngineConfig.defaults()
                .withName("budget-registrations")
                .withBudgets(BudgetConfig.defaults().withMaxRegistrations(2)));
    try (Arena arena = Arena.ofShared()) {
      RegisteredMemory first = regs.allocate(64 * KIB, Access.READ_WRITE);
      RegisteredMemory second = regs.allocate(64 * KIB, Access.READ_WRITE);
      assertRefused(
          () -> regs.allocate(64 * KIB, Access.READ_WRITE),
          ErrorKind.RESOURCE_EXHAUSTED,
          "registrations");
      MemorySegment callerOwned = arena.allocate(4 * KIB, 64);
      Pattern.fill(callerOwned, 0, 4 * KIB, SEED_GONE, 0);
      assertRefused(
          () -> regs.register(callerOwned, Access.READ_WRITE),
          ErrorKind.RESOURCE_EXHAUSTED,
          "registrations");
      assertRegion(callerOwned, List.of(), SEED_GONE, "caller memory after a refused register");

      regs.unregister(first);
      RegisteredMemory third = regs.allocate(64 * KIB, Access.READ_WRITE);
      MemorySegment zeros = arena.allocate(64 * KIB, 64);
      assertEquals(
          -1,
          MemorySegment.mismatch(third.segment(), 0, 64 * KIB, zeros, 0, 64 * KIB),
          "memory allocated after an unregister must be zeroed");
      // The new registration is fully usable: a READ lands in it exactly.
      Pattern.fill(third.segment(), 0, 64 * KIB, SEED_LOCAL, 0);
      RemoteSegment fromRegs =
          regs.openSegment(pair.source.localSegment().endpoint(), Duration.ofSeconds(10));
      Batch batch = regs.allocateBatch(1);
      batch.submit(
          List.of(TransferRequest.read(third, 1000, fromRegs, src.regionId(), 5000, 40 * KIB)));
      BatchStatus status = batch.await(AWAIT);
      assertTrue(status.allCompleted(), status::toString);
      batch.free();
      assertRegion(
          third.segment(),
          List.of(new Span(1000, 40 * KIB, SEED_SRC, 5000)),
          SEED_LOCAL,
          "registration taken after an unregister, after a READ");
      assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
      assertEquals(64 * KIB, second.lengthBytes());
    } finally {
      regs.close();
    }
  }

  @Test
  void peerSegmentBeyondThePeerBudgetIsRefusedButTheOpenPeerStaysReachable() {
    TransferEngine other = TransferEngine.start(EngineConfig.defaults().withName("budget-other"));
    try {
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> tight.openSegment(other.localSegment().endpoint(), Duration.ofSeconds(10)),
              "a second distinct peer must not fit a peer budget of 1");
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains("peer segments"), e::getMessage);
    } finally {
      other.close();
    }
    RemoteSegment again =
        tight.openSegment(pair.source.localSegment().endpoint(), Duration.ofSeconds(10));
    assertEquals(
        remote.descriptor(),
        again.descriptor(),
        "re-opening the same peer yields the same identity");
    Batch batch = batch(1);
    batch.submit(
        List.of(TransferRequest.read(local, 40 * KIB, again, src.regionId(), 77, 50 * KIB)));
    assertAllCompleted(batch, 1, 50 * KIB);
    assertRegion(
        local.segment(),
        List.of(new Span(40 * KIB, 50 * KIB, SEED_SRC, 77)),
        SEED_LOCAL,
        "requester region after a READ through the re-opened segment");
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
  }

  @Test
  void budgetsComeBackAfterManyBatchesAtTheBudgetEdgeIncludingFailedTasksAndRefusals() {
    Batch pinned = batch(1); // holds one of the two batch slots: every cycle takes the last one
    long slice = MAX_INFLIGHT / MAX_TASKS;
    for (int cycle = 0; cycle < 50; cycle++) {
      Pattern.fill(local.segment(), 0, LOCAL_LEN, SEED_LOCAL, 0);
      Batch batch = tight.allocateBatch(MAX_TASKS + 1);
      int c = cycle;
      try {
        // Refusals on the way must not leak charges either.
        assertRefused(
            () -> batch.submit(List.of(read(0, 0, MAX_INFLIGHT + 1))),
            ErrorKind.RESOURCE_EXHAUSTED,
            "in-flight bytes");
        List<TransferRequest> requests = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        boolean withFailure = cycle % 2 == 1;
        for (int i = 0; i < MAX_TASKS; i++) {
          long at = i * (slice + 4 * KIB);
          long from = (cycle % 7) * 4 * KIB + i * slice;
          if (withFailure && i == MAX_TASKS - 1) {
            requests.add(TransferRequest.read(local, at, remote, gone.regionId(), 0, slice));
          } else {
            requests.add(read(at, from, slice));
            spans.add(new Span(at, slice, SEED_SRC, from));
          }
        }
        batch.submit(requests);
        BatchStatus status = batch.await(AWAIT);
        assertTrue(
            status.done(), () -> "cycle " + c + ": not done within " + AWAIT + ": " + status);
        for (TaskResult t : status.tasks()) {
          if (withFailure && t.index() == MAX_TASKS - 1) {
            assertEquals(
                TaskState.FAILED,
                t.state(),
                () -> "cycle " + c + ": task on an unregistered region: " + t);
            assertEquals(ErrorKind.PERMISSION_DENIED, t.errorKind(), () -> "cycle " + c + ": " + t);
            assertEquals(0, t.bytes(), () -> "cycle " + c + ": " + t);
            assertEquals(RemoteEffect.NONE, t.remoteEffect(), () -> "cycle " + c + ": " + t);
          } else {
            assertEquals(TaskState.COMPLETED, t.state(), () -> "cycle " + c + ": " + t);
            assertEquals(slice, t.bytes(), () -> "cycle " + c + ": " + t);
          }
        }
        assertRegion(local.segment(), spans, SEED_LOCAL, "cycle " + c + ": requester region");
      } finally {
        batch.free();
      }
    }
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region after 50 READ cycles");
    // Every budget is whole again: the last batch slot, all tasks and all bytes at once.
    Batch last = batch(MAX_TASKS);
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    Pattern.fill(local.segment(), 0, LOCAL_LEN, SEED_LOCAL, 0);
    for (int i = 0; i < MAX_TASKS; i++) {
      long at = LOCAL_LEN - (i + 1) * (slice + KIB);
      requests.add(read(at, SRC_LEN - (i + 1) * slice, slice));
      spans.add(new Span(at, slice, SEED_SRC, SRC_LEN - (i + 1) * slice));
    }
    last.submit(requests);
    assertAllCompleted(last, MAX_TASKS, MAX_INFLIGHT);
    assertRegion(
        local.segment(), spans, SEED_LOCAL, "requester region after the final full-budget batch");
    free(pinned);
  }

  @Test
  void peerSegmentBudgetComesBackWhenAnOpenedPeerGoesAway() {
    assertPeerBudgetComesBack(BudgetConfig.defaults().withMaxPeerSegments(1), "budget-peers");
  }

  @Test
  void endpointBudgetComesBackWhenAnOpenedPeerGoesAway() {
    assertPeerBudgetComesBack(BudgetConfig.defaults().withMaxEndpoints(1), "budget-endpoints");
  }

  /**
   * A requester whose budget fits one peer opens P1, moves bytes, and sees P1 close (its lanes end,
   * tasks to it fail). Once the caller lets go of its RemoteSegment, nothing holds P1's entry any
   * more, so opening a new peer P2 must fit the budget (PeerTableIT covers letting go through the
   * GC).
   */
  private void assertPeerBudgetComesBack(BudgetConfig budgets, String name) {
    List<TransferEngine> engines = new ArrayList<>();
    try {
      TransferEngine requester =
          start(engines, EngineConfig.defaults().withName(name).withBudgets(budgets));
      TransferEngine p1 = start(engines, EngineConfig.defaults().withName(name + "-p1"));
      RegisteredMemory p1Region = EnginePair.guarded(p1, 256 * KIB, Access.READ, SEED_SRC);
      RegisteredMemory mine =
          EnginePair.guarded(requester, 512 * KIB, Access.READ_WRITE, SEED_LOCAL);
      RemoteSegment toP1 =
          requester.openSegment(p1.localSegment().endpoint(), Duration.ofSeconds(10));
      readAndAwait(
          requester, TransferRequest.read(mine, 0, toP1, p1Region.regionId(), 0, 64 * KIB), true);
      List<Span> spans = new ArrayList<>(List.of(new Span(0, 64 * KIB, SEED_SRC, 0)));
      assertRegion(p1Region.segment(), List.of(), SEED_SRC, "P1 region after a READ");

      p1.close();
      // Wait for the requester to notice: a READ to P1 is refused at submit (channel closed) or
      // fails.
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (((PeerSegment) toP1).channel().gate().active()) {
        assertTrue(
            System.nanoTime() < deadline,
            "the requester did not notice within 10 s that P1 closed");
        try {
          readAndAwait(
              requester,
              TransferRequest.read(mine, 128 * KIB, toP1, p1Region.regionId(), 0, 4 * KIB),
              false);
        } catch (TransferException e) {
          assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
        }
      }
      assertRegion(
          mine.segment(), spans, SEED_LOCAL, "requester region after READs to a closed peer");
      toP1.close();

      TransferEngine p2 = start(engines, EngineConfig.defaults().withName(name + "-p2"));
      RegisteredMemory p2Region = EnginePair.guarded(p2, 256 * KIB, Access.READ_WRITE, SEED_GONE);
      RemoteSegment toP2;
      try {
        toP2 = requester.openSegment(p2.localSegment().endpoint(), Duration.ofSeconds(10));
      } catch (TransferException e) {
        throw new AssertionError(
            "with "
                + budgets
                + ", opening a new peer after the only opened peer closed (and "
                + "its RemoteSegment was closed) must fit the budget, but was refused: "
                + e.getMessage(),
            e);
      }
      readAndAwait(
          requester,
          TransferRequest.read(mine, 256 * KIB, toP2, p2Region.regionId(), 1000, 100 * KIB),
          true);
      spans.add(new Span(256 * KIB, 100 * KIB, SEED_GONE, 1000));
      assertRegion(mine.segment(), spans, SEED_LOCAL, "requester region after a READ from P2");
      assertRegion(p2Region.segment(), List.of(), SEED_GONE, "P2 region after a READ");
    } finally {
      for (int i = engines.size() - 1; i >= 0; i--) {
        engines.get(i).close();
      }
    }
  }

  private static TransferEngine start(List<TransferEngine> engines, EngineConfig config) {
    TransferEngine engine = TransferEngine.start(config);
    engines.add(engine);
    return engine;
  }

  private static void readAndAwait(
      TransferEngine engine, TransferRequest request, boolean mustComplete) {
    Batch batch = engine.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      BatchStatus status = batch.await(AWAIT);
      assertTrue(status.done(), () -> "not done within " + AWAIT + ": " + status);
      if (mustComplete) {
        assertTrue(status.allCompleted(), status::toString);
        assertEquals(request.lengthBytes(), status.completedBytes(), status::toString);
      }
    } finally {
      batch.free();
    }
  }

  // ---------------------------------------------------------------- helpers

  private Batch batch(int capacity) {
    Batch b = tight.allocateBatch(capacity);
    toFree.add(b);
    return b;
  }

  private void free(Batch b) {
    b.free();
    toFree.remove(b);
  }

  private TransferRequest read(long localOffset, long remoteOffset, long length) {
    return TransferRequest.read(local, localOffset, remote, src.regionId(), remoteOffset, length);
  }

  private TransferRequest write(long localOffset, long remoteOffset, long length) {
    return TransferRequest.write(local, localOffset, remote, src.regionId(), remoteOffset, length);
  }

  private static void assertRefused(Executable call, ErrorKind kind, String fragment) {
    TransferException e =
        assertThrows(TransferException.class, call, "must be refused with " + kind);
    assertEquals(kind, e.kind(), e::getMessage);
    assertTrue(
        e.getMessage().contains(fragment),
        () -> "refusal must name '" + fragment + "': " + e.getMessage());
  }

  private static void assertNoTasks(Batch batch) {
    BatchStatus status = batch.status();
    assertEquals(
        0, status.tasks().size(), () -> "refused submissions must admit no task: " + status);
  }

  private static void assertAllCompleted(Batch batch, int tasks, long bytes) {
    BatchStatus status = batch.await(AWAIT);
    assertAll(
        "batch " + status,
        () -> assertTrue(status.allCompleted(), "every task completed within " + AWAIT),
        () -> assertEquals(tasks, status.tasks().size(), "tasks"),
        () -> assertEquals(bytes, status.completedBytes(), "completed bytes"));
  }

  private void assertBothUntouched(String when) {
    assertAll(
        when,
        () -> assertRegion(local.segment(), List.of(), SEED_LOCAL, "requester region"),
        () -> assertRegion(src.segment(), List.of(), SEED_SRC, "source region"));
  }

  /**
   * C9 on the source side: at most budgets.maxEndpoints x tcp.lanes data lanes at once. The lane
   * over the bound is answered RESOURCE_EXHAUSTED and closed; once a lane ends, a new one fits; and
   * the source's memory is untouched throughout.
   */
  @Test
  void sourceLanesBeyondTheEndpointBudgetAreRefusedUntilOneCloses() throws Exception {
    EngineConfig oneLane =
        EngineConfig.defaults()
            .withTcp(io.orbite.config.TcpConfig.defaults().withLanes(1))
            .withBudgets(BudgetConfig.defaults().withMaxEndpoints(1));
    try (TransferEngine source = TransferEngine.start(oneLane.withName("one-lane-source"))) {
      RegisteredMemory region = EnginePair.guarded(source, 64 * KIB, Access.READ_WRITE, SEED_SRC);
      var target = source.localSegment();
      try (RawLane first = RawLane.connect(target)) {
        assertEquals(
            0, first.hello(target.epoch(), 1, 0).status(), "the first lane fits the budget");
        try (RawLane second = RawLane.connect(target)) {
          assertEquals(
              ErrorKind.RESOURCE_EXHAUSTED.code(),
              second.hello(target.epoch(), 2, 0).status(),
              "a second lane is over maxEndpoints x lanes = 1");
          assertTrue(second.awaitClosed(AWAIT).closed(), "the refused lane is closed");
        }
      }
      // The first lane's end reaches the transport asynchronously: retry until a lane fits again.
      boolean admitted =
          RawLane.awaitCondition(
              AWAIT,
              () -> {
                try (RawLane again = RawLane.connect(target)) {
                  return again.hello(target.epoch(), 3, 0).status() == 0;
                } catch (Exception e) {
                  return false;
                }
              });
      assertTrue(admitted, "a lane fits again once the earlier one has ended");
      assertRegion(region.segment(), List.of(), SEED_SRC, "source region");
    }
  }

  /**
   * C9 at the listener: connections that have not yet sent their first frame are bounded by
   * budgets.maxEndpoints; one more is closed at once and counted, and the engine still answers
   * Describe once the idle ones are gone.
   */
  @Test
  void idleConnectionsBeyondTheBoundAreClosedAtOnceAndCounted() throws Exception {
    EngineConfig two =
        EngineConfig.defaults().withBudgets(BudgetConfig.defaults().withMaxEndpoints(2));
    try (TransferEngine source = TransferEngine.start(two.withName("bounded-listener"))) {
      var target = source.localSegment();
      long refusedBefore = source.counters().connectionsRefused();
      try (RawLane idle1 = RawLane.connect(target);
          RawLane idle2 = RawLane.connect(target)) {
        assertTrue(
            RawLane.awaitCondition(AWAIT, () -> source.counters().connectionsAccepted() >= 2));
        try (RawLane third = RawLane.connect(target)) {
          RawLane.CloseResult closed = third.awaitClosed(AWAIT);
          assertTrue(closed.closed(), "the connection over the bound is closed");
          assertEquals(0, closed.bytesBeforeClose(), "and told nothing");
        }
        assertEquals(refusedBefore + 1, source.counters().connectionsRefused());
      }
      boolean served =
          RawLane.awaitCondition(
              AWAIT,
              () -> {
                try {
                  return io.orbite.engine.control.DescribeClient.describe(
                              java.net.InetSocketAddress.createUnresolved(
                                  target.host(), target.port()),
                              2000)
                          .epoch()
                      == target.epoch();
                } catch (RuntimeException e) {
                  return false;
                }
              });
      assertTrue(served, "Describe is answered again once the idle connections are gone");
    }
  }
}
