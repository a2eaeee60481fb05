package io.orbite.qualification.bench;

import static io.orbite.qualification.bench.FileBench.FILE_BYTES;
import static io.orbite.qualification.bench.FileBench.RAND_BATCH;
import static io.orbite.qualification.bench.FileBench.RAND_BLOCK;
import static io.orbite.qualification.bench.FileBench.SEED;
import static io.orbite.qualification.bench.FileBench.SEQ_BLOCK;
import static io.orbite.qualification.bench.FileBench.SEQ_WINDOW;
import static io.orbite.qualification.bench.FileBench.WAIT;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The engine's side of {@link FileBench}: one sequential pass over the bench file or a timed run of
 * random reads, and the byte checks after them (the file after a WRITE, the memory after a READ).
 * Every failed task and wrong byte is counted, and the first few are named on the human stream.
 */
final class FileTransfers {
  private final PrintStream human;
  private int failures;

  FileTransfers(PrintStream human) {
    this.human = human;
  }

  /** Failed tasks and wrong bytes so far. */
  int failures() {
    return failures;
  }

  /**
   * One pass over the whole file in 1 MiB tasks, one batch; returns GB/s. Task {@code i} moves file
   * MiB {@code i} from or to memory at {@code (i MiB) mod window}: a window of {@link #SEQ_WINDOW}
   * reuses 16 buffers as fio does, {@link #FILE_BYTES} moves a different MiB of a 1 GiB region each
   * time.
   */
  double sequential(
      TransferEngine engine, RegisteredMemory mem, RemoteSegment seg, boolean write, long window) {
    int tasks = (int) (FILE_BYTES / SEQ_BLOCK);
    List<TransferRequest> requests = new ArrayList<>(tasks);
    for (int i = 0; i < tasks; i++) {
      long at = (long) i * SEQ_BLOCK;
      requests.add(
          write
              ? TransferRequest.write(
                  mem, at % window, seg, TransferEngine.FILE_REGION_ID, at, SEQ_BLOCK)
              : TransferRequest.read(
                  mem, at % window, seg, TransferEngine.FILE_REGION_ID, at, SEQ_BLOCK));
    }
    Batch b = engine.allocateBatch(tasks);
    long t0 = System.nanoTime();
    b.submit(requests);
    BatchStatus s = b.await(WAIT);
    double seconds = (System.nanoTime() - t0) / 1e9;
    b.free();
    countFailures(s, write ? "seqwrite" : "seqread");
    return FILE_BYTES / 1e9 / seconds;
  }

  /**
   * Random 4 KiB reads for {@code randSeconds}: two batches of 4096 alternate; returns tasks per
   * second.
   */
  double randomReads(
      TransferEngine engine, RegisteredMemory dst, RemoteSegment seg, int round, int seconds) {
    SplittableRandom random = new SplittableRandom(round);
    long blocks = FILE_BYTES / RAND_BLOCK;
    long[][] offsets = new long[2][RAND_BATCH];
    Batch[] inFlight = new Batch[2];
    long done = 0;
    long t0 = System.nanoTime();
    long end = t0 + seconds * 1_000_000_000L;
    int k = 0;
    while (true) {
      if (inFlight[k] != null) {
        BatchStatus s = inFlight[k].await(WAIT);
        inFlight[k].free();
        inFlight[k] = null;
        countFailures(s, "randread");
        done += s.tasks().size();
      }
      if (System.nanoTime() - end > 0) {
        if (inFlight[1 - k] == null) {
          break;
        }
        k = 1 - k;
        continue;
      }
      List<TransferRequest> requests = new ArrayList<>(RAND_BATCH);
      for (int i = 0; i < RAND_BATCH; i++) {
        offsets[k][i] = random.nextLong(blocks) * RAND_BLOCK;
        requests.add(
            TransferRequest.read(
                dst,
                ((long) k * RAND_BATCH + i) * RAND_BLOCK,
                seg,
                TransferEngine.FILE_REGION_ID,
                offsets[k][i],
                RAND_BLOCK));
      }
      inFlight[k] = engine.allocateBatch(RAND_BATCH);
      inFlight[k].submit(requests);
      k = 1 - k;
    }
    double elapsed = (System.nanoTime() - t0) / 1e9;
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < RAND_BATCH; i++) {
        if (offsets[b][i] != 0 || i == 0) {
          verifyMemory(
              dst.segment(),
              ((long) b * RAND_BATCH + i) * RAND_BLOCK,
              RAND_BLOCK,
              offsets[b][i],
              "randread");
        }
      }
    }
    return done / elapsed;
  }

  private void countFailures(BatchStatus s, String what) {
    for (TaskResult t : s.tasks()) {
      if (!t.completed()) {
        failures++;
        if (failures <= 5) {
          human.println(
              "  " + what + " task " + t.index() + " failed: " + t.errorKind() + " " + t.detail());
        }
      }
    }
  }

  /**
   * Checks every byte of the file after a WRITE pass whose source was the first {@code window}
   * bytes of the pattern.
   */
  void verifyFile(Path file, long window) throws IOException {
    try (FileChannel ch = FileChannel.open(file);
        Arena arena = Arena.ofConfined()) {
      MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, FILE_BYTES, arena);
      for (long at = 0; at < FILE_BYTES; at += window) {
        verifyMemory(
            m, at, window, 0, "file after seqwrite from a " + (window >> 20) + " MiB window");
      }
    }
  }

  /**
   * After a READ pass through the {@link #SEQ_WINDOW}: buffer {@code j} holds file MiB {@code k}
   * for some {@code k = j (mod SEQ_DEPTH)}, normally the last one (tasks run in order, but two
   * tasks that share a buffer may overlap, so any {@code k} of that class is accepted, checked byte
   * for byte). Every byte of every task was checked by the pass into the 1 GiB region just before.
   */
  void verifyReadWindow(MemorySegment m) {
    int buffers = (int) (SEQ_WINDOW / SEQ_BLOCK);
    long fileBlocks = FILE_BYTES / SEQ_BLOCK;
    for (int j = 0; j < buffers; j++) {
      boolean found = false;
      for (long k = fileBlocks - buffers + j; k >= 0 && !found; k -= buffers) {
        found = Pattern.verify(m, (long) j * SEQ_BLOCK, SEQ_BLOCK, SEED, k * SEQ_BLOCK) < 0;
      }
      if (!found) {
        failures++;
        human.println(
            "  seqread through the window: buffer "
                + j
                + " holds no 1 MiB block of the file it read");
      }
    }
  }

  void verifyMemory(MemorySegment m, long offset, long length, long from, String what) {
    long bad = Pattern.verify(m, offset, length, SEED, from);
    if (bad >= 0) {
      failures++;
      human.println("  " + what + ": wrong byte at " + bad);
    }
  }
}
