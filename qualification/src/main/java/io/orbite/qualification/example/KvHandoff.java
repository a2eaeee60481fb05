package io.orbite.qualification.example;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.streams.StreamSettings;
import io.orbite.engine.streams.TransferResult;
import io.orbite.engine.streams.TransferStreams;
import io.orbite.qualification.bench.Jit;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.IntStream;

/**
 * {@code ./orbite example kv-handoff}: the KV-cache handoff between a prefill and a decode server.
 *
 * <p>The prefill side ({@link PrefillMain}, a child JVM) computes the KV blocks of a set of
 * requests into one registered pool region and publishes where every block is. The decode side
 * (this process) opens the prefill engine, allocates a destination region with a guard gap before
 * every block, and pulls every block through {@link TransferStreams#flow} as READ requests. Then it
 * checks every byte: each block against the content its (request, block) must hold, and every guard
 * byte of the destination region. Untimed warm-up passes run the same stream first (see {@link
 * Pass}). It reports bytes, GB/s, per-request latency (first block of a request into the stream to
 * the result of its last block) and verified blocks, and returns 0 only when every byte is right.
 */
public final class KvHandoff {
  static final String USAGE =
      """
      usage: ./orbite example kv-handoff [options]
        --requests N                  requests whose KV blocks are handed off (default 64)
        --ordering in-order|as-completed
                                      order of the stream's results (default in-order)
        --blocks B                    KV blocks per request (default 4)
        --page-kib K                  largest KV page; requests use K, K/2, K/4 or K/8 (default 2048)
        --pool-mib M                  prefill KV pool size, grown when the blocks need more (default 512)
        --batch-tasks T               most READs per engine batch (default 16)
        --inflight-mib M              most bytes the stream holds in flight (default 32)
        --seed S                      seed of sizes, placement and contents (default 20260101)
        --timeout-s S                 give up on the transfer after S seconds (default 300)
        --no-warmup                   skip the untimed warm-up passes (every block pulled, the same
                                      stream, until two passes in a row compile for at most 10 ms of
                                      JIT time, at most 12 passes; then the destination is reset to
                                      its guard pattern): time a cold JVM instead
        --json                        the report goes to stderr; stdout gets one JSON object with
                                      the figures (pulled_GBps, request_p50_ms, request_p99_ms, ...)
        --corrupt-one-block           test hook: the prefill damages one byte of one block after
                                      publishing it; the run must find it and fail""";

