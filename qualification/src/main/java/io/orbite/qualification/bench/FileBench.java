package io.orbite.qualification.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.config.EngineConfig;
import io.orbite.config.FileConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.nativebind.uring.IoUring;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@code ./orbite bench file [--json] [--dir D] [--quick]}: file segments over io_uring on a 1 GiB
 * file on the real disk, beside {@code fio --ioengine=io_uring} with the same parameters, in the same
 * run, on the same file:
 *
 * <ul>
 *   <li>sequential WRITE and READ of the whole file in 1 MiB tasks, 16 in the kernel at once (fio
 *       {@code --bs=1M --iodepth=16});
 *   <li>random 4 KiB READs at queue depth 32 for a fixed time (fio {@code --rw=randread --bs=4k
 *       --iodepth=32 --time_based}).
 * </ul>
 *
 * Both sides use buffered I/O (no O_DIRECT, no fsync), so both measure the same page-cache path.
 * Each figure is the median of three rounds; within a round fio and the engine run back to back.
 * Every byte the engine wrote and read is verified after each timed run (outside the timing).
 */
public final class FileBench {
  private static final long FILE_BYTES = 1L << 30;
  private static final int SEQ_BLOCK = 1 << 20;
  private static final int SEQ_DEPTH = 16;
  private static final int RAND_BLOCK = 4096;
  private static final int RAND_DEPTH = 32;
  private static final int RAND_BATCH = 4096;
  private static final long SEED = 0xF11EL;
  private static final Duration WAIT = Duration.ofMinutes(5);

