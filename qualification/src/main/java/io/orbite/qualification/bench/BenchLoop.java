package io.orbite.qualification.bench;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.EngineMain;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The timed loop the TCP, SHM and RDMA benches share: fixed-size tasks at the same offsets on both
 * sides.
 */
final class BenchLoop {
  private BenchLoop() {}

  /**
   * One timed run.
   *
   * @param touchedBytes how far into both regions the run reached (what must be verified)
   * @param failed tasks that did not complete
   * @param allocatedBytes heap the whole process allocated during the run (0 when not measured)
   * @param jitMillis time the JIT spent compiling during the run (0 when not measured)
   * @param warmupSeconds the untimed warm-up before the run (0 when none)
   */
  record Run(
      long bytes,
      long tasks,
      double seconds,
      long touchedBytes,
      int failed,
      long allocatedBytes,
      long jitMillis,
      double warmupSeconds) {
    Run(long bytes, long tasks, double seconds, long touchedBytes, int failed) {
      this(bytes, tasks, seconds, touchedBytes, failed, 0, 0, 0);
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
   * Runs {@code op} tasks of {@code size} for {@code seconds}, {@code perBatch} per batch and
   * {@code batchesInFlight} batches in flight all the time (a batch is awaited, checked and freed,
   * oldest first, and a new one submitted at once), cycling through {@code slots} offsets; reports
   * the first failed tasks on {@code human} and progress (tenths of a second) on {@code progress}
   * if not null.
   */
  static Run runFor(
      PrintStream human,
      TransferEngine engine,
      Op op,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      int perBatch,
      int batchesInFlight,
      long slots,
      double seconds,
      Progress progress) {
    return runFor(
        human,
        engine,
        op,
        Transport.UNSPEC,
        local,
        peer,
        remote,
        size,
        perBatch,
        batchesInFlight,
        slots,
        seconds,
        progress);
  }

  /**
   * {@link #runFor} with every request naming {@code transport} ({@link Transport#UNSPEC}: the
   * engine chooses, and the requests are left as built).
   */
  static Run runFor(
      PrintStream human,
      TransferEngine engine,
      Op op,
      Transport transport,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      int perBatch,
      int batchesInFlight,
      long slots,
      double seconds,
      Progress progress) {
    return runFor(
        human,
        engine,
        op,
        transport,
        local,
        peer,
        remote,
        size,
        perBatch,
        batchesInFlight,
        slots,
        false,
        seconds,
        progress);
  }

  /**
   * {@link #runFor}, with {@code swapPairs} taking the slots in swapped pairs (1, 0, 3, 2, ...;
   * {@code slots} even): the same memory, but no task starts where the one before it ended, so none
   * of a batch's tasks can share a wire request (TCP merges a task into the frame before it only
   * when it follows it, {@code TcpPeerChannel.dispatchRun}).
   */
  static Run runFor(
      PrintStream human,
      TransferEngine engine,
      Op op,
      Transport transport,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      int perBatch,
      int batchesInFlight,
      long slots,
      boolean swapPairs,
      double seconds,
      Progress progress) {
    if (swapPairs && slots % 2 != 0) {
      throw new IllegalArgumentException("swapped pairs need an even number of slots: " + slots);
    }
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
          long at = slot++ % slots;
          long offset = (swapPairs ? at ^ 1 : at) * size;
          touched = Math.max(touched, offset + size);
          TransferRequest request =
              op == Op.READ
                  ? TransferRequest.read(local, offset, peer, remote, offset, size)
                  : TransferRequest.write(local, offset, peer, remote, offset, size);
          requests.add(transport == Transport.UNSPEC ? request : request.withTransport(transport));
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
        progress.update(
            Math.min((long) (seconds * 10), (System.nanoTime() - start) / 100_000_000L), bytes);
      }
    }
    return new Run(bytes, tasks, (System.nanoTime() - start) / 1e9, touched, failed);
  }

