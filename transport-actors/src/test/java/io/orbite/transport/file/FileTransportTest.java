package io.orbite.transport.file;

import static io.orbite.transport.ReceiptProbes.sink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.FileConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.Priority;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportCommand.FileOpenFailed;
import io.orbite.engine.spi.TransportCommand.FileOpened;
import io.orbite.engine.spi.TransportCommand.OpenFileReply;
import io.orbite.engine.spi.TransportCommand.PeerOpenFailed;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.nativebind.libc.Libc;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The file transport's supervisor ({@link FileTransport}): the file table (one entry per path, at
 * most {@code file.maxFileSegments}, an entry reused while its path names the same file with enough
 * access and retired otherwise), the ring lanes and their owners made on the first open, a lane
 * owner that stops, and the states serving → closing (CloseRequesterSide or Shutdown: every lane
 * draining) → closed (every open refused UNAVAILABLE), with what it answers in each and what the
 * owner view shows. Transfers go through the channels it hands out, over the real lanes: each
 * checks the whole destination, payload and guard bytes. The lanes' {@code FileIo} is wrapped at
 * the transport's own seam ({@link FileIoFaults}) to record it, withhold its completions or break
 * it; an open is kept in flight by holding the blocking-I/O executor.
 */
class FileTransportTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(FileTransportTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());
  private static final AtomicInteger ENGINES = new AtomicInteger();
  private static final byte GUARD = 0x5A;
  private static final Duration SHORT = Duration.ofMillis(200);
  private static final SegmentDescriptor SELF =
      new SegmentDescriptor("127.0.0.1", 4000, TestContexts.EPOCH);

  @TempDir Path dir;
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final EngineTally counters = new EngineTally();
  private final HeldExecutor blockingIo = new HeldExecutor();
  private final String engine = "file-transport-test-" + ENGINES.incrementAndGet();
  private final TestProbe<Object> watcher = testKit.createTestProbe();
  private final MemorySegment memory = Arena.ofAuto().allocate(64 * 1024);

  /** The lanes' FileIos, in the order the transport made them (lane i at index i). */
  private final List<Watched> made = new CopyOnWriteArrayList<>();

  private ActorRef<TransportCommand> file;
  private int writer = -1;

  @AfterEach
  void stop() {
    FileIoFaults.clear();
    blockingIo.release();
    if (file != null) {
      testKit.stop(file);
    }
    if (writer >= 0) {
      Libc.close(writer);
    }
    blockingIo.shutdown();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * A lane's {@code FileIo} as the transport made it, recording its submits and its close; it can
   * withhold every completion (as a kernel that never answers would) or, once armed, break at its
   * next poll after handing over what it reaped (a lane whose ring fails with nothing in flight).
   */
  private static final class Watched extends ForwardingFileIo {
    final AtomicInteger submitted = new AtomicInteger();
    final AtomicBoolean closed = new AtomicBoolean();
    final Set<Long> withheld = ConcurrentHashMap.newKeySet();
    volatile boolean withhold;
    final AtomicBoolean breakAfterReap = new AtomicBoolean();

    Watched(FileIo io) {
      super(io);
    }

    @Override
    public void submit(
        long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
      submitted.incrementAndGet();
      super.submit(id, write, file, memory, fileOffset);
    }

    @Override
    public int poll(long waitNanos, CompletionSink sink) {
      int n =
          withhold
              ? io.poll(waitNanos, (id, result) -> withheld.add(id))
              : io.poll(waitNanos, sink);
      if (n > 0 && breakAfterReap.compareAndSet(true, false)) {
        throw new IllegalStateException("test: the ring broke");
      }
      return n;
    }

    @Override
    public void close() {
      closed.set(true);
      super.close();
    }
  }

  private ActorRef<TransportCommand> spawn(FileConfig fileConfig) {
    return spawn(fileConfig, TimeoutConfig.defaults().destructionWindowMillis());
  }

  /** The transport under test, its lanes' FileIos recorded in {@link #made}. */
  private ActorRef<TransportCommand> spawn(FileConfig fileConfig, long destructionWindowMillis) {
    FileIoFaults.install(
        io -> {
          Watched w = new Watched(io);
          made.add(w);
          return w;
        });
    EngineConfig config =
        EngineConfig.defaults()
            .withName(engine)
            .withFile(fileConfig)
            .withTimeouts(
                TimeoutConfig.defaults().withDestructionWindowMillis(destructionWindowMillis));
    file =
        testKit.spawn(
            FileTransport.create(
                TestContexts.context(
                    config, blockingIo, counters, board, quarantine, FaultHooks.NONE)),
            "transport-file");
    return file;
  }

  private OpenFileReply open(Path path, Access access) {
    TestProbe<OpenFileReply> reply = testKit.createTestProbe();
    file.tell(new TransportCommand.OpenFile(path, access, SELF, reply.getRef()));
    return reply.receiveMessage(Duration.ofSeconds(10));
  }

  private FileOpened opened(Path path, Access access) {
    return assertInstanceOf(FileOpened.class, open(path, access));
  }

  private Path fileOf(String name, byte[] bytes) throws IOException {
    return Files.write(dir.resolve(name), bytes);
  }

  /** {@code n} bytes that differ from their neighbours and from the guard. */
  private static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) (seed + i * 7 + (i >>> 8));
      if (b[i] == GUARD) {
        b[i] = 1;
      }
    }
    return b;
  }

  /** Dispatches a task on {@code channel} and returns the receipts it owes. */
  private List<Receipt> transfer(
      PeerChannel channel, Op op, long localOffset, long fileOffset, long length, Duration within) {
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    int owed =
        channel.dispatch(
            new TaskWork(
                sink(receipts),
                0,
                op,
                memory,
                localOffset,
                TransferEngine.FILE_REGION_ID,
                fileOffset,
                length,
                System.nanoTime() + within.toNanos(),
                Priority.MEDIUM));
    channel.flush();
    List<Receipt> got = new ArrayList<>();
    for (int i = 0; i < owed; i++) {
      got.add(receipts.receiveMessage(Duration.ofSeconds(10)));
    }
    receipts.expectNoMessage(Duration.ofMillis(20));
    return got;
  }

  /** READs {@code expected.length} bytes at file offset 0 into {@link #memory} at {@code at}. */
  private void assertReads(PeerChannel channel, long at, byte[] expected) {
    memory.fill(GUARD);
    List<Receipt> receipts =
        transfer(channel, Op.READ, at, 0, expected.length, Duration.ofSeconds(10));
    long moved = 0;
    for (Receipt r : receipts) {
      assertNull(r.error(), r::toString);
      assertEquals(RemoteEffect.NONE, r.effect(), r::toString);
      moved += r.bytes();
    }
    assertEquals(expected.length, moved, "bytes confirmed");
    assertMemory(at, expected);
  }

  /** {@link #memory} holds {@code payload} at {@code at} and the guard everywhere else. */
  private void assertMemory(long at, byte[] payload) {
    for (long i = 0; i < memory.byteSize(); i++) {
      byte want = i >= at && i < at + payload.length ? payload[(int) (i - at)] : GUARD;
      assertEquals(want, memory.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the memory");
    }
  }

  private OwnerView.Owner row() {
    String key = board.key(file);
    return board.snapshot().owners().stream()
        .filter(o -> o.path().equals(key))
        .findFirst()
        .orElse(null);
  }

  private List<OwnerView.Owner> laneRows() {
    return board.snapshot().owners().stream().filter(o -> o.kind().equals("RingLane")).toList();
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  private void awaitRow(OwnerState state, long files, long filesLimit) {
    eventually(
        () -> {
          OwnerView.Owner r = row();
          assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
          assertEquals("FileTransport", r.kind());
          assertEquals(Map.of("files", files, "filesLimit", filesLimit), r.charges());
        });
  }

  /** The names of this engine's live ring-lane threads. */
  private List<String> laneThreads() {
    String prefix = "orbite-" + engine + "-file-ring-";
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith(prefix))
        .map(Thread::getName)
        .sorted()
        .toList();
  }

  /**
   * How many of this process's descriptors name the file at {@code path}, or a file that was there
   * and has been replaced or removed since (the kernel names it {@code <path> (deleted)}).
   */
  private static long descriptorsOf(Path path) throws IOException {
    String real = path.toAbsolutePath().normalize().toString();
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.filter(
              fd -> {
                try {
                  String target = Files.readSymbolicLink(fd).toString();
                  return target.equals(real) || target.equals(real + " (deleted)");
                } catch (IOException e) {
                  return false; // closed meanwhile, or the listing's own descriptor
                }
              })
          .count();
    }
  }

  @Test
  void theLanesAreMadeOnTheFirstOpenAndItsChannelReadsTheFileExactly() throws IOException {
    spawn(FileConfig.defaults().withLanes(2).withMaxChunkBytes(4096));
    awaitRow(OwnerState.SERVING, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    assertEquals(List.of(), laneRows(), "no lane before the first open");
    assertEquals(List.of(), laneThreads());
    assertEquals(List.of(), made);

    byte[] content = pattern(3 * 4096 + 100, 3);
    Path path = fileOf("data.bin", content);
    FileOpened first = opened(path, Access.READ);
    assertEquals(content.length, first.lengthBytes());
    assertEquals(Access.READ, first.access());
    assertEquals("file " + path, first.label());
    assertEquals(2, made.size(), "file.lanes lanes made at the first open");
    eventually(
        () -> {
          List<OwnerView.Owner> lanes = laneRows();
          assertEquals(2, lanes.size(), lanes::toString);
          assertTrue(
              lanes.stream().allMatch(l -> l.state() == OwnerState.RUNNING), lanes::toString);
          assertEquals(
              List.of("ring-lane-0", "ring-lane-1"),
              lanes.stream()
                  .map(l -> l.path().substring(l.path().lastIndexOf('/') + 1))
                  .sorted()
                  .toList());
          assertEquals(
              List.of("orbite-" + engine + "-file-ring-0", "orbite-" + engine + "-file-ring-1"),
              laneThreads());
        });
    awaitRow(OwnerState.SERVING, 1, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);

    // Four chunks, dealt over both lanes: the whole file lands at offset 64, guards around it.
    assertReads(first.channel(), 64, content);
    assertTrue(made.get(0).submitted.get() > 0 && made.get(1).submitted.get() > 0);

    // The same file with the same access: the same entry, no second lane set.
    FileOpened again = opened(path, Access.READ);
    assertSame(first.channel(), again.channel());
    assertEquals(2, made.size());
    awaitRow(OwnerState.SERVING, 1, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
  }

  @Test
  void anEntryWhosePathNowNamesAnotherFileIsRetiredAndTheOpenGetsTheNewFile() throws IOException {
    spawn(FileConfig.defaults());
    byte[] before = pattern(5000, 11);
    Path path = fileOf("model.bin", before);
    FileOpened old = opened(path, Access.READ);
    assertReads(old.channel(), 8, before);

    // The path is replaced (a new file renamed over it), as a writer publishing a new version does.
    byte[] after = pattern(7000, 29);
    Path next = fileOf("model.bin.next", after);
    Files.move(next, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    FileOpened fresh = opened(path, Access.READ);
    assertNotSame(old.channel(), fresh.channel());
    assertEquals(after.length, fresh.lengthBytes());
    assertEquals(
        new ChannelGate.Closed(
            ChannelGate.Why.LOCAL_CLOSE, "replaced: the path now names another file"),
        old.channel().gate().state());
    assertTrue(fresh.channel().gate().active());
    awaitRow(OwnerState.SERVING, 1, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);

    // The old channel refuses, its memory untouched; the new one reads the new file.
    memory.fill(GUARD);
    Receipt refused =
        transfer(old.channel(), Op.READ, 8, 0, before.length, Duration.ofSeconds(10)).getFirst();
    assertEquals(ErrorKind.UNAVAILABLE, refused.error());
    assertEquals(RemoteEffect.NONE, refused.effect());
    assertEquals(0, refused.bytes());
    assertTrue(
        refused.detail().contains("is closed: replaced: the path now names another file"),
        refused::toString);
    assertMemory(0, new byte[0]);
    assertReads(fresh.channel(), 8, after);
    assertEquals(
        1, descriptorsOf(path), "the replaced file's descriptor was closed: only one left");
  }

  @Test
  void anOpenWithOtherAccessRetiresTheEntryAndReopensTheFileForBoth() throws IOException {
    spawn(FileConfig.defaults());
    byte[] content = pattern(4096, 5);
    Path path = fileOf("rw.bin", content);
    FileOpened reading = opened(path, Access.READ);
    FileOpened writing = opened(path, Access.WRITE);
    assertNotSame(reading.channel(), writing.channel());
    assertEquals(Access.WRITE, writing.access());
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.LOCAL_CLOSE, "reopened with other access"),
        reading.channel().gate().state());
    // Reopened READ_WRITE: a READ open now reuses it. Each answer grants what its open asked.
    FileOpened readingAgain = opened(path, Access.READ);
    assertSame(writing.channel(), readingAgain.channel());
    assertEquals(Access.READ, readingAgain.access());

    byte[] written = pattern(1000, 77);
    memory.fill(GUARD);
    MemorySegment.copy(written, 0, memory, ValueLayout.JAVA_BYTE, 100, written.length);
    List<Receipt> receipts =
        transfer(writing.channel(), Op.WRITE, 100, 50, written.length, Duration.ofSeconds(10));
    assertEquals(1, receipts.size());
    assertNull(receipts.getFirst().error(), receipts.getFirst()::toString);
    assertEquals(written.length, receipts.getFirst().bytes());
    assertEquals(RemoteEffect.APPLIED, receipts.getFirst().effect());
    byte[] expected = content.clone();
    System.arraycopy(written, 0, expected, 50, written.length);
    assertTrue(
        java.util.Arrays.equals(expected, Files.readAllBytes(path)),
        "the file holds the written bytes at 50 and its own bytes elsewhere");
    assertMemory(100, written);
  }

  @Test
  void theTableHoldsAtMostMaxFileSegmentsFilesAndRefusesTheNextExhaustedNamingThem()
      throws IOException {
    spawn(FileConfig.defaults().withMaxFileSegments(1));
    byte[] a = pattern(300, 1);
    Path first = fileOf("a.bin", a);
    Path second = fileOf("b.bin", pattern(300, 2));
    FileOpened held = opened(first, Access.READ);

    assertEquals(
        new FileOpenFailed(
            ErrorKind.RESOURCE_EXHAUSTED,
            "openFileSegment "
                + second
                + ": the file table is full (file.maxFileSegments = 1 open files: ["
                + first
                + "])"),
        open(second, Access.READ));
    assertEquals(0, descriptorsOf(second), "the refused file was never opened");
    awaitRow(OwnerState.SERVING, 1, 1);
    // The open file is still served, through its entry.
    assertSame(held.channel(), opened(first, Access.READ).channel());
    assertReads(held.channel(), 0, a);
  }

  @Test
  void aFileTheOpenerRefusesIsAnsweredWithItsKindAndTheTableIsLeftAsItWas() throws IOException {
    spawn(FileConfig.defaults());
    byte[] content = pattern(300, 3);
    Path kept = fileOf("kept.bin", content);
    FileOpened held = opened(kept, Access.READ);
    Path missing = dir.resolve("missing.bin");
    assertEquals(
        new FileOpenFailed(
            ErrorKind.INVALID_ARGUMENT, "openFileSegment " + missing + ": no such file"),
        open(missing, Access.READ));
    assertEquals(
        new FileOpenFailed(
            ErrorKind.INVALID_ARGUMENT, "openFileSegment " + dir + ": is a directory, not a file"),
        open(dir, Access.READ));
    awaitRow(OwnerState.SERVING, 1, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    assertSame(held.channel(), opened(kept, Access.READ).channel());
    assertReads(held.channel(), 0, content);
  }

  @Test
  void lanesThatCannotBeSetUpRefuseTheOpenUnavailableAndTheNextOpenTriesAgain() throws IOException {
    spawn(FileConfig.defaults());
    FileIoFaults.install(
        io -> {
          io.close();
          throw new IllegalStateException("test: no ring for you");
        });
    Path path = fileOf("c.bin", pattern(64, 9));
    assertEquals(
        new FileOpenFailed(
            ErrorKind.UNAVAILABLE,
            "openFileSegment " + path + ": cannot set up ring lane 0: test: no ring for you"),
        open(path, Access.READ));
    assertEquals(List.of(), laneRows());
    awaitRow(OwnerState.SERVING, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);

    FileIoFaults.clear();
    assertReads(opened(path, Access.READ).channel(), 0, pattern(64, 9));
    eventually(() -> assertEquals(1, laneRows().size()));
  }

  @Test
  void whatTheFileTransportDoesNotServeIsAnsweredAtOnce() throws IOException {
    spawn(FileConfig.defaults());
    TestProbe<TransportCommand.OpenPeerReply> peer = testKit.createTestProbe();
    file.tell(
        new TransportCommand.OpenPeer(
            new SegmentDescriptor("127.0.0.1", 4001, 7), null, peer.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "the file transport does not open peers"),
        peer.receiveMessage());

    // A handed-over connection is closed: the file transport serves no connection.
    try (ServerSocketChannel listener =
            ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
        SocketChannel client = SocketChannel.open(listener.getLocalAddress())) {
      file.tell(new TransportCommand.AdoptConnection(listener.accept(), ByteBuffer.allocate(40)));
      client.socket().setSoTimeout(10_000);
      assertEquals(-1, client.socket().getInputStream().read(), "closed by the transport");
    }

    // Its source side has nothing to close; it keeps serving.
    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseSourceSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    awaitRow(OwnerState.SERVING, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    byte[] content = pattern(64, 4);
    assertReads(opened(fileOf("d.bin", content), Access.READ).channel(), 0, content);
  }

  @Test
  void closeRequesterSideClosesEveryLaneAndEntryThenRefusesEveryOpenUnavailable()
      throws IOException {
    spawn(FileConfig.defaults().withLanes(2));
    Path path = fileOf("e.bin", pattern(64, 8));
    FileOpened open = opened(path, Access.READ);
    assertEquals(1, descriptorsOf(path));

    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    assertTrue(made.stream().allMatch(w -> w.closed.get()), "every lane closed its FileIo");
    eventually(
        () -> {
          assertEquals(List.of(), laneRows(), "every lane's owner stopped");
          assertEquals(List.of(), laneThreads());
        });
    assertEquals(List.of(), quarantine.list());
    assertEquals(
        new ChannelGate.Closed(
            ChannelGate.Why.LOCAL_CLOSE, "closed with the engine's requester side"),
        open.channel().gate().state());
    assertEquals(0, descriptorsOf(path), "the entry's file was closed");

    // Closed: opens refused UNAVAILABLE naming it; every close and shutdown answered at once.
    assertEquals(
        new FileOpenFailed(
            ErrorKind.UNAVAILABLE, "openFileSegment " + path + ": the file transport is closed"),
        open(path, Access.READ));
    assertEquals(0, descriptorsOf(path), "the refused open opened nothing");
    TestProbe<TransportCommand.OpenPeerReply> peer = testKit.createTestProbe();
    file.tell(new TransportCommand.OpenPeer(SELF, null, peer.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "the file transport is closed"),
        peer.receiveMessage());
    file.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    file.tell(new TransportCommand.CloseSourceSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    file.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(new TransportCommand.ShutdownDone("FILE"), done.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
  }

  @Test
  void shutdownWithNoOpenEverMadeClosesAtOnceWithNoLaneMade() {
    spawn(FileConfig.defaults());
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    file.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(new TransportCommand.ShutdownDone("FILE"), done.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    assertEquals(List.of(), made, "a close makes no lane");
    assertEquals(
        new FileOpenFailed(
            ErrorKind.UNAVAILABLE, "openFileSegment " + dir + ": the file transport is closed"),
        open(dir, Access.READ));
    assertEquals(List.of(), made, "nor does an open refused after it");
  }

  /** A FIFO held open for writing by this test (so a READ of it waits in the kernel). */
  private Path heldFifo() throws Exception {
    Path fifo = dir.resolve("stall.fifo");
    Process mk = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertEquals(0, mk.waitFor());
    writer = Libc.open(fifo.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
    return fifo;
  }

  @Test
  void whileALaneDrainsTheTransportIsClosingAndAnswersEveryCloserOnceTheLaneIsQuarantined()
      throws Exception {
    spawn(FileConfig.defaults().withLanes(2), 2000);
    Path fifo = heldFifo();
    FileOpened open = opened(fifo, Access.READ);
    assertEquals(Long.MAX_VALUE, open.lengthBytes());
    made.forEach(w -> w.withhold = true);
    memory.fill(GUARD);
    // A READ that waits in the kernel for the writer's data, its deadline far off: on lane 0.
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    assertEquals(
        1,
        open.channel()
            .dispatch(
                new TaskWork(
                    sink(receipts),
                    0,
                    Op.READ,
                    memory,
                    64,
                    TransferEngine.FILE_REGION_ID,
                    0,
                    64,
                    System.nanoTime() + Duration.ofMinutes(1).toNanos(),
                    Priority.MEDIUM)));
    open.channel().flush();
    eventually(() -> assertEquals(1, made.get(0).submitted.get()));

    TestProbe<TransportCommand.SideClosed> closer = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseRequesterSide(closer.getRef()));
    awaitRow(OwnerState.CLOSING, 1, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    eventually(
        () -> {
          List<OwnerView.Owner> lanes = laneRows();
          assertEquals(1, lanes.size(), "the idle lane closed and its owner stopped");
          assertEquals(OwnerState.DRAINING, lanes.getFirst().state(), lanes::toString);
        });

    // Closing: opens refused, the source side answered, later closes and shutdowns wait.
    assertEquals(
        new FileOpenFailed(
            ErrorKind.UNAVAILABLE, "openFileSegment " + fifo + ": the file transport is closed"),
        open(fifo, Access.READ));
    TestProbe<TransportCommand.OpenPeerReply> peer = testKit.createTestProbe();
    file.tell(new TransportCommand.OpenPeer(SELF, null, peer.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "the file transport is closing"),
        peer.receiveMessage());
    TestProbe<TransportCommand.SideClosed> source = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseSourceSide(source.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), source.receiveMessage());
    TestProbe<TransportCommand.SideClosed> secondCloser = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseRequesterSide(secondCloser.getRef()));
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    file.tell(new TransportCommand.Shutdown(done.getRef()));
    closer.expectNoMessage(SHORT);
    secondCloser.expectNoMessage(Duration.ZERO);
    done.expectNoMessage(Duration.ZERO);

    // The cancel is never confirmed: a destruction window later the lane is quarantined, and
    // every closer is answered.
    assertEquals(
        new TransportCommand.SideClosed("FILE"), closer.receiveMessage(Duration.ofSeconds(10)));
    assertEquals(new TransportCommand.SideClosed("FILE"), secondCloser.receiveMessage());
    assertEquals(new TransportCommand.ShutdownDone("FILE"), done.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    List<QuarantinedOwner> listed = quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("file ring lane file-0", listed.getFirst().owner());
    assertEquals(QuarantinedOwner.Kind.LANE, listed.getFirst().kind());
    assertEquals(1, listed.getFirst().tasks());
    assertEquals(64, listed.getFirst().bytes());
    eventually(
        () ->
            assertEquals(
                List.of(OwnerState.QUARANTINED),
                laneRows().stream().map(OwnerView.Owner::state).toList()));
    assertFalse(made.get(0).closed.get(), "a quarantined lane keeps its ring");
    assertTrue(made.get(1).closed.get());
    assertEquals(
        new ChannelGate.Closed(
            ChannelGate.Why.LOCAL_CLOSE, "closed with the engine's requester side"),
        open.channel().gate().state());
    assertEquals(
        2, descriptorsOf(fifo), "the test's writer, and the file the stuck READ still uses");
    receipts.expectNoMessage(SHORT);
    assertMemory(0, new byte[0]);
  }

  @ParameterizedTest(name = "the path already open: {0}")
  @ValueSource(booleans = {false, true})
  void anOpenInFlightWhenTheTransportClosesIsRefusedAndSoIsEveryOpenWaitingBehindIt(
      boolean alreadyOpen) throws IOException {
    spawn(FileConfig.defaults());
    Path path = fileOf("f.bin", pattern(64, 6));
    if (alreadyOpen) {
      opened(path, Access.READ); // the next open checks the entry's file on the executor
    }
    blockingIo.hold();
    TestProbe<OpenFileReply> first = testKit.createTestProbe();
    TestProbe<OpenFileReply> behind = testKit.createTestProbe();
    file.tell(new TransportCommand.OpenFile(path, Access.READ, SELF, first.getRef()));
    file.tell(new TransportCommand.OpenFile(path, Access.READ, SELF, behind.getRef()));
    eventually(() -> assertEquals(1, blockingIo.waiting(), "one open of the path at a time"));
    first.expectNoMessage(SHORT);
    behind.expectNoMessage(Duration.ZERO);

    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);

    // The open (or check) ends after the close: both requests are refused, nothing stays open.
    blockingIo.release();
    FileOpenFailed refused =
        new FileOpenFailed(
            ErrorKind.UNAVAILABLE, "openFileSegment " + path + ": the file transport is closed");
    assertEquals(refused, first.receiveMessage(Duration.ofSeconds(10)));
    assertEquals(refused, behind.receiveMessage(Duration.ofSeconds(10)));
    eventually(
        () -> {
          try {
            assertEquals(0, descriptorsOf(path), "the file opened after the close was closed");
          } catch (IOException e) {
            throw new AssertionError(e);
          }
        });
  }

  @Test
  void aLaneWhoseRingBreaksEndsItsOwnerAndTheTransportWorksOnWithTheOthers() throws IOException {
    spawn(FileConfig.defaults().withLanes(2).withMaxChunkBytes(4096));
    byte[] small = pattern(64, 12);
    Path path = fileOf("g.bin", small);
    FileOpened open = opened(path, Access.READ);
    eventually(() -> assertEquals(2, laneRows().size()));

    // Lane 0's ring breaks at the poll that reaps the first READ: its completion is handed over
    // first, so nothing is in flight when the lane ends, and it closes its ring.
    made.get(0).breakAfterReap.set(true);
    assertReads(open.channel(), 32, small);
    assertEquals(1, made.get(0).submitted.get(), "the READ went to lane 0");
    eventually(
        () -> {
          List<OwnerView.Owner> lanes = laneRows();
          assertEquals(1, lanes.size(), lanes::toString);
          assertTrue(lanes.getFirst().path().endsWith("/ring-lane-1"), lanes::toString);
          assertTrue(made.get(0).closed.get(), "the broken lane closed its ring");
          assertEquals(List.of("orbite-" + engine + "-file-ring-1"), laneThreads());
        });
    assertEquals(List.of(), quarantine.list(), "nothing was left in the kernel");

    // Work goes to the lane that runs; a close waits only for it.
    byte[] larger = pattern(3 * 4096, 13);
    Path other = fileOf("h.bin", larger);
    int before = made.get(1).submitted.get();
    assertReads(opened(other, Access.READ).channel(), 0, larger);
    assertEquals(before + 3, made.get(1).submitted.get(), "every chunk on lane 1");
    assertEquals(1, made.get(0).submitted.get());
    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    file.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("FILE"), closed.receiveMessage());
    awaitRow(OwnerState.CLOSED, 0, FileConfig.DEFAULT_MAX_FILE_SEGMENTS);
    assertTrue(made.get(1).closed.get());
  }
}
