package io.orbite.transport.file;

import static io.orbite.transport.ReceiptProbes.sink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.nativebind.libc.Libc;
import io.orbite.nativebind.uring.IoUring;
import io.orbite.transport.TestContexts;
import io.orbite.transport.lane.LaneLifecycle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A ring lane ({@link RingLane}, on the lane runtime) and its owner ({@link RingLaneOwner}), alone
 * (C5, drain before failure; C7, failed cleanup is sticky): a READ of a FIFO that no one writes is
 * cancelled at its deadline. When the kernel confirms the cancel, the task fails TIMEOUT drained,
 * its memory untouched, and a close drains the lane: it closes its {@code FileIo}, its thread ends
 * and its owner stops. When the confirmation does not come within the destruction window (a
 * decorator at the lane's native function table withholds it), the lane is quarantined: listed as a
 * LANE in the {@link QuarantineLedger} with the task and bytes it retains, its owner shown
 * quarantined, the task never gets its receipt (so its batch keeps the loan), the lane keeps its
 * use of the file, refuses new work and its owner answers a close as quarantined; when the owner
 * stops, the lane's thread ends and the ring stays open. An owner that stops while its lane runs
 * has the lane cancel and drain what it holds and close its ring. A lane whose thread has not ended
 * long after its close (its ring's close is held) is quarantined at the owner's backstop, answering
 * every closer, until the thread ends: then it leaves the quarantine and its owner stops. A lane
 * whose ring breaks with an operation in the kernel is quarantined for good, keeping the ring. Run
 * over io_uring and over the FileChannel fallback.
 */
@ExtendWith(TestKitJUnit5Extension.class)
class RingLaneTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(RingLaneTest.class);
  }

  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  private static final Duration WINDOW = Duration.ofMillis(300);
  private static final long DEADLINE_NANOS = 100_000_000L;
  private static final byte GUARD = 0x5A;
  private static final AtomicInteger LANES = new AtomicInteger();

  @TempDir Path dir;
  private final EngineTally counters = new EngineTally();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final OwnerBoard board = new OwnerBoard();
  private final MemorySegment memory = Arena.ofAuto().allocate(256);
  private final AtomicBoolean ioClosed = new AtomicBoolean();
  private final String threadName = "orbite-test-file-ring-" + LANES.incrementAndGet();
  private int writer = -1;

  @AfterEach
  void closeWriter() {
    if (writer >= 0) {
      Libc.close(writer);
    }
  }

  /**
   * {@code io}, recording its close in {@code closed}. With {@code withheld} it also withholds the
   * completion of every operation (recording its id there), as a kernel that never answers would.
   */
  private static FileIo watched(FileIo io, AtomicBoolean closed, Set<Long> withheld) {
    return new ForwardingFileIo(io) {
      @Override
      public int poll(long waitNanos, CompletionSink sink) {
        return withheld == null
            ? io.poll(waitNanos, sink)
            : io.poll(waitNanos, (id, result) -> withheld.add(id));
      }

      @Override
      public void close() {
        closed.set(true);
        io.close();
      }
    };
  }

  /** A FIFO held open for writing by this test (so a READ of it waits), opened for the lane. */
  private FileHandle heldFifo(boolean uring) throws Exception {
    Path fifo = dir.resolve("stall.fifo");
    Process mk = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertEquals(0, mk.waitFor());
    writer = Libc.open(fifo.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
    FileHandle file = FileOpener.open(fifo, Access.READ, uring, new AtomicInteger(1));
    assertTrue(file.stream());
    return file;
  }

  private static FileIo io(String engine) {
    if (engine.equals("io_uring")) {
      assumeTrue(IoUring.isAvailable(), () -> IoUring.unavailabilityCause().orElse("?"));
      return new UringFileIo(4);
    }
    return new ChannelFileIo(4, 2, "file-test");
  }

  /** A lane over {@code io} and its owner, which starts it, as the FileTransport makes them. */
  private record Lane(RingLane lane, ActorRef<RingLaneOwner.Command> owner) {}

  private Lane spawnLane(FileIo io) {
    EngineConfig config =
        EngineConfig.defaults()
            .withTimeouts(TimeoutConfig.defaults().withDestructionWindowMillis(WINDOW.toMillis()));
    RingLane lane = new RingLane("file-test", threadName, io, counters, WINDOW);
    ActorRef<RingLaneOwner.Command> owner =
        testKit.spawn(
            RingLaneOwner.create(
                lane,
                TestContexts.context(
                    config, Runnable::run, counters, board, quarantine, FaultHooks.NONE)),
            "ring-lane-test");
    // The lane's first cycle has run (its classes are loaded) once it idles, so that the
    // 100 ms deadline of the READ queued next measures the lane, not the JVM warming up.
    testKit
        .createTestProbe()
        .awaitAssert(
            Duration.ofSeconds(10),
            () -> {
              assertTrue(
                  Thread.getAllStackTraces().keySet().stream()
                      .anyMatch(
                          t ->
                              t.getName().equals(threadName)
                                  && t.getState() == Thread.State.TIMED_WAITING),
                  threadName + " does not idle yet");
              return null;
            });
    return new Lane(lane, owner);
  }

  /** Waits until the lane's owner is in the behaviour that declares {@code state}. */
  private void awaitState(TestProbe<?> probe, ActorRef<?> owner, OwnerState state) {
    probe.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          assertEquals(state, board.declaredState(owner));
          return null;
        });
  }

  /** Queues a 64-byte READ of {@code file} into {@link #memory} at 64, deadline 100 ms. */
  private void queueRead(Lane lane, FileHandle file, TestProbe<Receipt> receipts, int task) {
    queueRead(lane, file, receipts, task, DEADLINE_NANOS);
  }

  /** Queues a 64-byte READ of {@code file} into {@link #memory} at 64. */
  private void queueRead(
      Lane lane, FileHandle file, TestProbe<Receipt> receipts, int task, long deadlineNanos) {
    assertTrue(file.acquire());
    assertTrue(
        lane.lane()
            .offer(
                new FileOp(
                    sink(receipts),
                    task,
                    false,
                    file,
                    memory.asSlice(64, 64),
                    0,
                    System.nanoTime() + deadlineNanos)));
    lane.lane().wakeIfQueued();
  }

  /** Waits (at most 10 s, on {@code probe}) until the lane is the one owner listed quarantined. */
  private QuarantinedOwner theQuarantinedLane(TestProbe<?> probe) {
    List<QuarantinedOwner> listed =
        probe.awaitAssert(
            Duration.ofSeconds(10),
            () -> {
              List<QuarantinedOwner> now = quarantine.list();
              assertEquals(1, now.size(), now::toString);
              return now;
            });
    QuarantinedOwner q = listed.getFirst();
    assertEquals("file ring lane file-test", q.owner());
    return q;
  }

  /** Waits until the lane's thread has left its cycle and ended. */
  private void awaitThreadEnded(TestProbe<?> probe) {
    probe.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          assertTrue(
              Thread.getAllStackTraces().keySet().stream()
                  .noneMatch(t -> t.getName().equals(threadName) && t.isAlive()),
              threadName + " still runs");
          return null;
        });
  }

  private void assertMemoryUntouched() {
    for (long i = 0; i < memory.byteSize(); i++) {
      assertEquals(GUARD, memory.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the memory");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aConfirmedCancelFailsTheTaskDrainedAndTheLaneClosesCleanly(String engine) throws Exception {
    FileIo io = watched(io(engine), ioClosed, null);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    Lane lane = spawnLane(io);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    queueRead(lane, file, receipts, 0);

    Receipt r = receipts.receiveMessage(Duration.ofSeconds(10));
    assertEquals(0, r.taskIndex());
    assertEquals(ErrorKind.TIMEOUT, r.error(), r::toString);
    assertEquals(RemoteEffect.NONE, r.effect());
    assertEquals(0, r.bytes());
    assertTrue(
        r.detail().startsWith("deadline passed") && r.detail().endsWith("drained"), r::toString);
    assertMemoryUntouched();
    assertEquals(0, file.uses(), "the lane gave back its use of the file");

    awaitState(receipts, lane.owner(), OwnerState.RUNNING);
    TestProbe<RingLaneOwner.Closed> closed = testKit.createTestProbe();
    lane.owner().tell(new RingLaneOwner.Close(closed.getRef()));
    assertEquals(new RingLaneOwner.Closed("file-test", false), closed.receiveMessage());
    closed.expectTerminated(lane.owner());
    assertEquals(List.of(), quarantine.list());
    assertEquals(0, counters.sum(Count.OWNERS_QUARANTINED));
    assertEquals(
        LaneLifecycle.State.CLOSED,
        lane.lane().lifecycle().state(),
        "the lane closed, not quarantined");
    assertTrue(lane.lane().ended(), "the lane's thread left its cycle");
    assertTrue(ioClosed.get(), "the lane closed its FileIo, with nothing in flight");
    awaitThreadEnded(receipts);
    receipts.expectNoMessage(Duration.ofMillis(50));
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aCancelNotConfirmedWithinTheWindowQuarantinesTheLaneWithWhatItRetains(String engine)
      throws Exception {
    Set<Long> withheld = ConcurrentHashMap.newKeySet();
    FileIo io = watched(io(engine), ioClosed, withheld);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    Lane lane = spawnLane(io);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    queueRead(lane, file, receipts, 0);

    QuarantinedOwner q = theQuarantinedLane(receipts);
    assertEquals(QuarantinedOwner.Kind.LANE, q.kind());
    assertEquals(1, q.tasks());
    assertEquals(64, q.bytes());
    assertTrue(q.reason().startsWith("READ of 64 B at offset 0 of file "), q::toString);
    assertTrue(
        q.reason().endsWith("its completion never came; the ring stays mapped"), q::toString);
    assertEquals(LaneLifecycle.State.QUARANTINED, lane.lane().lifecycle().state());
    awaitState(receipts, lane.owner(), OwnerState.QUARANTINED);
    assertEquals(1, counters.sum(Count.OWNERS_QUARANTINED));
    assertFalse(withheld.isEmpty(), "the cancelled READ did complete, and was withheld");

    // What it retains: no receipt (the batch keeps the loan and charges), the file's use.
    receipts.expectNoMessage(Duration.ofMillis(50));
    assertEquals(1, file.uses());
    assertMemoryUntouched();

    // Quarantined for good: new work (a READ of a plain file, which would complete) is refused,
    // a close answers quarantined and keeps the lane.
    Path plainPath = dir.resolve("plain.bin");
    Files.write(plainPath, new byte[4096]);
    FileHandle plain =
        FileOpener.open(plainPath, Access.READ, engine.equals("io_uring"), new AtomicInteger(1));
    queueRead(lane, plain, receipts, 1);
    Receipt refused = receipts.receiveMessage(Duration.ofSeconds(10));
    assertEquals(1, refused.taskIndex());
    assertEquals(ErrorKind.UNAVAILABLE, refused.error());
    assertTrue(refused.detail().contains("is quarantined"), refused::toString);
    assertEquals(0, plain.uses(), "the refused READ gave its use back");
    assertEquals(1, file.uses());
    assertMemoryUntouched();
    TestProbe<RingLaneOwner.Closed> closed = testKit.createTestProbe();
    lane.owner().tell(new RingLaneOwner.Close(closed.getRef()));
    assertEquals(new RingLaneOwner.Closed("file-test", true), closed.receiveMessage());
    assertEquals(List.of(q), quarantine.list(), "sticky: still listed after the close");
    assertEquals(LaneLifecycle.State.QUARANTINED, lane.lane().lifecycle().state());
    assertEquals(1, file.uses(), "the ring keeps its operation and so its use of the file");
    receipts.expectNoMessage(Duration.ofMillis(50));

    // The owner stops (its engine going away): the lane's thread ends, and the ring is kept.
    testKit.stop(lane.owner());
    awaitThreadEnded(receipts);
    assertFalse(ioClosed.get(), "a quarantined lane never closes its ring");
    assertEquals(LaneLifecycle.State.QUARANTINED, lane.lane().lifecycle().state());
    assertEquals(List.of(q), quarantine.list(), "sticky: still listed after its owner stopped");
    assertEquals(1, file.uses());
    assertMemoryUntouched();
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void anOwnerThatStopsWhileItsLaneRunsHasTheLaneDrainAndCloseItsRing(String engine)
      throws Exception {
    FileIo io = watched(io(engine), ioClosed, null);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    Lane lane = spawnLane(io);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    // A READ that waits in the kernel for a writer, its deadline far off.
    queueRead(lane, file, receipts, 0, Duration.ofMinutes(1).toNanos());
    awaitState(receipts, lane.owner(), OwnerState.RUNNING);
    receipts.expectNoMessage(Duration.ofMillis(100));

    testKit.stop(lane.owner());
    Receipt r = receipts.receiveMessage(Duration.ofSeconds(10));
    assertEquals(ErrorKind.UNAVAILABLE, r.error(), r::toString);
    assertEquals(0, r.bytes());
    assertTrue(r.detail().endsWith("drained"), r::toString);
    awaitThreadEnded(receipts);
    assertEquals(LaneLifecycle.State.CLOSED, lane.lane().lifecycle().state());
    assertTrue(ioClosed.get(), "the lane drained and closed its FileIo");
    assertEquals(0, file.uses());
    assertEquals(List.of(), quarantine.list());
    assertMemoryUntouched();
  }

  /**
   * {@code io}, recording its close in {@code closed}: its close waits for {@code closeMay} (a lane
   * thread that cannot let go of its ring), and once {@code pollFails} is set its next poll throws
   * before it reaps anything (a ring that breaks with operations in it).
   */
  private static FileIo breakable(
      FileIo io, AtomicBoolean closed, CountDownLatch closeMay, AtomicBoolean pollFails) {
    return new ForwardingFileIo(io) {
      @Override
      public int poll(long waitNanos, CompletionSink sink) {
        if (pollFails.compareAndSet(true, false)) {
          throw new IllegalStateException("test: the ring broke");
        }
        return io.poll(waitNanos, sink);
      }

      @Override
      public void close() {
        try {
          closeMay.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        closed.set(true);
        io.close();
      }
    };
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aLaneWhoseThreadHasNotEndedLongAfterItsCloseIsHeldUntilItEndsThenLeavesTheQuarantine(
      String engine) throws Exception {
    CountDownLatch closeMay = new CountDownLatch(1);
    Lane lane = spawnLane(breakable(io(engine), ioClosed, closeMay, new AtomicBoolean()));
    TestProbe<RingLaneOwner.Closed> first = testKit.createTestProbe();
    TestProbe<RingLaneOwner.Closed> second = testKit.createTestProbe();
    lane.owner().tell(new RingLaneOwner.Close(first.getRef()));
    awaitState(first, lane.owner(), OwnerState.DRAINING);
    lane.owner().tell(new RingLaneOwner.Close(second.getRef()));

    // Its thread is stuck closing its ring: past the backstop (twice the window, plus a second)
    // both closers are answered quarantined, and the lane is listed until its thread ends.
    first.expectNoMessage(Duration.ofMillis(1000));
    second.expectNoMessage(Duration.ZERO);
    assertEquals(
        new RingLaneOwner.Closed("file-test", true), first.receiveMessage(WINDOW.multipliedBy(10)));
    assertEquals(new RingLaneOwner.Closed("file-test", true), second.receiveMessage());
    awaitState(first, lane.owner(), OwnerState.QUARANTINED);
    List<QuarantinedOwner> listed = quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("file ring lane file-test", listed.getFirst().owner());
    assertEquals(QuarantinedOwner.Kind.LANE, listed.getFirst().kind());
    assertEquals(
        "its thread has not ended 1600 ms after the close; the ring stays mapped",
        listed.getFirst().reason());
    assertEquals(1, counters.sum(Count.OWNERS_QUARANTINED));
    assertFalse(lane.lane().ended());
    assertFalse(ioClosed.get());
    TestProbe<RingLaneOwner.Closed> late = testKit.createTestProbe();
    lane.owner().tell(new RingLaneOwner.Close(late.getRef()));
    assertEquals(new RingLaneOwner.Closed("file-test", true), late.receiveMessage());

    // The thread lets go: the ring is closed, the lane leaves the quarantine, its owner stops.
    closeMay.countDown();
    late.expectTerminated(lane.owner(), Duration.ofSeconds(10));
    assertEquals(List.of(), quarantine.list());
    assertTrue(ioClosed.get());
    assertEquals(LaneLifecycle.State.CLOSED, lane.lane().lifecycle().state());
    awaitThreadEnded(late);
    assertEquals(1, counters.sum(Count.OWNERS_QUARANTINED), "counted once");
    first.expectNoMessage(Duration.ZERO);
    second.expectNoMessage(Duration.ZERO);
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aLaneThatBreaksWithAnOperationInTheKernelIsQuarantinedForGoodKeepingItsRing(String engine)
      throws Exception {
    AtomicBoolean pollFails = new AtomicBoolean();
    CountDownLatch never = new CountDownLatch(1);
    FileIo io = breakable(io(engine), ioClosed, never, pollFails);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    Lane lane = spawnLane(io);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    // A READ that waits in the kernel for a writer, its deadline far off; then the ring breaks.
    queueRead(lane, file, receipts, 0, Duration.ofMinutes(1).toNanos());
    receipts.expectNoMessage(Duration.ofMillis(100));
    pollFails.set(true);
    lane.lane().wake();

    QuarantinedOwner q = theQuarantinedLane(receipts);
    assertEquals(QuarantinedOwner.Kind.LANE, q.kind());
    assertEquals(
        "the lane ended (java.lang.IllegalStateException: test: the ring broke) with 1"
            + " operation(s) in "
            + io
            + ", which stays open",
        q.reason());
    awaitState(receipts, lane.owner(), OwnerState.QUARANTINED);
    assertEquals(1, counters.sum(Count.OWNERS_QUARANTINED));
    awaitThreadEnded(receipts);
    assertEquals(LaneLifecycle.State.QUARANTINED, lane.lane().lifecycle().state());
    assertFalse(ioClosed.get(), "the ring with an operation in it is kept");
    assertEquals(1, file.uses(), "the READ keeps its use of the file");
    receipts.expectNoMessage(Duration.ofMillis(50));
    assertMemoryUntouched();

    // For good: a close is answered quarantined, and it stays listed.
    TestProbe<RingLaneOwner.Closed> closed = testKit.createTestProbe();
    lane.owner().tell(new RingLaneOwner.Close(closed.getRef()));
    assertEquals(new RingLaneOwner.Closed("file-test", true), closed.receiveMessage());
    assertEquals(List.of(q), quarantine.list());
    awaitState(receipts, lane.owner(), OwnerState.QUARANTINED);
  }
}
