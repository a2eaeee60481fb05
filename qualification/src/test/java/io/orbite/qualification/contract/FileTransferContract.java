package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.FileConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.libc.Libc;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import io.orbite.transport.file.FileHandle;
import io.orbite.transport.file.FileIo;
import io.orbite.transport.file.FileIoFaults;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file transport's contract, run once per I/O engine (io_uring and the FileChannel fallback):
 * memory to file to memory round trips checked byte for byte with guards, path replacement, the
 * bounded file table, bad opens, exact short results, and the FIFO stall both ways (drained cancel,
 * and quarantine when a test decorator at the lane's native function table withholds the
 * completion). Temporary files live under {@code @TempDir} on the real disk.
 */
abstract class FileTransferContract {
  private static final long GUARD = 0x6A6A;
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir Path dir;
  private final List<TransferEngine> engines = new ArrayList<>();

  /** {@code "io_uring"} or {@code "channel"}. */
  abstract String engineName();

  EngineConfig config() {
    return EngineConfig.defaults().withFile(FileConfig.defaults().withEngine(engineName()));
  }

  TransferEngine start(EngineConfig config) {
    TransferEngine e =
        TransferEngine.start(config.withName("file-" + engineName().replace('_', '-')));
    engines.add(e);
    return e;
  }

  @AfterEach
  void closeEngines() {
    FileIoFaults.clear();
    for (TransferEngine e : engines) {
      e.close(Duration.ofSeconds(30));
    }
  }