  /** What a run does. */
  public record Options(
      int requests,
      StreamSettings.Ordering ordering,
      int blocksPerRequest,
      long pageBytes,
      long poolBytes,
      int batchTasks,
      long inflightBytes,
      long seed,
      Duration timeout,
      boolean corruptOneBlock,
      boolean warmup) {

    public static Options defaults() {
      return new Options(
          64,
          StreamSettings.Ordering.IN_ORDER,
          4,
          2L << 20,
          512L << 20,
          16,
          32L << 20,
          20260101L,
          Duration.ofSeconds(300),
          false,
          true);
    }

    public KvPlan plan() {
      return new KvPlan(requests, blocksPerRequest, pageBytes, poolBytes, seed);
    }

    /**
     * Parses command line options over {@link #defaults()}; throws IllegalArgumentException naming
     * the bad one.
     */
    public static Options parse(List<String> args) {
      Options d = defaults();
      int requests = d.requests;
      StreamSettings.Ordering ordering = d.ordering;
      int blocks = d.blocksPerRequest;
      long page = d.pageBytes;
      long pool = d.poolBytes;
      int batchTasks = d.batchTasks;
      long inflight = d.inflightBytes;
      long seed = d.seed;
      Duration timeout = d.timeout;
      boolean corrupt = d.corruptOneBlock;
      boolean warmup = d.warmup;
      for (int i = 0; i < args.size(); i++) {
        String a = args.get(i);
        String v = null;
        int eq = a.indexOf('=');
        if (a.startsWith("--") && eq > 0) {
          v = a.substring(eq + 1);
          a = a.substring(0, eq);
        }
        if (a.equals("--corrupt-one-block")) {
          corrupt = true;
          continue;
        }
        if (a.equals("--no-warmup")) {
          warmup = false;
          continue;
        }
        if (v == null) {
          if (i + 1 >= args.size()) {
            throw new IllegalArgumentException(a + " needs a value");
          }
          v = args.get(++i);
        }
        switch (a) {
          case "--requests" -> requests = positiveInt(a, v);
          case "--ordering" ->
              ordering =
                  switch (v) {
                    case "in-order" -> StreamSettings.Ordering.IN_ORDER;
                    case "as-completed" -> StreamSettings.Ordering.AS_COMPLETED;
                    default ->
                        throw new IllegalArgumentException(
                            "--ordering: in-order or as-completed, got '" + v + "'");
                  };
          case "--blocks" -> blocks = positiveInt(a, v);
          case "--page-kib" -> page = positiveInt(a, v) * 1024L;
          case "--pool-mib" -> pool = nonNegativeLong(a, v) << 20;
          case "--batch-tasks" -> batchTasks = positiveInt(a, v);
          case "--inflight-mib" -> inflight = positiveInt(a, v) * (1L << 20);
          case "--seed" -> seed = Long.parseLong(v);
          case "--timeout-s" -> timeout = Duration.ofSeconds(positiveInt(a, v));
          default -> throw new IllegalArgumentException("unknown option " + a);
        }
      }
      Options o =
          new Options(
              requests,
              ordering,
              blocks,
              page,
              pool,
              batchTasks,
              inflight,
              seed,
              timeout,
              corrupt,
              warmup);
      o.plan(); // validates the sizes
      return o;
    }

    private static int positiveInt(String option, String v) {
      int n;
      try {
        n = Integer.parseInt(v);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(option + ": not a number: '" + v + "'");
      }
      if (n < 1) {
        throw new IllegalArgumentException(option + " must be >= 1, got " + n);
      }
      return n;
    }

    private static long nonNegativeLong(String option, String v) {
      long n;
      try {
        n = Long.parseLong(v);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(option + ": not a number: '" + v + "'");
      }
      if (n < 0 || n > (1L << 30)) {
        throw new IllegalArgumentException(option + " must be 0.." + (1L << 30) + ", got " + n);
      }
      return n;
    }
  }

  /**
   * What a run found.
   *
   * @param exitCode 0 when every block arrived and every byte (blocks and guards) is right; 2 for a
   *     configuration error; else 1
   * @param blocks blocks published by the prefill side
   * @param verifiedBlocks blocks whose every byte was checked and right
   * @param bytes bytes of completed blocks
   * @param problems one line per failed task, missing result, wrong block or damaged guard
   * @param badBlocks the blocks named in {@code problems} ("request r block b")
   * @param prefillPid the prefill process (gone when the run returns)
   */
  public record Outcome(
      int exitCode,
      int blocks,
      int verifiedBlocks,
      long bytes,
      List<String> problems,
      List<String> badBlocks,
      long prefillPid) {}

  /**
   * Warm-up passes repeat until two in a row compile for at most this long (JIT ms, as the JVM
   * counts it).
   */
  static final long WARMUP_QUIET_JIT_MS = 10;

  /** At most this many warm-up passes. */
  static final int WARMUP_MAX_PASSES = 12;

  /** No warm-up pass starts after this many seconds of warm-up. */
  static final long WARMUP_MAX_SECONDS = 20;

  private final PrintStream out;

  /** What the last run measured, for {@code --json}. */
  private final Map<String, Double> figures = new LinkedHashMap<>();

