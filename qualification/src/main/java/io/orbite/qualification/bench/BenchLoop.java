package io.orbite.qualification.bench;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.EngineMain;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** The timed loop the TCP and SHM benches share: fixed-size tasks at the same offsets on both sides. */
final class BenchLoop {
  private BenchLoop() {}

  /**
   * One timed run.
   *
   * @param touchedBytes how far into both regions the run reached (what must be verified)
   * @param failed tasks that did not complete
   */
  record Run(long bytes, long tasks, double seconds, long touchedBytes, int failed, long allocatedBytes) {
    Run(long bytes, long tasks, double seconds, long touchedBytes, int failed) {
      this(bytes, tasks, seconds, touchedBytes, failed, 0);
    }

    /** Heap bytes the whole process allocated per task during the run (0 when not measured). */
    double allocatedPerTask() {
      return tasks == 0 ? 0 : (double) allocatedBytes / tasks;
    }

    double gbps() {
      return bytes / 1e9 / seconds;
    }
  }

  /**
   * Runs {@code op} tasks of {@code size} for {@code seconds}, {@code perBatch} per batch and {@code
   * batchesInFlight} batches in flight all the time (a batch is awaited, checked and freed, oldest
   * first, and a new one submitted at once), cycling through {@code slots} offsets; reports the
   * first failed tasks on {@code human} and progress (tenths of a second) on {@code progress} if
   * not null.
   */
  static Run runFor(PrintStream human, TransferEngine engine, Op op, RegisteredMemory local, RemoteSegment peer,
      long remote, long size, int perBatch, int batchesInFlight, long slots, double seconds, Progress progress) {
    long start = System.nanoTime();
    long deadline = start + (long) (seconds * 1e9);
    long bytes = 0;
    long tasks = 0;
    int failed = 0;
    long slot = 0;
    long touched = 0;
    ArrayDeque<Batch> outstanding = new ArrayDeque<>();
    while (true) {
      boolean more = System.nanoTime() < deadline;
      while (more && outstanding.size() < batchesInFlight) {
        List<TransferRequest> requests = new ArrayList<>(perBatch);
        for (int i = 0; i < perBatch; i++) {
          long offset = (slot++ % slots) * size;
          touched = Math.max(touched, offset + size);
          requests.add(op == Op.READ
              ? TransferRequest.read(local, offset, peer, remote, offset, size)
              : TransferRequest.write(local, offset, peer, remote, offset, size));
        }
        Batch batch = engine.allocateBatch(perBatch);
        batch.submit(requests);
        outstanding.add(batch);
      }
      Batch oldest = outstanding.poll();
      if (oldest == null) {
        break;
      }
      BatchStatus status = oldest.await(Duration.ofSeconds(120));
      for (TaskResult r : status.tasks()) {
        if (r.completed()) {
          bytes += r.bytes();
          tasks++;
        } else if (failed++ < 3) {
          human.println("  task failed: " + r);
        }
      }
      if (!status.done()) {
        failed++;
        human.println("  a batch did not finish within 120 s");
        continue;
      }
      oldest.free();
      if (progress != null) {
        progress.update(Math.min((long) (seconds * 10), (System.nanoTime() - start) / 100_000_000L), bytes);
      }
    }
    return new Run(bytes, tasks, (System.nanoTime() - start) / 1e9, touched, failed);
  }

  /**
   * The task rate: 4 KiB READs in batches of 1024, 4 batches in flight, cycling over the region,
   * after a 2 s warm-up and until the JIT has settled (the JIT compiles the submit and lane paths
   * first; on two cores its compiler threads would otherwise compete with the measured run). Its
   * {@code touchedBytes} say which of the requester's bytes to check.
   */
  static Run taskRate(PrintStream human, TransferEngine engine, RegisteredMemory local, RemoteSegment peer, long remote,
      long regionBytes, double seconds) throws InterruptedException {
    long size = 4096;
    long slots = regionBytes / size;
    runFor(human, engine, Op.READ, local, peer, remote, size, 1024, 4, slots, 2.0, null);
    Jit.settle();
    Progress progress = new Progress("tasks_4KiB", (long) (seconds * 10), "ds");
    long allocBefore = EngineMain.allocatedBytes();
    Run timed = runFor(human, engine, Op.READ, local, peer, remote, size, 1024, 4, slots, seconds, progress);
    Run r = new Run(timed.bytes(), timed.tasks(), timed.seconds(), timed.touchedBytes(), timed.failed(),
        EngineMain.allocatedBytes() - allocBefore);
    progress.done();
    human.printf(java.util.Locale.ROOT, "  %-12s %6d tasks in %5.2f s = %,.0f tasks/s (batches of 1024), %.0f B heap "
        + "allocated per task by the whole requester process%n", "read_4KiB", r.tasks(), r.seconds(),
        r.tasks() / r.seconds(), r.allocatedPerTask());
    return r;
  }
}