  /**
   * The task rate: 4 KiB READs in batches of 1024, 4 batches in flight, cycling over the region,
   * after an untimed warm-up and once the JIT has settled. On two cores the JIT's compiler threads
   * would otherwise compete with the measured run, and the lane's own loop reaches C2 late: with a
   * 2 s warm-up, PrintCompilation showed the SHM lane's {@code copyGroup} and {@code runPass} still
   * in C1 code through most of the timed run, behind a queue of per-batch methods. So the warm-up
   * runs in spells of {@link #WARMUP_SPELL_SECONDS} until two spells in a row compile for at most
   * {@link #WARMUP_QUIET_JIT_MS} (at least 2 s, at most {@link #WARMUP_MAX_SECONDS}). Its {@code
   * touchedBytes} say which of the requester's bytes to check.
   */
  static final double WARMUP_SPELL_SECONDS = 0.5;

  static final long WARMUP_QUIET_JIT_MS = 10;
  static final double WARMUP_MAX_SECONDS = 12;

  static Run taskRate(
      PrintStream human,
      TransferEngine engine,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long regionBytes,
      double seconds)
      throws InterruptedException {
    return taskRate(human, engine, local, peer, remote, regionBytes, false, seconds);
  }

  /**
   * {@link #taskRate}, with {@code swapPairs} taking the 4 KiB slots in swapped pairs, so that no
   * task follows the one before it in memory (see {@link #runFor} with {@code swapPairs}).
   */
  static Run taskRate(
      PrintStream human,
      TransferEngine engine,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long regionBytes,
      boolean swapPairs,
      double seconds)
      throws InterruptedException {
    return taskRate(
        human, engine, Transport.UNSPEC, local, peer, remote, regionBytes, swapPairs, seconds);
  }

  /**
   * {@link #taskRate} with every request naming {@code transport} ({@link Transport#UNSPEC}: the
   * engine chooses).
   */
  static Run taskRate(
      PrintStream human,
      TransferEngine engine,
      Transport transport,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long regionBytes,
      boolean swapPairs,
      double seconds)
      throws InterruptedException {
    long size = 4096;
    long slots = regionBytes / size;
    long warmStart = System.nanoTime();
    int quiet = 0;
    while (quiet < 2 && System.nanoTime() - warmStart < (long) (WARMUP_MAX_SECONDS * 1e9)) {
      long jitBefore = Jit.millis();
      // With a Progress, as the timed run has: a branch first taken in the timed run would trap out
      // of
      // the compiled loop and recompile it there (PrintCompilation showed 250 ms of it).
      Progress spell = new Progress("tasks_4KiB warm-up", (long) (WARMUP_SPELL_SECONDS * 10), "ds");
      runFor(
          human,
          engine,
          Op.READ,
          transport,
          local,
          peer,
          remote,
          size,
          1024,
          4,
          slots,
          swapPairs,
          WARMUP_SPELL_SECONDS,
          spell);
      spell.done();
      boolean warmEnough = System.nanoTime() - warmStart >= 2_000_000_000L;
      quiet = warmEnough && Jit.millis() - jitBefore <= WARMUP_QUIET_JIT_MS ? quiet + 1 : 0;
    }
    double warmSeconds = (System.nanoTime() - warmStart) / 1e9;
    Jit.settle();
    Progress progress = new Progress("tasks_4KiB", (long) (seconds * 10), "ds");
    long allocBefore = EngineMain.allocatedBytes();
    long jitBefore = Jit.millis();
    Run timed =
        runFor(
            human, engine, Op.READ, transport, local, peer, remote, size, 1024, 4, slots, swapPairs,
            seconds, progress);
    Run r =
        new Run(
            timed.bytes(),
            timed.tasks(),
            timed.seconds(),
            timed.touchedBytes(),
            timed.failed(),
            EngineMain.allocatedBytes() - allocBefore,
            Jit.millis() - jitBefore,
            warmSeconds);
    progress.done();
    human.printf(
        java.util.Locale.ROOT,
        "  %-12s %6d tasks in %5.2f s = %,.0f tasks/s (batches of 1024), %.0f B heap "
            + "allocated per task by the whole requester process, %d ms of JIT compiling (after %.1f s of warm-up)%n",
        swapPairs ? "read_4KiB_swapped" : "read_4KiB",
        r.tasks(),
        r.seconds(),
        r.tasks() / r.seconds(),
        r.allocatedPerTask(),
        r.jitMillis(),
        warmSeconds);
    return r;
  }
}