  /**
   * One JSON object in the shape of the benches' ({@code figures}, {@code ceilings}, {@code
   * ratios}), and the result.
   */
  void printJson(PrintStream json, int exitCode) {
    var mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    var root = mapper.createObjectNode();
    var f = root.putObject("figures");
    figures.forEach((k, v) -> f.put(k, Math.round(v * 1000) / 1000.0));
    root.putObject("ceilings");
    root.putObject("ratios");
    root.put("result", exitCode == 0 ? "PASS" : "FAIL");
    try {
      json.println(mapper.writeValueAsString(root));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public KvHandoff(PrintStream out) {
    this.out = out;
  }

  public KvHandoff() {
    this(System.out);
  }

  /** The CLI entry: parses {@code args}, runs, returns the exit code (2 on a usage error). */
  public int run(List<String> args) {
    if (args.contains("-h") || args.contains("--help")) {
      out.println(USAGE);
      return 0;
    }
    if (args.contains("--json") && out == System.out) {
      // The human report moves to stderr, so that stdout holds exactly one JSON object.
      List<String> rest = args.stream().filter(a -> !a.equals("--json")).toList();
      KvHandoff quiet = new KvHandoff(System.err);
      int code = quiet.run(rest);
      if (code != 2) {
        quiet.printJson(System.out, code);
      }
      return code;
    }
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("kv-handoff: " + e.getMessage());
      System.err.println(USAGE);
      return 2;
    }
    return execute(options).exitCode();
  }

  /**
   * Runs the handoff; never throws (a broken setup is a FAIL with its reason). The prefill
   * process's log is deleted after a PASS and kept after a FAIL, whose message names it.
   */
  public Outcome execute(Options o) {
    try (ChildLogs logs = ChildLogs.create("kv-handoff")) {
      Outcome outcome = execute(o, logs.dir());
      if (outcome.exitCode() == 0) {
        logs.passed();
      }
      return outcome;
    }
  }

  /**
   * {@link #execute(Options)} with the prefill process's log in {@code logs}, which is left as it
   * is.
   */
  Outcome execute(Options o, Path logs) {
    KvPlan plan = o.plan();
    out.printf(
        Locale.ROOT, "OrbiTE example: KV-cache handoff, prefill -> decode over TCP loopback%n");
    out.printf(
        Locale.ROOT,
        "  %d requests x %d KV blocks; pages of %s .. %s per request, the last page of a request "
            + "partly filled%n",
        plan.requests(),
        plan.blocksPerRequest(),
        size(plan.pageBytes() / 8),
        size(plan.pageBytes()));
    long prefillPid = -1;
    try (PrefillProcess prefill = PrefillProcess.start(plan, o.corruptOneBlock(), logs)) {
      prefillPid = prefill.pid();
      out.printf(
          Locale.ROOT,
          "prefill  %s epoch %x (pid %d, separate process): %d blocks (%s) published in region %d "
              + "of %s%n",
          prefill.endpoint(),
          prefill.epoch(),
          prefill.pid(),
          prefill.blocks().size(),
          size(prefill.publishedBytes()),
          prefill.regionId(),
          size(prefill.regionBytes()));
      if (o.corruptOneBlock()) {
        out.printf(
            "  (test hook: the prefill damaged one byte of one block after publishing it)%n");
      }
      try (TransferEngine decode =
          TransferEngine.start(EngineConfig.fromEnv().withName("decode"))) {
        return handoff(o, prefill, decode);
      }
    } catch (Exception e) {
      String why = e.getClass().getSimpleName() + ": " + e.getMessage();
      out.printf(
          "RESULT: FAIL - the handoff could not run: %s (prefill log: %s)%n",
          why, logs.resolve("prefill.log"));
      return new Outcome(ExitCodes.forFailure(e), 0, 0, 0, List.of(why), List.of(), prefillPid);
    }
  }

  /** Where each block goes on the decode side. */
  private record Destination(long[] offsets, long bytes) {}

  /**
   * Blocks one after another, each after a guard gap of 1..4096 bytes, so most offsets are
   * unaligned.
   */
  private static Destination layout(List<KvBlock> blocks, long seed) {
    Random random = new Random(seed ^ 0x6465636f6465L);
    long[] offsets = new long[blocks.size()];
    long at = 0;
    for (int i = 0; i < blocks.size(); i++) {
      at += 1 + random.nextInt(4096);
      offsets[i] = at;
      at += blocks.get(i).length();
    }
    return new Destination(offsets, at + 4096 + 7);
  }

  private Outcome handoff(Options o, PrefillProcess prefill, TransferEngine decode)
      throws Exception {
    List<KvBlock> blocks = prefill.blocks();
    int n = blocks.size();
    RemoteSegment peer = decode.openSegment(prefill.endpoint(), Duration.ofSeconds(10));
    if (peer.descriptor().epoch() != prefill.epoch()) {
      throw new IllegalStateException(
          "opened epoch "
              + Long.toHexString(peer.descriptor().epoch())
              + ", but the blocks were published by epoch "
              + Long.toHexString(prefill.epoch()));
    }
    Destination dst = layout(blocks, o.seed());
    long guardSeed = KvPlan.mix(o.seed(), 0x67756172L, 0x64L);
    // The decode side's KV pool: the pulled blocks land here. Nothing remote reads it; WRITE would
    // let
    // a prefill push instead (the other handoff direction).
    RegisteredMemory local = decode.allocate(dst.bytes(), Access.WRITE);
    Pattern.fill(local.segment(), 0, dst.bytes(), guardSeed, 0);
    out.printf(
        Locale.ROOT,
        "decode   %s (pid %d): destination region of %s, a 1..4096 B guard gap before every "
            + "block%n",
        decode.localSegment().endpoint(),
        ProcessHandle.current().pid(),
        size(dst.bytes()));

    // Requests in publication order (request by request); the results name their block by local
    // offset.
    List<TransferRequest> reads = new ArrayList<>(n);
    Map<Long, Integer> byOffset = new HashMap<>(n * 2);
    Map<Integer, Integer> requestIndex = new HashMap<>();
    int[] requestOf = new int[n];
    for (int i = 0; i < n; i++) {
      KvBlock b = blocks.get(i);
      reads.add(
          TransferRequest.read(
              local, dst.offsets()[i], peer, b.regionId(), b.offset(), b.length()));
      byOffset.put(dst.offsets()[i], i);
      requestOf[i] = requestIndex.computeIfAbsent(b.request(), r -> requestIndex.size());
    }
    int requestCount = requestIndex.size();

    StreamSettings settings =
        StreamSettings.defaults()
            .withOrdering(o.ordering())
            .withMaxBatchTasks(o.batchTasks())
            .withMaxInflightBytes(o.inflightBytes());
    out.printf(
        Locale.ROOT,
        "stream   TransferStreams.flow: %s, up to %d READs per batch, at most %s in flight%n",
        o.ordering() == StreamSettings.Ordering.IN_ORDER ? "in-order" : "as-completed",
        o.batchTasks(),
        size(o.inflightBytes()));
    Pass.Plan passPlan =
        new Pass.Plan(decode, reads, byOffset, requestOf, requestCount, settings, o.timeout());

    if (o.warmup()) {
      // Untimed passes over every block, the same stream as the timed one, so that the timed pass
      // measures the engine and not the JIT compiling it: on two cores C2 competes with the
      // transfer,
      // and the stage's per-batch methods reach C2's thresholds only after several passes. They
      // repeat until two passes in a row compile for at most WARMUP_QUIET_JIT_MS (at most
      // WARMUP_MAX_PASSES passes, WARMUP_MAX_SECONDS). Then the destination is reset to its guard
      // pattern: the timed pass must land every byte again.
      long warmStart = System.nanoTime();
      int passes = 0;
      int quiet = 0;
      double firstGBps = 0;
      while (quiet < 2
          && passes < WARMUP_MAX_PASSES
          && (passes == 0 || System.nanoTime() - warmStart < WARMUP_MAX_SECONDS * 1_000_000_000L)) {
        long jitBefore = Jit.millis();
        // With a Progress, as the timed pass has, so that no branch is first taken in the timed
        // pass.
        Progress warmProgress = new Progress("warm-up pass " + (passes + 1), n, "blocks");
        Pass warm = Pass.run(passPlan, warmProgress);
        warmProgress.done();
        long jit = Jit.millis() - jitBefore;
        passes++;
        quiet = jit <= WARMUP_QUIET_JIT_MS ? quiet + 1 : 0;
        long failed = warm.failedOrMissing();
        if (warm.problem() != null || failed > 0) {
          throw new IllegalStateException(
              "untimed warm-up pass "
                  + passes
                  + ": "
                  + (warm.problem() != null
                      ? warm.problem()
                      : failed + " of " + n + " blocks not completed"));
        }
        if (passes == 1) {
          firstGBps = warm.bytes() / 1e9 / warm.seconds();
        }
      }
      double warmSeconds = (System.nanoTime() - warmStart) / 1e9;
      Pattern.fill(local.segment(), 0, dst.bytes(), guardSeed, 0);
      // The JIT is still compiling what the passes made hot: let it finish before the clock starts.
      Jit.settle();
      out.printf(
          Locale.ROOT,
          "warm-up  every block pulled %d time(s), untimed, until the JIT was quiet (%.1f s; the "
              + "first pass, from a cold JVM, %.2f GB/s); destination reset to its guards%n",
          passes,
          warmSeconds,
          firstGBps);
      figures.put("warmup_GBps", firstGBps);
      figures.put("warmup_passes", (double) passes);
    }
    Progress progress = new Progress("pull KV blocks", n, "blocks");
    long jitBefore = Jit.millis();
    Pass timed = Pass.run(passPlan, progress);
    long timedJit = Jit.millis() - jitBefore;
    progress.done();
    figures.put("timed_jit_ms", (double) timedJit);
    String streamProblem = timed.problem();
    double seconds = timed.seconds();
    AtomicReferenceArray<TransferResult> results = timed.results();
    AtomicIntegerArray remaining = timed.remaining();
    AtomicLongArray firstIn = timed.firstIn();
    AtomicLongArray lastOut = timed.lastOut();
    AtomicInteger duplicates = timed.duplicates();

    List<String> problems = new ArrayList<>();
    List<String> badBlocks = new ArrayList<>();
    if (streamProblem != null) {
      problems.add(streamProblem);
    }
    if (duplicates.get() > 0) {
      problems.add(duplicates.get() + " result(s) that matched no block, or a block a second time");
    }
    long bytes = 0;
    boolean[] arrived = new boolean[n];
    for (int i = 0; i < n; i++) {
      KvBlock b = blocks.get(i);
      TransferResult r = results.get(i);
      if (r == null) {
        problems.add("MISSING " + b.name() + ": no result from the stream");
        badBlocks.add(b.name());
      } else if (!r.completed()) {
        problems.add(
            String.format(
                Locale.ROOT,
                "FAILED %s: %s %s: %s",
                b.name(),
                r.result().state(),
                r.result().errorKind(),
                r.result().detail()));
        badBlocks.add(b.name());
      } else if (r.result().bytes() != b.length()) {
        problems.add(
            String.format(
                Locale.ROOT,
                "FAILED %s: completed with %d of %d bytes",
                b.name(),
                r.result().bytes(),
                b.length()));
        badBlocks.add(b.name());
      } else {
        arrived[i] = true;
        bytes += b.length();
      }
    }
    out.printf(
        Locale.ROOT,
        "pulled   %d/%d blocks, %s in %.3f s = %.2f GB/s%n",
        countTrue(arrived),
        n,
        size(bytes),
        seconds,
        bytes / 1e9 / seconds);
    figures.put("blocks", (double) n);
    figures.put("blocks_pulled", (double) countTrue(arrived));
    figures.put("pulled_bytes", (double) bytes);
    figures.put("pulled_seconds", seconds);
    figures.put("pulled_GBps", bytes / 1e9 / seconds);

    // Per-request latency: first block into the flow -> last block's result.
    List<Long> latencies = new ArrayList<>();
    for (int r = 0; r < requestCount; r++) {
      if (remaining.get(r) == 0 && firstIn.get(r) >= 0) {
        latencies.add(lastOut.get(r) - firstIn.get(r));
      }
    }
    out.printf(
        Locale.ROOT,
        "latency  per request, first block into the stream -> last block's result: p50 %.3f ms, "
            + "p99 %.3f ms, max %.3f ms (%d requests)%n",
        pct(latencies, 50),
        pct(latencies, 99),
        pct(latencies, 100),
        latencies.size());
    figures.put("requests", (double) latencies.size());
    figures.put("request_p50_ms", pct(latencies, 50));
    figures.put("request_p99_ms", pct(latencies, 99));
    figures.put("request_max_ms", pct(latencies, 100));

    // Every byte: each block's content, and every guard byte around the blocks.
    long verifyStart = System.nanoTime();
    MemorySegment seg = local.segment();
    String[] blockProblem = new String[n];
    String[] guardProblem = new String[n + 1];
    IntStream.range(0, n + 1)
        .parallel()
        .forEach(
            i -> {
              long gapFrom = i == 0 ? 0 : dst.offsets()[i - 1] + blocks.get(i - 1).length();
              long gapTo = i == n ? dst.bytes() : dst.offsets()[i];
              long badGuard = Pattern.verify(seg, gapFrom, gapTo - gapFrom, guardSeed, gapFrom);
              if (badGuard >= 0) {
                guardProblem[i] =
                    String.format(
                        Locale.ROOT,
                        "GUARD damaged %s: destination byte %d is 0x%02x, expected 0x%02x",
                        i == n ? "after the last block" : "before " + blocks.get(i).name(),
                        badGuard,
                        seg.get(ValueLayout.JAVA_BYTE, badGuard),
                        Pattern.at(guardSeed, badGuard));
              }
              if (i < n && arrived[i]) {
                KvBlock b = blocks.get(i);
                long off = dst.offsets()[i];
                long bad = Pattern.verify(seg, off, b.length(), b.seed(), 0);
                if (bad >= 0) {
                  long k = bad - off;
                  blockProblem[i] =
                      String.format(
                          Locale.ROOT,
                          "MISMATCH %s: first bad byte is byte %d of %d (prefill region %d "
                              + "offset %d, destination offset %d): 0x%02x, expected 0x%02x",
                          b.name(),
                          k,
                          b.length(),
                          b.regionId(),
                          b.offset() + k,
                          bad,
                          seg.get(ValueLayout.JAVA_BYTE, bad),
                          Pattern.at(b.seed(), k));
                }
              }
            });
    double verifySeconds = (System.nanoTime() - verifyStart) / 1e9;
    int verified = 0;
    int guardsBad = 0;
    for (int i = 0; i <= n; i++) {
      if (guardProblem[i] != null) {
        problems.add(guardProblem[i]);
        guardsBad++;
      }
      if (i < n) {
        if (blockProblem[i] != null) {
          problems.add(blockProblem[i]);
          badBlocks.add(blocks.get(i).name());
        } else if (arrived[i]) {
          verified++;
        }
      }
    }
    long guardBytes = dst.bytes() - blocks.stream().mapToLong(KvBlock::length).sum();
    figures.put("blocks_verified", (double) verified);
    figures.put("guard_bytes_verified", (double) guardBytes);
    out.printf(
        Locale.ROOT,
        "verified %d/%d blocks byte for byte, and %s guard bytes in %d gaps%s (%.2f s)%n",
        verified,
        n,
        String.format(Locale.ROOT, "%,d", guardBytes),
        n + 1,
        guardsBad == 0 ? "" : " (" + guardsBad + " damaged)",
        verifySeconds);
    try {
      out.printf("prefill  counters: %s%n", prefill.call("COUNTERS"));
    } catch (java.io.IOException e) {
      problems.add("the prefill process did not answer COUNTERS: " + e.getMessage());
    }
    decode.unregister(local);

    if (problems.isEmpty()) {
      out.printf(
          Locale.ROOT,
          "RESULT: PASS - %d KV blocks of %d requests handed off (%s), every block and guard byte "
              + "verified%n",
          n,
          requestCount,
          size(bytes));
      return new Outcome(0, n, verified, bytes, List.of(), List.of(), prefill.pid());
    }
    int shown = Math.min(problems.size(), 10);
    for (int i = 0; i < shown; i++) {
      out.println("  " + problems.get(i));
    }
    if (problems.size() > shown) {
      out.printf("  ... and %d more%n", problems.size() - shown);
    }
    out.printf(
        "RESULT: FAIL - %d problem(s), first: %s; prefill log: %s%n",
        problems.size(), problems.get(0), prefill.log());
    return new Outcome(
        1, n, verified, bytes, List.copyOf(problems), List.copyOf(badBlocks), prefill.pid());
  }

  private static int countTrue(boolean[] values) {
    int c = 0;
    for (boolean v : values) {
      c += v ? 1 : 0;
    }
    return c;
  }

  /** The {@code p}-th percentile in ms (nearest rank); NaN when empty. */
  static double pct(List<Long> nanos, double p) {
    if (nanos.isEmpty()) {
      return Double.NaN;
    }
    List<Long> sorted = new ArrayList<>(nanos);
    sorted.sort(null);
    int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i))) / 1e6;
  }

  static String size(long bytes) {
    if (bytes >= 1L << 30) {
      return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }
    if (bytes >= 1L << 20) {
      return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
    }
    if (bytes >= 1L << 10) {
      return String.format(Locale.ROOT, "%.0f KiB", bytes / 1024.0);
    }
    return bytes + " B";
  }
}
