package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench shm}: a source engine process that exports its memory through SHM ({@code
 * shm.enabled}) and a requester engine (this process) on the same host. READ and WRITE throughput
 * at 64 KiB, 1 MiB, 4 MiB and 64 MiB with many tasks in flight, each beside the ceiling measured in
 * the same run just before it: one thread copying the same sizes over the same working set between
 * two private off-heap buffers with {@link MemorySegment#copy} (the JVM's memcpy, which on this
 * machine kind is faster than glibc's memcpy called through FFM), and, when the requester has more
 * than one SHM lane, as many threads each copying over its share of that working set (the ceiling
 * of an endpoint that copies on {@code shm.lanes} threads). Every run's bytes are verified
 * afterwards, and every task must have gone through SHM. {@code --json} prints one JSON object in
 * the shape of {@code bench tcp --json}.
 */
public final class ShmBench {
  private static final long REGION_BYTES = 1L << 30;
  private static final long[] SIZES = {64L << 10, 1L << 20, 4L << 20, 64L << 20};
  private static final String[] NAMES = {"64KiB", "1MiB", "4MiB", "64MiB"};
  private static final long IN_FLIGHT_BYTES = 256L << 20;

  private PrintStream human = System.out;
  private long workingSetBytes = REGION_BYTES;
  private double secondsPerFigure = 3.0;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    int sizesAt = args.indexOf("--sizes");
    List<String> onlySizes =
        sizesAt >= 0 && sizesAt + 1 < args.size()
            ? List.of(args.get(sizesAt + 1).split(","))
            : null;
    int wsAt = args.indexOf("--working-set");
    if (wsAt >= 0 && wsAt + 1 < args.size()) {
      workingSetBytes = Math.min(REGION_BYTES, Long.parseLong(args.get(wsAt + 1)));
    }
    if (args.contains("--quick")) {
      secondsPerFigure = 1.0;
    }
    if (json) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    int failures = 0;
    try (ChildLogs logs = ChildLogs.create("bench-shm");
        EngineProcess source =
            EngineProcess.start(
                "bench-shm-source",
                logs.dir(),
                Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"));
        TransferEngine requester =
            TransferEngine.start(EngineConfig.fromEnv().withName("bench-shm-requester"));
        Arena copyArena = Arena.ofShared()) {
      human.printf(
          "bench shm: source %s (pid %d), requester pid %d, %.0f s per figure, working set %d MiB%n",
          source.endpoint(),
          source.pid(),
          ProcessHandle.current().pid(),
          secondsPerFigure,
          workingSetBytes >> 20);
      BenchReport.printUrls(human, requester);
      long remote = Long.parseLong(source.call("ALLOC " + REGION_BYTES + " READ_WRITE"));
      long sourceSeed = 0x5eed5L;
      source.call("FILL " + remote + " " + sourceSeed);
      RegisteredMemory local = requester.allocate(REGION_BYTES, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      if (!peer.sharedReachable(remote)) {
        human.println(
            "RESULT: ENVIRONMENT - the source's memory is not reachable through SHM: "
                + peer.unreachableBecause(Transport.SHM, remote));
        return ExitCodes.ENVIRONMENT;
      }
      // The ceiling's buffers: private, off-heap, touched once so no page fault is measured.
      MemorySegment from = copyArena.allocate(workingSetBytes, 4096).fill((byte) 1);
      MemorySegment to = copyArena.allocate(workingSetBytes, 4096).fill((byte) 2);
      int lanes = requester.config().shm().lanes();
      long writtenUpTo = 0;
      long writeSeed = 0x77L;
      for (Op op : Op.values()) {
        if (op == Op.WRITE) {
          Pattern.fill(local.segment(), 0, REGION_BYTES, writeSeed, 0);
        }
        for (int s = 0; s < SIZES.length; s++) {
          if (onlySizes != null && !onlySizes.contains(NAMES[s])) {
            continue;
          }
          String name = op.name().toLowerCase(Locale.ROOT) + "_" + NAMES[s];
          double memcpy = memcpy(from, to, SIZES[s]);
          ceilings.put("memcpy_1t_" + NAMES[s] + "_before_" + name + "_GBps", memcpy);
          // The endpoint copies the tasks in flight with shm.lanes threads: so does this ceiling.
          double memcpyLanes = lanes > 1 ? memcpyThreads(from, to, SIZES[s], lanes) / 1e9 : memcpy;
          if (lanes > 1) {
            ceilings.put(
                "memcpy_" + lanes + "t_" + NAMES[s] + "_before_" + name + "_GBps", memcpyLanes);
          }
          BenchLoop.Run r = measure(requester, op, local, peer, remote, SIZES[s], name);
          failures += r.failed();
          figures.put(name + "_GBps", r.gbps());
          ratios.put(name + "_vs_memcpy", r.gbps() / memcpy);
          if (lanes > 1) {
            ratios.put(name + "_vs_memcpy_" + lanes + "t", r.gbps() / memcpyLanes);
          }
          if (op == Op.WRITE) {
            writtenUpTo = Math.max(writtenUpTo, r.touchedBytes());
          }
          failures +=
              BenchReport.verify(
                  human,
                  op,
                  local,
                  source,
                  remote,
                  op == Op.WRITE ? writtenUpTo : r.touchedBytes(),
                  sourceSeed,
                  writeSeed);
        }
      }
      if (onlySizes == null || onlySizes.contains("4KiB")) {
        // Restore the source's pattern (the WRITEs above changed it), then the task rate over SHM.
        source.call("FILL " + remote + " " + sourceSeed);
        // The ceiling of the task rate: one thread copying 4 KiB pieces over the same working set.
        double memcpy4k = memcpy(from, to, 4096);
        ceilings.put("memcpy_1t_4KiB_GBps", memcpy4k);
        ceilings.put("memcpy_1t_4KiB_copies_per_s", memcpy4k * 1e9 / 4096);
        BenchLoop.Run small =
            BenchLoop.taskRate(
                human, requester, local, peer, remote, workingSetBytes, secondsPerFigure);
        failures += small.failed();
        failures +=
            BenchReport.verify(
                human, Op.READ, local, source, remote, small.touchedBytes(), sourceSeed, 0);
        figures.put("tasks_4KiB_per_s", small.tasks() / small.seconds());
        figures.put("alloc_requester_process_tasks_4KiB_bytes_per_task", small.allocatedPerTask());
        figures.put("tasks_4KiB_jit_ms", (double) small.jitMillis());
        figures.put("tasks_4KiB_warmup_s", small.warmupSeconds());
        ratios.put(
            "tasks_4KiB_vs_memcpy", small.tasks() / small.seconds() / (memcpy4k * 1e9 / 4096));
        // The SHM endpoint copies a batch with shm.lanes threads: so does this ceiling, each thread
        // over its share of the same working set.
        if (lanes > 1) {
          double copies = memcpyThreads(from, to, 4096, lanes) / 4096;
          ceilings.put("memcpy_" + lanes + "t_4KiB_copies_per_s", copies);
          ratios.put(
              "tasks_4KiB_vs_memcpy_" + lanes + "t", small.tasks() / small.seconds() / copies);
        }
        // Request merging: the adjacent loop on two fresh requesters, merge.enabled on and off.
        failures +=
            AdjacentTasks.measure(
                human,
                requester.config(),
                source,
                remote,
                workingSetBytes,
                sourceSeed,
                Transport.UNSPEC,
                Transport.SHM,
                secondsPerFigure,
                figures,
                ratios);
      }
      long overTcp = requester.counters().tasksDispatched(Transport.TCP);
      figures.put("tasks_over_shm", (double) requester.counters().tasksDispatched(Transport.SHM));
      figures.put("tasks_over_tcp", (double) overTcp);
      if (overTcp != 0) {
        human.println("  " + overTcp + " task(s) went over TCP instead of SHM");
        failures++;
      }
      BenchReport.settleLogs(human, logs, source, failures);
    }
    BenchReport.print(human, json, figures, ceilings, ratios);
    if (failures > 0) {
      human.println(
          "RESULT: FAIL - " + failures + " failed task(s), wrong byte(s) or task(s) off SHM");
      return ExitCodes.FAILED;
    }
    return ExitCodes.PASS;
  }

  /**
   * The ceiling: {@code threads} threads copying {@code size} bytes at a time between two private
   * buffers, each over its own share of the working set (one thread: all of it), at the offsets the
   * transfer uses, for as long as a figure runs; in bytes per second, all threads together.
   */
  private double memcpyThreads(MemorySegment from, MemorySegment to, long size, int threads)
      throws InterruptedException {
    long share = workingSetBytes / threads / size * size;
    double[] rates = new double[threads];
    Thread[] workers = new Thread[threads];
    java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
    for (int t = 0; t < threads; t++) {
      int me = t;
      workers[t] =
          Thread.ofPlatform()
              .name("bench-memcpy-" + t)
              .start(
                  () -> {
                    try {
                      start.await();
                    } catch (InterruptedException e) {
                      return;
                    }
                    rates[me] = copyRate(from, to, me * share, Math.max(1, share / size), size);
                  });
    }
    start.countDown();
    double perSecond = 0;
    for (int t = 0; t < threads; t++) {
      workers[t].join();
      perSecond += rates[t];
    }
    human.printf(
        Locale.ROOT,
        "  %-12s memcpy %d thread%s, %s = %6.3f GB/s%n",
        "",
        threads,
        threads == 1 ? "" : "s",
        size >= (1 << 20) ? (size >> 20) + " MiB" : (size >> 10) + " KiB",
        perSecond / 1e9);
    return perSecond;
  }

  /** {@link #memcpyThreads} on one thread, in GB/s. */
  private double memcpy(MemorySegment from, MemorySegment to, long size)
      throws InterruptedException {
    return memcpyThreads(from, to, size, 1) / 1e9;
  }

  /**
   * Bytes per second one thread copies in {@code size} pieces cycling over {@code slots} slots from
   * {@code base}, for {@link #secondsPerFigure} after a 300 ms warm-up.
   */
  private double copyRate(MemorySegment from, MemorySegment to, long base, long slots, long size) {
    long slot = 0;
    long warmEnd = System.nanoTime() + 300_000_000L;
    while (System.nanoTime() < warmEnd) {
      long offset = base + (slot++ % slots) * size;
      MemorySegment.copy(from, offset, to, offset, size);
    }
    long bytes = 0;
    long start = System.nanoTime();
    long deadline = start + (long) (secondsPerFigure * 1e9);
    while (System.nanoTime() < deadline) {
      for (int i = 0; i < 16; i++) {
        long offset = base + (slot++ % slots) * size;
        MemorySegment.copy(from, offset, to, offset, size);
        bytes += size;
      }
    }
    return bytes / ((System.nanoTime() - start) / 1e9);
  }

  private BenchLoop.Run measure(
      TransferEngine engine,
      Op op,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      String name) {
    int perBatch = (int) Math.max(1, Math.min(1024, (64L << 20) / size));
    int batchesInFlight = (int) Math.max(2, IN_FLIGHT_BYTES / (perBatch * size));
    long slots = Math.max(1, workingSetBytes / size);
    BenchLoop.Run warm =
        BenchLoop.runFor(
            human,
            engine,
            op,
            local,
            peer,
            remote,
            size,
            perBatch,
            batchesInFlight,
            slots,
            0.3,
            null);
    Progress progress = new Progress(name, (long) (secondsPerFigure * 10), "ds");
    BenchLoop.Run r =
        BenchLoop.runFor(
            human,
            engine,
            op,
            local,
            peer,
            remote,
            size,
            perBatch,
            batchesInFlight,
            slots,
            secondsPerFigure,
            progress);
    progress.done();
    human.printf(
        Locale.ROOT,
        "  %-12s %6d tasks %9.1f MiB in %5.2f s = %6.3f GB/s%n",
        name,
        r.tasks(),
        r.bytes() / 1048576.0,
        r.seconds(),
        r.gbps());
    return new BenchLoop.Run(
        r.bytes(),
        r.tasks(),
        r.seconds(),
        Math.max(warm.touchedBytes(), r.touchedBytes()),
        r.failed() + warm.failed());
  }
}
