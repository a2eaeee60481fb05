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
import io.orbite.engine.streams.TransferStreams;
import io.orbite.qualification.bench.Jit;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
 * The command line is {@link KvOptions}; the check of the timed pass is {@link KvCheck}'s.
 */
public final class KvHandoff {
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
   * @param pushed requests the push phase's timed pass pushed
   * @param notified of those, requests whose notification arrived
   * @param pushVerified of those, requests notified exactly once, DELIVERED by the prefill's
   *     account, and every byte and guard right when the notification arrived
   * @param pushBadBlocks the blocks the push phase found wrong on arrival, in any pass
   * @param layers layers pulled in the layer phase's timed rounds
   * @param layersVerified of those, layers whose every byte (and the guard gap before it) was right
   */
  public record Outcome(
      int exitCode,
      int blocks,
      int verifiedBlocks,
      long bytes,
      List<String> problems,
      List<String> badBlocks,
      long prefillPid,
      int pushed,
      int notified,
      int pushVerified,
      List<String> pushBadBlocks,
      long layers,
      long layersVerified) {}

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
      out.println(KvOptions.USAGE);
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
    KvOptions options;
    try {
      options = KvOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("kv-handoff: " + e.getMessage());
      System.err.println(KvOptions.USAGE);
      return 2;
    }
    return execute(options).exitCode();
  }

  /**
   * Runs the handoff; never throws (a broken setup is a FAIL with its reason). The prefill
   * process's log is deleted after a PASS and kept after a FAIL, whose message names it.
   */
  public Outcome execute(KvOptions o) {
    try (ChildLogs logs = ChildLogs.create("kv-handoff")) {
      Outcome outcome = execute(o, logs.dir());
      if (outcome.exitCode() == 0) {
        logs.passed();
      }
      return outcome;
    }
  }

  /**
   * {@link #execute(KvOptions)} with the prefill process's log in {@code logs}, which is left as it
   * is.
   */
  Outcome execute(KvOptions o, Path logs) {
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
    try (PrefillProcess prefill =
        PrefillProcess.start(plan, o.layered(), o.corruptOneBlock(), logs)) {
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
      return new Outcome(
          ExitCodes.forFailure(e),
          0,
          0,
          0,
          List.of(why),
          List.of(),
          prefillPid,
          0,
          0,
          0,
          List.of(),
          0,
          0);
    }
  }

  private Outcome handoff(KvOptions o, PrefillProcess prefill, TransferEngine decode)
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
    KvDestination dst = KvDestination.layout(blocks, o.seed());
    long guardSeed = KvDestination.guardSeed(o.seed());
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
      // Untimed passes over every block, the same stream as the timed one, until the JIT is quiet
      // (see Warmup). Then the destination is reset to its guard pattern: the timed pass must land
      // every byte again.
      Warmup warmup = new Warmup();
      double firstGBps = 0;
      while (warmup.more()) {
        long jitBefore = Jit.millis();
        // With a Progress, as the timed pass has, so that no branch is first taken in the timed
        // pass.
        Progress warmProgress = new Progress("warm-up pass " + (warmup.passes() + 1), n, "blocks");
        Pass warm = Pass.run(passPlan, warmProgress);
        warmProgress.done();
        warmup.passed(Jit.millis() - jitBefore, 1);
        long failed = warm.failedOrMissing();
        if (warm.problem() != null || failed > 0) {
          throw new IllegalStateException(
              "untimed warm-up pass "
                  + warmup.passes()
                  + ": "
                  + (warm.problem() != null
                      ? warm.problem()
                      : failed + " of " + n + " blocks not completed"));
        }
        if (warmup.passes() == 1) {
          firstGBps = warm.bytes() / 1e9 / warm.seconds();
        }
      }
      int passes = warmup.passes();
      double warmSeconds = warmup.seconds();
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
    KvCheck.Verdict verdict =
        new KvCheck(out, figures).check(blocks, timed, requestCount, local, dst, guardSeed);
    List<String> problems = verdict.problems();
    List<String> badBlocks = verdict.badBlocks();
    long bytes = verdict.bytes();
    int verified = verdict.verified();

    PushPhase.Result push =
        new PushPhase(out, figures, decode, prefill, blocks, local, dst, guardSeed, o).run();
    push.problems().forEach(p -> problems.add("push: " + p));
    decode.unregister(local);

    LayerPhase.Result layered =
        new LayerPhase(out, figures, decode, peer, prefill, o)
            .run(o.layered(), prefill.layeredRegionId());
    layered.problems().forEach(p -> problems.add("layers: " + p));
    try {
      out.printf("prefill  counters: %s%n", prefill.call("COUNTERS"));
    } catch (java.io.IOException e) {
      problems.add("the prefill process did not answer COUNTERS: " + e.getMessage());
    }

    if (problems.isEmpty()) {
      out.printf(
          Locale.ROOT,
          "RESULT: PASS - %d KV blocks of %d requests handed off (%s), pulled and pushed, every "
              + "request notified exactly once; %d layers pulled layer by layer; every block, layer "
              + "and guard byte verified%n",
          n,
          requestCount,
          size(bytes),
          layered.layers());
      return new Outcome(
          0,
          n,
          verified,
          bytes,
          List.of(),
          List.of(),
          prefill.pid(),
          push.requests(),
          push.notified(),
          push.verified(),
          List.of(),
          layered.layers(),
          layered.verified());
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
        1,
        n,
        verified,
        bytes,
        List.copyOf(problems),
        List.copyOf(badBlocks),
        prefill.pid(),
        push.requests(),
        push.notified(),
        push.verified(),
        List.copyOf(push.badBlocks()),
        layered.layers(),
        layered.verified());
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