  /** A file of {@code size} bytes holding the guard pattern {@code seed}. */
  static Path guardedFile(Path file, long size, long seed) throws IOException {
    try (FileChannel ch =
            FileChannel.open(
                file,
                StandardOpenOption.CREATE_NEW,
                StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        Arena arena = Arena.ofConfined()) {
      ch.truncate(size);
      MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
      Pattern.fill(m, 0, size, seed, 0);
      m.force();
    }
    return file;
  }

  static void assertFile(Path file, List<Span> spans, long guardSeed, String what)
      throws IOException {
    try (FileChannel ch = FileChannel.open(file);
        Arena arena = Arena.ofConfined()) {
      MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
      assertRegion(m, spans, guardSeed, what);
    }
  }

  static BatchStatus run(TransferEngine engine, List<TransferRequest> requests) {
    Batch b = engine.allocateBatch(Math.max(1, requests.size()));
    b.submit(requests);
    BatchStatus s = b.await(WAIT);
    assertTrue(s.done(), "batch did not finish: " + s);
    b.free();
    return s;
  }

  static void assertAllCompleted(BatchStatus s, List<TransferRequest> requests) {
    for (TaskResult t : s.tasks()) {
      assertEquals(TaskState.COMPLETED, t.state(), () -> "task " + t.index() + ": " + t);
      assertEquals(requests.get(t.index()).lengthBytes(), t.bytes());
      assertTrue(t.locallyDrained());
    }
  }

  @Test
  void roundTripsAtUnalignedOffsetsFrom1ByteTo64MiBAllInFlight() throws IOException {
    TransferEngine engine = start(config());
    long[] sizes = {1, 7, 511, 4095, 4097, 65_537, (1 << 20) + 3, 5 * (1 << 20) + 1, 64L << 20};
    long total = 0;
    for (long s : sizes) {
      total += s + 13;
    }
    long memSize = total + 4096;
    long fileSize = total + 8192;
    Path file = guardedFile(dir.resolve("data.bin"), fileSize, GUARD + 1);
    RegisteredMemory src = EnginePair.guarded(engine, memSize, Access.READ_WRITE, GUARD + 2);
    RegisteredMemory dst = EnginePair.guarded(engine, memSize, Access.READ_WRITE, GUARD + 3);
    RemoteSegment seg = engine.openFileSegment(file, Access.READ_WRITE, WAIT);
    assertEquals(fileSize, seg.region(TransferEngine.FILE_REGION_ID).orElseThrow().lengthBytes());

    List<TransferRequest> writes = new ArrayList<>();
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> srcSpans = new ArrayList<>();
    List<Span> fileSpans = new ArrayList<>();
    List<Span> dstSpans = new ArrayList<>();
    long memAt = 3;
    long fileAt = 4099;
    long seed = 100;
    for (long size : sizes) {
      Pattern.fill(src.segment(), memAt, size, seed, 0);
      srcSpans.add(new Span(memAt, size, seed, 0));
      fileSpans.add(new Span(fileAt, size, seed, 0));
      dstSpans.add(new Span(memAt + 1, size, seed, 0));
      writes.add(
          TransferRequest.write(src, memAt, seg, TransferEngine.FILE_REGION_ID, fileAt, size));
      reads.add(
          TransferRequest.read(dst, memAt + 1, seg, TransferEngine.FILE_REGION_ID, fileAt, size));
      memAt += size + 13;
      fileAt += size + 11;
      seed++;
    }
    BatchStatus w = run(engine, writes);
    assertAllCompleted(w, writes);
    w.tasks().forEach(t -> assertEquals(RemoteEffect.APPLIED, t.remoteEffect()));
    assertFile(file, fileSpans, GUARD + 1, "file after WRITEs");
    assertRegion(src.segment(), srcSpans, GUARD + 2, "source memory after WRITEs");

    BatchStatus r = run(engine, reads);
    assertAllCompleted(r, reads);
    r.tasks().forEach(t -> assertEquals(RemoteEffect.NONE, t.remoteEffect()));
    assertRegion(dst.segment(), dstSpans, GUARD + 3, "destination memory after READs");
    assertFile(file, fileSpans, GUARD + 1, "file after READs");
    assertTrue(engine.owed().isIdle(), engine.owed().toString());
  }

  @Test
  void twoThousandSmallTasksInFlightInOneBatch() throws IOException {
    TransferEngine engine = start(config());
    int n = 2000;
    int size = 1000;
    long stride = size + 5;
    Path file = guardedFile(dir.resolve("small.bin"), n * stride + 100, GUARD + 4);
    RegisteredMemory src = EnginePair.guarded(engine, n * stride, Access.READ_WRITE, GUARD + 5);
    RegisteredMemory dst = EnginePair.guarded(engine, n * stride, Access.READ_WRITE, GUARD + 6);
    RemoteSegment seg = engine.openFileSegment(file, Access.READ_WRITE, WAIT);
    List<TransferRequest> writes = new ArrayList<>();
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    List<Span> fileSpans = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Pattern.fill(src.segment(), i * stride, size, 1000 + i, 0);
      spans.add(new Span(i * stride, size, 1000 + i, 0));
      fileSpans.add(new Span(i * stride + 50, size, 1000 + i, 0));
      writes.add(
          TransferRequest.write(
              src, i * stride, seg, TransferEngine.FILE_REGION_ID, i * stride + 50, size));
      reads.add(
          TransferRequest.read(
              dst, i * stride, seg, TransferEngine.FILE_REGION_ID, i * stride + 50, size));
    }
    assertAllCompleted(run(engine, writes), writes);
    assertFile(file, fileSpans, GUARD + 4, "file");
    assertAllCompleted(run(engine, reads), reads);
    assertRegion(dst.segment(), spans, GUARD + 6, "destination memory");
  }