  private PrintStream human = System.out;
  private int rounds = 3;
  private int randSeconds = 5;
  private int failures;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    if (json) {
      human = System.err;
    }
    if (args.contains("--quick")) {
      rounds = 1;
      randSeconds = 2;
    }
    int dirAt = args.indexOf("--dir");
    Path base = dirAt >= 0 && dirAt + 1 < args.size() ? Path.of(args.get(dirAt + 1)) : Path.of("/var/tmp");
    if (!IoUring.isAvailable()) {
      human.println("bench file: io_uring is unavailable (" + IoUring.unavailabilityCause().orElse("?")
          + "); the engine would use FileChannel and fio's io_uring engine would not run either");
      return 2;
    }
    Files.createDirectories(base);
    FileStore store = Files.getFileStore(base);
    if (store.type().equals("tmpfs") || store.type().equals("ramfs")) {
      human.println("bench file: " + base + " is on " + store.type() + ", not a disk; pass --dir on a disk");
      return 2;
    }
    if (store.getUsableSpace() < FILE_BYTES + (512L << 20)) {
      human.println("bench file: " + base + " has " + (store.getUsableSpace() >> 20) + " MiB free; 1.5 GiB needed");
      return 2;
    }
    Path dir = Files.createTempDirectory(base, "orbite-bench-file-");
    Path file = dir.resolve("bench-1GiB.dat");
    human.printf(Locale.ROOT, "bench file: 1 GiB file %s (%s, %s), buffered I/O%n", file, store.type(), store.name());
    boolean haveFio = Fio.installed();
    if (!haveFio) {
      human.println("warning: fio is not installed; the ceilings and ratios are missing (./orbite bench file installs it)");
    }
    Map<String, List<Double>> samples = new LinkedHashMap<>();
    try {
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        ch.write(java.nio.ByteBuffer.wrap(new byte[1]), FILE_BYTES - 1); // sized; the first pass lays it out
      }
      try (TransferEngine engine = TransferEngine.start(engineConfig(SEQ_DEPTH, "bench-file-seq"))) {
        RegisteredMemory src = engine.allocate(FILE_BYTES, Access.READ_WRITE);
        Pattern.fill(src.segment(), 0, FILE_BYTES, SEED, 0);
        RegisteredMemory dst = engine.allocate(FILE_BYTES, Access.READ_WRITE);
        RemoteSegment seg = engine.openFileSegment(file, Access.READ_WRITE, WAIT);
        sequential(engine, src, seg, true); // lays the file out (untimed)
        for (int r = 1; r <= rounds; r++) {
          human.printf(Locale.ROOT, "round %d of %d: sequential 1 MiB, depth %d%n", r, rounds, SEQ_DEPTH);
          if (haveFio) {
            add(samples, "fio_seqwrite_1MiB_GBps", Fio.run(file, FILE_BYTES, "write", "1M", SEQ_DEPTH, 0)
                .bytesPerSecond() / 1e9);
          }
          add(samples, "seqwrite_1MiB_GBps", sequential(engine, src, seg, true));
          verifyFile(file);
          dst.segment().fill((byte) 0);
          add(samples, "seqread_1MiB_GBps", sequential(engine, dst, seg, false));
          verifyMemory(dst.segment(), 0, FILE_BYTES, 0, "seqread");
          if (haveFio) {
            add(samples, "fio_seqread_1MiB_GBps", Fio.run(file, FILE_BYTES, "read", "1M", SEQ_DEPTH, 0)
                .bytesPerSecond() / 1e9);
          }
        }
      }
      try (TransferEngine engine = TransferEngine.start(engineConfig(RAND_DEPTH, "bench-file-rand"))) {
        RegisteredMemory dst = engine.allocate(2L * RAND_BATCH * RAND_BLOCK, Access.READ_WRITE);
        RemoteSegment seg = engine.openFileSegment(file, Access.READ, WAIT);
        for (int r = 1; r <= rounds; r++) {
          human.printf(Locale.ROOT, "round %d of %d: random 4 KiB reads, depth %d, %d s%n", r, rounds, RAND_DEPTH,
              randSeconds);
          add(samples, "randread_4KiB_qd32_iops", randomReads(engine, dst, seg, r));
          if (haveFio) {
            add(samples, "fio_randread_4KiB_qd32_iops", Fio.run(file, FILE_BYTES, "randread", "4k", RAND_DEPTH,
                randSeconds).iops());
          }
        }
      }
    } finally {
      Files.deleteIfExists(file);
      Files.deleteIfExists(dir);
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    samples.forEach((k, v) -> (k.startsWith("fio_") ? ceilings : figures).put(k, median(v)));
    samples.forEach((k, v) -> {
      for (int i = 0; i < v.size() && v.size() > 1; i++) {
        (k.startsWith("fio_") ? ceilings : figures).put(k + "_round" + (i + 1), v.get(i));
      }
    });
    ratio(ratios, "seqwrite_1MiB_vs_fio", figures.get("seqwrite_1MiB_GBps"), ceilings.get("fio_seqwrite_1MiB_GBps"));
    ratio(ratios, "seqread_1MiB_vs_fio", figures.get("seqread_1MiB_GBps"), ceilings.get("fio_seqread_1MiB_GBps"));
    ratio(ratios, "randread_4KiB_qd32_vs_fio", figures.get("randread_4KiB_qd32_iops"),
        ceilings.get("fio_randread_4KiB_qd32_iops"));
    printTable(figures, ceilings, ratios);
    if (json) {
      ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
      ObjectNode root = mapper.createObjectNode();
      ObjectNode f = root.putObject("figures");
      figures.forEach((k, v) -> f.put(k, round(v)));
      ObjectNode c = root.putObject("ceilings");
      ceilings.forEach((k, v) -> c.put(k, round(v)));
      ObjectNode rt = root.putObject("ratios");
      ratios.forEach((k, v) -> rt.put(k, round(v)));
      System.out.println(mapper.writeValueAsString(root));
    }
    if (failures > 0) {
      human.println("RESULT: FAIL - " + failures + " failed task(s) or wrong byte(s)");
      return 1;
    }
    return 0;
  }

  private static EngineConfig engineConfig(int depth, String name) {
    return EngineConfig.defaults().withName(name)
        .withFile(FileConfig.defaults().withEngine("io_uring").withQueueDepth(depth).withMaxChunkBytes(SEQ_BLOCK));
  }

  /** One pass over the whole file in 1 MiB tasks, one batch; returns GB/s. */
  private double sequential(TransferEngine engine, RegisteredMemory mem, RemoteSegment seg, boolean write) {
    int tasks = (int) (FILE_BYTES / SEQ_BLOCK);
    List<TransferRequest> requests = new ArrayList<>(tasks);
    for (int i = 0; i < tasks; i++) {
      long at = (long) i * SEQ_BLOCK;
      requests.add(write
          ? TransferRequest.write(mem, at, seg, TransferEngine.FILE_REGION_ID, at, SEQ_BLOCK)
          : TransferRequest.read(mem, at, seg, TransferEngine.FILE_REGION_ID, at, SEQ_BLOCK));
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

  /** Random 4 KiB reads for {@code randSeconds}: two batches of 4096 alternate; returns tasks per second. */
  private double randomReads(TransferEngine engine, RegisteredMemory dst, RemoteSegment seg, int round) {
    SplittableRandom random = new SplittableRandom(round);
    long blocks = FILE_BYTES / RAND_BLOCK;
    long[][] offsets = new long[2][RAND_BATCH];
    Batch[] inFlight = new Batch[2];
    long done = 0;
    long t0 = System.nanoTime();
    long end = t0 + randSeconds * 1_000_000_000L;
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
        requests.add(TransferRequest.read(dst, ((long) k * RAND_BATCH + i) * RAND_BLOCK, seg,
            TransferEngine.FILE_REGION_ID, offsets[k][i], RAND_BLOCK));
      }
      inFlight[k] = engine.allocateBatch(RAND_BATCH);
      inFlight[k].submit(requests);
      k = 1 - k;
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < RAND_BATCH; i++) {
        if (offsets[b][i] != 0 || i == 0) {
          verifyMemory(dst.segment(), ((long) b * RAND_BATCH + i) * RAND_BLOCK, RAND_BLOCK, offsets[b][i], "randread");
        }
      }
    }
    return done / seconds;
  }

  private void countFailures(BatchStatus s, String what) {
    for (TaskResult t : s.tasks()) {
      if (!t.completed()) {
        failures++;
        if (failures <= 5) {
          human.println("  " + what + " task " + t.index() + " failed: " + t.errorKind() + " " + t.detail());
        }
      }
    }
  }

  private void verifyFile(Path file) throws IOException {
    try (FileChannel ch = FileChannel.open(file); Arena arena = Arena.ofConfined()) {
      MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, FILE_BYTES, arena);
      verifyMemory(m, 0, FILE_BYTES, 0, "file after seqwrite");
    }
  }

  private void verifyMemory(MemorySegment m, long offset, long length, long from, String what) {
    long bad = Pattern.verify(m, offset, length, SEED, from);
    if (bad >= 0) {
      failures++;
      human.println("  " + what + ": wrong byte at " + bad);
    }
  }

  private static void add(Map<String, List<Double>> samples, String key, double value) {
    samples.computeIfAbsent(key, x -> new ArrayList<>()).add(value);
  }

  private static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    return s.get(s.size() / 2);
  }

  private static void ratio(Map<String, Double> ratios, String name, Double figure, Double ceiling) {
    if (figure != null && ceiling != null && ceiling > 0) {
      ratios.put(name, figure / ceiling);
    }
  }

  private void printTable(Map<String, Double> figures, Map<String, Double> ceilings, Map<String, Double> ratios) {
    human.println("figures:");
    figures.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
    human.println("ceilings (same run):");
    ceilings.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
    human.println("ratios:");
    ratios.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
  }

  private static double round(double v) {
    return Math.round(v * 1000.0) / 1000.0;
  }
}
