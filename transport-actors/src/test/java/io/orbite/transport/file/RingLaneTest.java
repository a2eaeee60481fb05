package io.orbite.transport.file;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.nativebind.libc.Libc;
import io.orbite.nativebind.uring.IoUring;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A ring lane's cancel (C5, drain before failure; C7, failed cleanup is sticky): a READ of a FIFO
 * that no one writes is cancelled at its deadline. When the kernel confirms the cancel, the task
 * fails TIMEOUT drained, its memory untouched, and the lane closes cleanly. When the confirmation
 * does not come within the destruction window (a decorator at the lane's native function table
 * withholds it), the lane is quarantined: listed as a LANE in the {@link QuarantineLedger} with the
 * task and bytes it retains, the task never gets its receipt (so its batch keeps the loan), the
 * lane keeps its use of the file, refuses new work and answers a close as quarantined. Run over
 * io_uring and over the FileChannel fallback.
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

  @TempDir Path dir;
  private final EngineTally counters = new EngineTally();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final MemorySegment memory = Arena.ofAuto().allocate(256);
  private int writer = -1;

  @AfterEach
  void closeWriter() {
    if (writer >= 0) {
      Libc.close(writer);
    }
  }

  /** Hands every receipt it gets to {@code probe}, as a batch's sink would take them. */
  private static ReceiptSink sink(TestProbe<Receipt> probe) {
    return new ReceiptSink() {
      @Override
      public void deliver(Receipts receipts) {
        for (int k = 0; k < receipts.size(); k++) {
          probe.getRef().tell(receipts.get(k));
        }
      }

      @Override
      public boolean cancelled() {
        return false;
      }
    };
  }

  /** Withholds the completion of every operation, as a kernel that never answers would. */
  private static FileIo withholding(FileIo io, Set<Long> withheld) {
    return new FileIo() {
      @Override
      public String engine() {
        return io.engine();
      }

      @Override
      public int capacity() {
        return io.capacity();
      }

      @Override
      public void submit(
          long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
        io.submit(id, write, file, memory, fileOffset);
      }

      @Override
      public void cancel(long id) {
        io.cancel(id);
      }

      @Override
      public int poll(long waitNanos, CompletionSink sink) {
        return io.poll(waitNanos, (id, result) -> withheld.add(id));
      }

      @Override
      public void close() {
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

  /** Spawns a lane over {@code io} on the pinned ring dispatcher, as the FileTransport does. */
  private LaneHandle spawnLane(FileIo io) {
    LaneHandle handle = new LaneHandle("file-test");
    handle.lane =
        testKit.spawn(
            RingLane.create(handle, io, counters, new OwnerBoard(), WINDOW, quarantine),
            "ring-lane-test",
            DispatcherSelector.fromConfig("orbite.file-ring-dispatcher"));
    return handle;
  }

  /** Queues a 64-byte READ of {@code file} into {@link #memory} at 64, deadline 100 ms. */
  private void queueRead(LaneHandle lane, FileHandle file, TestProbe<Receipt> receipts, int task) {
    assertTrue(file.acquire());
    lane.queue.add(
        new FileOp(
            sink(receipts),
            task,
            false,
            file,
            memory.asSlice(64, 64),
            0,
            System.nanoTime() + DEADLINE_NANOS));
    lane.wake();
  }

  private void assertMemoryUntouched() {
    for (long i = 0; i < memory.byteSize(); i++) {
      assertEquals(GUARD, memory.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the memory");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aConfirmedCancelFailsTheTaskDrainedAndTheLaneClosesCleanly(String engine) throws Exception {
    FileIo io = io(engine);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    LaneHandle lane = spawnLane(io);
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

    TestProbe<RingLane.Closed> closed = testKit.createTestProbe();
    lane.lane.tell(new RingLane.Close(closed.getRef()));
    assertEquals(new RingLane.Closed("file-test", false), closed.receiveMessage());
    closed.expectTerminated(lane.lane);
    assertEquals(List.of(), quarantine.list());
    assertEquals(0, counters.sum(Count.OWNERS_QUARANTINED));
    assertEquals(
        LaneLifecycle.State.CLOSED, lane.lifecycle.state(), "the lane closed, not quarantined");
    receipts.expectNoMessage(Duration.ofMillis(50));
  }

  @ParameterizedTest
  @ValueSource(strings = {"io_uring", "channel"})
  void aCancelNotConfirmedWithinTheWindowQuarantinesTheLaneWithWhatItRetains(String engine)
      throws Exception {
    Set<Long> withheld = ConcurrentHashMap.newKeySet();
    FileIo io = withholding(io(engine), withheld);
    memory.fill(GUARD);
    FileHandle file = heldFifo(engine.equals("io_uring"));
    LaneHandle lane = spawnLane(io);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    queueRead(lane, file, receipts, 0);

    List<QuarantinedOwner> listed =
        receipts.awaitAssert(
            Duration.ofSeconds(10),
            () -> {
              List<QuarantinedOwner> now = quarantine.list();
              assertEquals(1, now.size(), now::toString);
              return now;
            });
    QuarantinedOwner q = listed.getFirst();
    assertEquals("file ring lane file-test", q.owner());
    assertEquals(QuarantinedOwner.Kind.LANE, q.kind());
    assertEquals(1, q.tasks());
    assertEquals(64, q.bytes());
    assertTrue(q.reason().startsWith("READ of 64 B at offset 0 of file "), q::toString);
    assertTrue(
        q.reason().endsWith("its completion never came; the ring stays mapped"), q::toString);
    assertEquals(LaneLifecycle.State.QUARANTINED, lane.lifecycle.state());
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
    TestProbe<RingLane.Closed> closed = testKit.createTestProbe();
    ActorRef<RingLane.Command> ref = lane.lane;
    ref.tell(new RingLane.Close(closed.getRef()));
    assertEquals(new RingLane.Closed("file-test", true), closed.receiveMessage());
    assertEquals(listed, quarantine.list(), "sticky: still listed after the close");
    receipts.expectNoMessage(Duration.ofMillis(50));
  }
}