  @Test
  void admittedWorkKeepsTheFileItOpenedWhenThePathIsReplaced() throws IOException {
    TransferEngine engine = start(config());
    long size = 16L << 20;
    Path path = guardedFile(dir.resolve("kv.bin"), size, GUARD + 7);
    Path oldLink = dir.resolve("kv.old");
    Files.createLink(oldLink, path);
    Path replacement = guardedFile(dir.resolve("kv.new"), size, GUARD + 8);
    RegisteredMemory src = EnginePair.guarded(engine, size, Access.READ_WRITE, GUARD + 9);
    Pattern.fill(src.segment(), 0, size, 77, 0);
    RemoteSegment seg = engine.openFileSegment(path, Access.READ_WRITE, WAIT);

    Batch b = engine.allocateBatch(1);
    b.submit(List.of(TransferRequest.write(src, 0, seg, TransferEngine.FILE_REGION_ID, 0, size)));
    Files.move(
        replacement, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    BatchStatus s = b.await(WAIT);
    b.free();
    assertEquals(TaskState.COMPLETED, s.tasks().getFirst().state(), s.toString());
    assertFile(
        oldLink, List.of(new Span(0, size, 77, 0)), GUARD + 7, "the file the segment opened");
    assertFile(path, List.of(), GUARD + 8, "the file that replaced it, untouched");

    RemoteSegment reopened = engine.openFileSegment(path, Access.READ_WRITE, WAIT);
    RegisteredMemory dst = EnginePair.guarded(engine, size, Access.READ_WRITE, GUARD + 10);
    BatchStatus r =
        run(
            engine,
            List.of(
                TransferRequest.read(dst, 0, reopened, TransferEngine.FILE_REGION_ID, 0, size)));
    assertEquals(TaskState.COMPLETED, r.tasks().getFirst().state());
    assertRegion(
        dst.segment(),
        List.of(new Span(0, size, GUARD + 8, 0)),
        GUARD + 10,
        "read of the new file");

    Batch stale = engine.allocateBatch(1);
    TransferException e =
        assertThrows(
            TransferException.class,
            () ->
                stale.submit(
                    List.of(
                        TransferRequest.write(src, 0, seg, TransferEngine.FILE_REGION_ID, 0, 10))));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(
        e.getMessage().contains("file " + path) && e.getMessage().contains("is closed"),
        e.getMessage());
    stale.free();
    assertFile(
        oldLink, List.of(new Span(0, size, 77, 0)), GUARD + 7, "old file after the refused submit");
  }

  @Test
  void aFullFileTableRefusesWithResourceExhaustedAndOnePathTakesOneEntry() throws IOException {
    TransferEngine engine = start(config().withFile(config().file().withMaxFileSegments(2)));
    Path a = guardedFile(dir.resolve("a"), 4096, 1);
    Path b = guardedFile(dir.resolve("b"), 4096, 2);
    Path c = guardedFile(dir.resolve("c"), 4096, 3);
    engine.openFileSegment(a, Access.READ, WAIT);
    engine.openFileSegment(a, Access.READ, WAIT);
    engine.openFileSegment(b, Access.READ_WRITE, WAIT);
    TransferException e =
        assertThrows(TransferException.class, () -> engine.openFileSegment(c, Access.READ, WAIT));
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED, e.kind());
    assertTrue(
        e.getMessage().contains("file table is full (file.maxFileSegments = 2"), e.getMessage());
    RemoteSegment again = engine.openFileSegment(dir.resolve("x/../a"), Access.READ, WAIT);
    RegisteredMemory m = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD);
    assertEquals(
        TaskState.COMPLETED,
        run(
                engine,
                List.of(TransferRequest.read(m, 0, again, TransferEngine.FILE_REGION_ID, 0, 4096)))
            .tasks()
            .getFirst()
            .state());
    assertRegion(
        m.segment(), List.of(new Span(0, 4096, 1, 0)), GUARD, "read through the reused entry");
  }

  @Test
  void badOpensFailClearlyAndChangeNothing() throws IOException {
    TransferEngine engine = start(config().withFile(config().file().withMaxFileSegments(1)));
    Path missing = dir.resolve("missing.bin");
    TransferException e1 =
        assertThrows(
            TransferException.class,
            () -> engine.openFileSegment(missing, Access.READ_WRITE, WAIT));
    assertEquals(ErrorKind.INVALID_ARGUMENT, e1.kind());
    assertEquals(
        "INVALID_ARGUMENT: openFileSegment " + missing + ": no such file", e1.getMessage());
    assertFalse(Files.exists(missing), "a failed open must not create the file");

    Path sub = Files.createDirectory(dir.resolve("sub"));
    TransferException e2 =
        assertThrows(TransferException.class, () -> engine.openFileSegment(sub, Access.READ, WAIT));
    assertEquals(ErrorKind.INVALID_ARGUMENT, e2.kind());
    assertEquals(
        "INVALID_ARGUMENT: openFileSegment " + sub + ": is a directory, not a file",
        e2.getMessage());

    Path ro = guardedFile(dir.resolve("ro.bin"), 8192, GUARD + 11);
    Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("r--r--r--"));
    FileTime before = Files.getLastModifiedTime(ro);
    TransferException e3 =
        assertThrows(TransferException.class, () -> engine.openFileSegment(ro, Access.WRITE, WAIT));
    assertEquals(ErrorKind.PERMISSION_DENIED, e3.kind());
    assertEquals(
        "PERMISSION_DENIED: openFileSegment "
            + ro
            + " for WRITE: the file is read-only (mode 0444)",
        e3.getMessage());
    assertFile(ro, List.of(), GUARD + 11, "read-only file");
    assertEquals(before, Files.getLastModifiedTime(ro));

    // Nothing was charged: the one slot of the table is still free, and READ of the read-only file
    // works.
    RemoteSegment seg = engine.openFileSegment(ro, Access.READ, WAIT);
    RegisteredMemory m = EnginePair.guarded(engine, 8192, Access.READ_WRITE, GUARD + 12);
    Batch b = engine.allocateBatch(2);
    TransferException e4 =
        assertThrows(
            TransferException.class,
            () ->
                b.submit(
                    List.of(
                        TransferRequest.write(m, 0, seg, TransferEngine.FILE_REGION_ID, 0, 100))));
    assertEquals(ErrorKind.PERMISSION_DENIED, e4.kind());
    assertTrue(e4.getMessage().contains("file " + ro + " grants READ"), e4.getMessage());
    TransferException e5 =
        assertThrows(
            TransferException.class,
            () ->
                b.submit(
                    List.of(
                        TransferRequest.read(
                            m, 0, seg, TransferEngine.FILE_REGION_ID, 8000, 193))));
    assertEquals(ErrorKind.INVALID_ARGUMENT, e5.kind());
    assertTrue(
        e5.getMessage().contains("outside region 1 of 8192 B at file " + ro), e5.getMessage());
    b.free();
    assertRegion(m.segment(), List.of(), GUARD + 12, "memory after refused submissions");
    assertFile(ro, List.of(), GUARD + 11, "read-only file after refused submissions");
    assertEquals(before, Files.getLastModifiedTime(ro));
  }

  /**
   * Reports every completion of more than one byte as half as many, so every operation goes short.
   */
  static class Halving implements FileIo {
    final FileIo inner;
    final Map<Long, long[]> lastSubmit = new ConcurrentHashMap<>();
    final List<String> violations = new ArrayList<>();
    int submits;
    int shortened;

    Halving(FileIo inner) {
      this.inner = inner;
    }

    @Override
    public String engine() {
      return inner.engine();
    }

    @Override
    public int capacity() {
      return inner.capacity();
    }

    @Override
    public void cancel(long id) {
      inner.cancel(id);
    }

    @Override
    public void close() {
      inner.close();
    }

    @Override
    public void submit(
        long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
      submits++;
      long[] prev = lastSubmit.get(id);
      if (prev != null && fileOffset != prev[0] + prev[2]) {
        violations.add(
            "operation "
                + id
                + " resubmitted at "
                + fileOffset
                + " after "
                + prev[2]
                + " of the range at "
                + prev[0]
                + " were reported");
      }
      lastSubmit.put(id, new long[] {fileOffset, memory.byteSize(), 0});
      inner.submit(id, write, file, memory, fileOffset);
    }

    @Override
    public int poll(long waitNanos, CompletionSink sink) {
      return inner.poll(
          waitNanos,
          (id, result) -> {
            int reported = result > 1 ? result / 2 : result;
            if (reported != result) {
              shortened++;
            }
            long[] s = lastSubmit.get(id);
            if (s != null) {
              s[2] = reported;
            }
            sink.complete(id, reported);
          });
    }
  }

  @Test
  void shortResultsContinueWithTheRemainderAndNeverReplayLandedBytes() throws IOException {
    List<Halving> made = new ArrayList<>();
    FileIoFaults.install(
        io -> {
          Halving h = new Halving(io);
          synchronized (made) {
            made.add(h);
          }
          return h;
        });
    TransferEngine engine = start(config());
    long size = 3 * (1 << 20) + 17;
    Path file = guardedFile(dir.resolve("short.bin"), size + 100, GUARD + 13);
    RegisteredMemory src = EnginePair.guarded(engine, size + 10, Access.READ_WRITE, GUARD + 14);
    Pattern.fill(src.segment(), 5, size, 55, 0);
    RegisteredMemory dst = EnginePair.guarded(engine, size + 10, Access.READ_WRITE, GUARD + 15);
    RemoteSegment seg = engine.openFileSegment(file, Access.READ_WRITE, WAIT);
    BatchStatus w =
        run(
            engine,
            List.of(TransferRequest.write(src, 5, seg, TransferEngine.FILE_REGION_ID, 33, size)));
    assertEquals(TaskState.COMPLETED, w.tasks().getFirst().state(), w.toString());
    BatchStatus r =
        run(
            engine,
            List.of(TransferRequest.read(dst, 3, seg, TransferEngine.FILE_REGION_ID, 33, size)));
    assertEquals(TaskState.COMPLETED, r.tasks().getFirst().state(), r.toString());
    assertFile(file, List.of(new Span(33, size, 55, 0)), GUARD + 13, "file");
    assertRegion(dst.segment(), List.of(new Span(3, size, 55, 0)), GUARD + 15, "memory");
    Halving h = made.getFirst();
    assertTrue(
        h.shortened > 40, "every operation should have gone short many times: " + h.shortened);
    assertTrue(h.submits > 4 + h.shortened / 2, "continuations were submitted: " + h.submits);
    assertEquals(List.of(), h.violations);
  }

  /** After the first short result of a WRITE, answers its continuation with 0 bytes. */
  @Test
  void aWriteThatStopsShortIsFailedAppliedWithWhatIsKnownAndNotRetried() throws IOException {
    Map<Long, Integer> seen = new ConcurrentHashMap<>();
    FileIoFaults.install(
        io ->
            new Halving(io) {
              @Override
              public int poll(long waitNanos, CompletionSink sink) {
                return inner.poll(
                    waitNanos,
                    (id, result) -> {
                      int n = seen.merge(id, 1, Integer::sum);
                      sink.complete(id, n == 1 ? Math.max(1, result / 2) : 0);
                    });
              }
            });
    TransferEngine engine = start(config());
    int size = 8192;
    Path file = guardedFile(dir.resolve("stop.bin"), size, GUARD + 16);
    RegisteredMemory src = EnginePair.guarded(engine, size, Access.READ_WRITE, GUARD + 17);
    RemoteSegment seg = engine.openFileSegment(file, Access.READ_WRITE, WAIT);
    BatchStatus w =
        run(
            engine,
            List.of(TransferRequest.write(src, 0, seg, TransferEngine.FILE_REGION_ID, 0, size)));
    TaskResult t = w.tasks().getFirst();
    assertEquals(TaskState.FAILED, t.state());
    assertEquals(ErrorKind.UNAVAILABLE, t.errorKind());
    assertEquals(RemoteEffect.APPLIED, t.remoteEffect());
    assertEquals(0, t.bytes());
    assertTrue(t.locallyDrained());
    assertTrue(t.detail().contains("the kernel accepted 0 bytes after 4096 B"), t.detail());
    assertEquals(
        Map.of(seen.keySet().iterator().next(), 2), seen, "exactly one continuation, no replay");
    // The first half landed (the kernel took all of it; the decorator reported half), nothing
    // beyond it.
    assertFile(file, List.of(new Span(0, size, GUARD + 17, 0)), GUARD + 16, "file");
  }

  /** A FIFO with a writer that never writes: a READ of it waits forever. */
  int heldFifoWriter(Path fifo) throws Exception {
    Process mk = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertEquals(0, mk.waitFor());
    return Libc.open(fifo.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
  }

  /**
   * A 64-byte READ of {@code fifo} into {@code m} at 100, deadline 200 ms: FAILED, TIMEOUT, NONE, 0
   * bytes, drained.
   */
  static TaskResult fifoReadTimesOut(TransferEngine engine, Path fifo, RegisteredMemory m) {
    RemoteSegment seg = engine.openFileSegment(fifo, Access.READ, WAIT);
    TaskResult t =
        run(
                engine,
                List.of(
                    TransferRequest.read(m, 100, seg, TransferEngine.FILE_REGION_ID, 0, 64)
                        .withDeadline(Duration.ofMillis(200))))
            .tasks()
            .getFirst();
    assertEquals(TaskState.FAILED, t.state(), t.toString());
    assertEquals(ErrorKind.TIMEOUT, t.errorKind(), t.toString());
    assertEquals(RemoteEffect.NONE, t.remoteEffect(), t.toString());
    assertEquals(0, t.bytes(), t.toString());
    assertTrue(t.locallyDrained(), t.toString());
    return t;
  }

  @Test
  void aStalledFifoReadIsCancelledAndFailsOnlyAfterItDrained() throws Exception {
    TransferEngine engine = start(config());
    Path fifo = dir.resolve("stall.fifo");
    int writer = heldFifoWriter(fifo);
    try {
      RegisteredMemory m = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD + 18);
      TaskResult t = fifoReadTimesOut(engine, fifo, m);
      assertTrue(
          t.detail().startsWith("deadline passed:") && t.detail().endsWith("drained"), t.detail());
      assertRegion(m.segment(), List.of(), GUARD + 18, "memory of the cancelled read");
      EngineOwed owed = engine.owed();
      assertTrue(owed.isIdle(), owed.toString());
      assertEquals(0, engine.counters().ownersQuarantined());

      // The same stall cancelled by the caller: CANCELLED, drained.
      Batch c = engine.allocateBatch(1);
      c.submit(
          List.of(
              TransferRequest.read(
                  m,
                  200,
                  engine.openFileSegment(fifo, Access.READ, WAIT),
                  TransferEngine.FILE_REGION_ID,
                  0,
                  64)));
      assertFalse(c.await(Duration.ofMillis(100)).done());
      c.cancel();
      TaskResult ct = c.await(WAIT).tasks().getFirst();
      assertEquals(ErrorKind.CANCELLED, ct.errorKind(), ct.toString());
      assertTrue(ct.locallyDrained());
      c.free();
      assertRegion(m.segment(), List.of(), GUARD + 18, "memory of the cancelled read");
    } finally {
      Libc.close(writer);
    }
  }

  /**
   * C5 for files, checked against the kernel rather than the engine's flag: after a FIFO READ was
   * reported failed (cancelled at its deadline, drained), the bytes it waited for are written into
   * the FIFO. They must not land in the task's memory, and they must still be in the FIFO, to be
   * read back by this test: nothing in the kernel was still reading on the task's behalf.
   */
  @Test
  void bytesWrittenToAFifoAfterItsReadFailedStayInTheFifoAndNeverLand() throws Exception {
    TransferEngine engine = start(config());
    Path fifo = dir.resolve("late.fifo");
    int writer = heldFifoWriter(fifo);
    try {
      RegisteredMemory m = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD + 21);
      fifoReadTimesOut(engine, fifo, m);
      assertRegion(m.segment(), List.of(), GUARD + 21, "memory when the READ was reported failed");

      byte[] late = new byte[64];
      Pattern.fill(MemorySegment.ofArray(late), 0, late.length, GUARD + 22, 0);
      try (FileChannel w = FileChannel.open(fifo, StandardOpenOption.WRITE)) {
        assertEquals(late.length, w.write(java.nio.ByteBuffer.wrap(late)));
      }
      // Give the lane a full round through the kernel: a READ of a plain file on the same engine.
      Path plain = guardedFile(dir.resolve("after-fifo.bin"), 4096, GUARD + 23);
      RegisteredMemory probe = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD + 24);
      RemoteSegment plainSeg = engine.openFileSegment(plain, Access.READ, WAIT);
      TaskResult p =
          run(
                  engine,
                  List.of(
                      TransferRequest.read(
                          probe, 0, plainSeg, TransferEngine.FILE_REGION_ID, 0, 4096)))
              .tasks()
              .getFirst();
      assertEquals(TaskState.COMPLETED, p.state(), p.toString());
      assertRegion(
          probe.segment(), List.of(new Span(0, 4096, GUARD + 23, 0)), GUARD + 24, "the probe READ");
      assertRegion(
          m.segment(),
          List.of(),
          GUARD + 21,
          "memory after the late bytes were written to the FIFO");

      // The late bytes are still in the FIFO: the cancelled READ took none of them.
      byte[] back = new byte[late.length];
      try (FileChannel r = FileChannel.open(fifo, StandardOpenOption.READ)) {
        java.util.concurrent.CompletableFuture<Integer> got =
            java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                  try {
                    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(back);
                    while (b.hasRemaining() && r.read(b) > 0) {
                      // keep reading until all 64 bytes are back
                    }
                    return b.position();
                  } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                  }
                });
        try {
          assertEquals(late.length, got.get(10, TimeUnit.SECONDS));
        } catch (java.util.concurrent.TimeoutException e) {
          throw new AssertionError(
              "the bytes written after the READ failed are gone from the FIFO: something still "
                  + "read on the failed task's behalf",
              e);
        }
      }
      assertEquals(
          java.util.Arrays.toString(late),
          java.util.Arrays.toString(back),
          "the FIFO gave back what was written");
      assertTrue(engine.owed().isIdle(), engine.owed().toString());
    } finally {
      Libc.close(writer);
    }
  }

  /**
   * Withholds the completion of every operation on a FIFO, as a kernel that never answers would.
   */
  static UnaryOperator<FileIo> withholdFifoCompletions(Set<Long> withheld) {
    return io ->
        new FileIo() {
          private final Set<Long> fifoOps = ConcurrentHashMap.newKeySet();

          @Override
          public String engine() {
            return io.engine();
          }

          @Override
          public int capacity() {
            return io.capacity();
          }

          @Override
          public void cancel(long id) {
            io.cancel(id);
          }

          @Override
          public void close() {
            io.close();
          }

          @Override
          public void submit(
              long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
            if (file.stream()) {
              fifoOps.add(id);
            }
            io.submit(id, write, file, memory, fileOffset);
          }

          @Override
          public int poll(long waitNanos, CompletionSink sink) {
            return io.poll(
                waitNanos,
                (id, result) -> {
                  if (fifoOps.contains(id)) {
                    withheld.add(id);
                  } else {
                    sink.complete(id, result);
                  }
                });
          }
        };
  }

  @Test
  void aCancelWhoseCompletionNeverComesQuarantinesTheLaneAndKeepsTheMemory() throws Exception {
    Set<Long> withheld = ConcurrentHashMap.newKeySet();
    FileIoFaults.install(withholdFifoCompletions(withheld));
    EngineConfig cfg =
        config().withTimeouts(TimeoutConfig.defaults().withDestructionWindowMillis(300));
    TransferEngine engine = start(cfg);
    Path fifo = dir.resolve("quarantine.fifo");
    int writer = heldFifoWriter(fifo);
    try {
      RemoteSegment seg = engine.openFileSegment(fifo, Access.READ, WAIT);
      RegisteredMemory m = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD + 19);
      Batch b = engine.allocateBatch(1);
      b.submit(
          List.of(
              TransferRequest.read(m, 64, seg, TransferEngine.FILE_REGION_ID, 0, 64)
                  .withDeadline(Duration.ofMillis(100))));
      assertTrue(
          Await.until(Duration.ofSeconds(30), () -> engine.counters().ownersQuarantined() == 1),
          "the lane was not quarantined");
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> !withheld.isEmpty()),
          "the kernel's completion of the cancelled read should have come (and been withheld)");
      // A destruction window after its deadline the batch gives up waiting: the task is reported
      // UNQUIESCED (never drained, no bytes) and the batch is quarantined with it.
      BatchStatus s = b.await(Duration.ofSeconds(30));
      TaskResult t = s.tasks().getFirst();
      assertTrue(s.done(), s.toString());
      assertEquals(TaskState.UNQUIESCED, t.state(), t.toString());
      assertEquals(ErrorKind.UNQUIESCED, t.errorKind(), t.toString());
      assertEquals(0, t.bytes());
      assertFalse(t.locallyDrained(), "never reported drained");
      TransferException busy = assertThrows(TransferException.class, b::free);
      assertEquals(ErrorKind.BATCH_BUSY, busy.kind());
      List<QuarantinedOwner> listed = engine.quarantined();
      assertTrue(
          listed.stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.LANE), listed.toString());
      assertTrue(
          listed.stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.BATCH),
          listed.toString());
      EngineOwed owed = engine.owed();
      assertEquals(1, owed.tasksInFlight(), owed.toString());
      assertEquals(64, owed.bytesInFlight(), owed.toString());
      assertEquals(1, owed.loans(), owed.toString());

      // The memory is still mapped: every byte reads back as it was, and it can still be written.
      assertRegion(m.segment(), List.of(), GUARD + 19, "memory of the quarantined read");
      m.segment().set(ValueLayout.JAVA_BYTE, 4000, (byte) 1);
      assertEquals(1, m.segment().get(ValueLayout.JAVA_BYTE, 4000));
      m.segment().set(ValueLayout.JAVA_BYTE, 4000, Pattern.at(GUARD + 19, 4000));
      TransferException unq = assertThrows(TransferException.class, () -> engine.unregister(m));
      assertEquals(ErrorKind.UNQUIESCED, unq.kind());

      // A quarantined lane takes no new work; a one-lane engine refuses file work after drain.
      Path plain = guardedFile(dir.resolve("plain.bin"), 4096, 5);
      RemoteSegment ok = engine.openFileSegment(plain, Access.READ, WAIT);
      RegisteredMemory m2 = EnginePair.guarded(engine, 4096, Access.READ_WRITE, GUARD + 20);
      BatchStatus refused =
          run(
              engine,
              List.of(TransferRequest.read(m2, 0, ok, TransferEngine.FILE_REGION_ID, 0, 4096)));
      assertEquals(ErrorKind.UNAVAILABLE, refused.tasks().getFirst().errorKind());
      assertTrue(refused.tasks().getFirst().detail().contains("quarantined"), refused.toString());
      assertRegion(m2.segment(), List.of(), GUARD + 20, "memory of the refused read");

      EngineOwed closed = engine.close(Duration.ofSeconds(30));
      assertEquals(EngineOwed.Phase.CLOSED, closed.phase());
      assertTrue(
          closed.quarantined().stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.LANE),
          closed.toString());
      assertEquals(
          closed.quarantined(),
          engine.close(Duration.ofSeconds(30)).quarantined(),
          "a second close reports them too");
      // Unregistered (UNQUIESCED) and then closed: the range is retained, never freed, while the
      // loan is out.
      assertFalse(
          ((Registration) m).released(), "the quarantined task's memory must not be released");
      assertEquals(1, ((Registration) m).loans());
      assertRegion(
          m.segment(), List.of(), GUARD + 19, "memory of the quarantined read after close");
    } finally {
      Libc.close(writer);
    }
  }

  static long millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  static int ecanceled() {
    return Errno.ECANCELED.number();
  }
}
