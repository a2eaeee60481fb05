package io.orbite.qualification.example;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Submission;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.bench.Jit;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The layer-by-layer phase of {@link KvHandoff}, on the decode side: the prefill builds a layered
 * region ({@link KvLayers}), and the decode pulls every request's KV as layers, each layer one
 * {@link Submission} of its pages' READs on ONE batch reused for the whole phase. Up to {@code
 * depth} layers are in flight: layer k+1 (and the next ones, into the next request) is submitted
 * before layer k is awaited, which is how a connector overlaps a layer's transfer with the model's
 * work on the previous one; each await costs what its own layer costs, however many tasks the batch
 * holds. The pages of a layer are adjacent on both sides, so the engine may merge them into fewer
 * physical transfers (request merging); the phase reports merged tasks against physical transfers
 * from the engine's counters.
 *
 * <p>Each round starts from a destination holding only its guard pattern and is checked after it:
 * every byte of every layer and every guard byte. Untimed warm-up rounds run first (unless {@code
 * --no-warmup}), then the timed rounds the figures come from.
 */
final class LayerPhase {
  /**
   * What the phase found.
   *
   * @param layers layers pulled in the timed rounds (requests x layers x rounds)
   * @param verified of those, layers whose every byte was checked right
   * @param problems one line per failed layer, wrong byte or damaged guard (first ones only)
   */
  record Result(long layers, long verified, List<String> problems) {}

  /** Problems listed per round at most; the count says how many more. */
  private static final int LISTED = 20;

  private final PrintStream out;
  private final Map<String, Double> figures;
  private final TransferEngine decode;
  private final RemoteSegment peer;
  private final PrefillProcess prefill;
  private final KvOptions o;

  LayerPhase(
      PrintStream out,
      Map<String, Double> figures,
      TransferEngine decode,
      RemoteSegment peer,
      PrefillProcess prefill,
      KvOptions o) {
    this.out = out;
    this.figures = figures;
    this.decode = decode;
    this.peer = peer;
    this.prefill = prefill;
    this.o = o;
  }

  /** One layer in flight. */
  private record Pending(int request, int layer, Submission submission, long submittedAt) {}

  /**
   * Runs the phase against the prefill's layered region {@code regionId}, laid out as {@code plan}
   * says.
   */
  Result run(KvLayers plan, long regionId) throws InterruptedException, IOException {
    KvLayers.Destination dst = plan.destination();
    RegisteredMemory local = decode.allocate(dst.bytes(), Access.WRITE);
    int perRound = plan.requests() * plan.layers() * plan.pages();
    Batch batch =
        decode.allocateBatch(
            (int) Math.max(perRound, Math.min(65_536L, (long) perRound * (o.layerRounds() + 2))));
    out.printf(
        Locale.ROOT,
        "layers   %d requests x %d layers x %d adjacent pages of %s (a layer is %s), one "
            + "submission per layer on one batch of %d tasks, up to %d layers in flight (layer "
            + "k+1 submitted before layer k is awaited); %s, then %d timed round(s)%n",
        plan.requests(),
        plan.layers(),
        plan.pages(),
        KvHandoff.size(plan.pageBytes()),
        KvHandoff.size(plan.layerBytes()),
        batch.capacity(),
        o.layerDepth(),
        o.warmup() ? "untimed rounds until the JIT is quiet" : "no warm-up",
        o.layerRounds());
    List<String> problems = new ArrayList<>();
    long[] latencies = new long[plan.requests() * plan.layers() * o.layerRounds()];
    int measured = 0;
    long timedNanos = 0;
    long timedBytes = 0;
    long layers = 0;
    long verified = 0;
    EngineCounters before = null;
    Warmup warmup = o.warmup() ? new Warmup() : null;
    int timedRounds = 0;
    try {
      int used = 0;
      for (int round = 0; ; round++) {
        boolean timed = warmup == null || !warmup.more();
        if (timed && timedRounds++ == o.layerRounds()) {
          break;
        }
        long jitBefore = timed ? 0 : jitMillis();
        Pattern.fill(local.segment(), 0, dst.bytes(), plan.guardSeed(), 0);
        if (used + perRound > batch.capacity()) {
          batch.reset(); // every layer of the previous rounds was awaited
          used = 0;
        }
        used += perRound;
        if (timed && before == null) {
          Jit.settle();
          before = decode.counters();
        }
        long start = System.nanoTime();
        long[] moved = new long[1];
        List<String> found = new ArrayList<>();
        ArrayDeque<Pending> inFlight = new ArrayDeque<>();
        for (int r = 0; r < plan.requests(); r++) {
          for (int k = 0; k < plan.layers(); k++) {
            if (inFlight.size() >= o.layerDepth()) {
              long took = finish(inFlight.poll(), moved, found);
              if (timed) {
                latencies[measured++] = took;
              }
            }
            List<TransferRequest> reads = reads(plan, dst, local, regionId, r, k);
            long at = System.nanoTime();
            inFlight.add(new Pending(r, k, batch.submit(reads), at));
          }
        }
        while (!inFlight.isEmpty()) {
          long took = finish(inFlight.poll(), moved, found);
          if (timed) {
            latencies[measured++] = took;
          }
        }
        long roundNanos = System.nanoTime() - start;
        if (!timed) {
          warmup.passed(jitMillis() - jitBefore, 2);
        }
        long bad = verify(plan, dst, local.segment(), found);
        for (String line : found) {
          problems.add(timed ? line : "untimed round " + (round + 1) + ": " + line);
        }
        if (timed) {
          timedNanos += roundNanos;
          timedBytes += moved[0];
          layers += (long) plan.requests() * plan.layers();
          verified += (long) plan.requests() * plan.layers() - bad;
        }
      }
    } finally {
      batch.free();
      decode.unregister(local);
    }
    EngineCounters after = decode.counters();
    if (warmup != null) {
      out.printf(
          Locale.ROOT,
          "warm-up  %d untimed round(s) until the JIT was quiet (%.1f s), each checked%n",
          warmup.passes(),
          warmup.seconds());
    }
    report(plan, before, after, timedBytes, timedNanos, Arrays.copyOf(latencies, measured));
    figures.put("layers_verified", (double) verified);
    out.printf(
        Locale.ROOT,
        "verified %d/%d layers of the timed rounds byte for byte, and the guard gap before every "
            + "layer%n",
        verified,
        layers);
    return new Result(layers, verified, problems);
  }

  /** JIT time of both processes so far, ms. */
  private long jitMillis() throws IOException {
    return Jit.millis() + prefill.jitMillis();
  }

  private List<TransferRequest> reads(
      KvLayers plan,
      KvLayers.Destination dst,
      RegisteredMemory local,
      long regionId,
      int r,
      int k) {
    List<TransferRequest> reads = new ArrayList<>(plan.pages());
    long to = dst.offsets()[r * plan.layers() + k];
    long from = plan.sourceOffset(r, k);
    for (int p = 0; p < plan.pages(); p++) {
      long at = p * plan.pageBytes();
      reads.add(TransferRequest.read(local, to + at, peer, regionId, from + at, plan.pageBytes()));
    }
    return reads;
  }

  /** Awaits one layer; returns its submit-to-await latency and adds its bytes to {@code moved}. */
  private long finish(Pending p, long[] moved, List<String> problems) {
    SubmissionStatus s = p.submission().await(o.timeout());
    long took = System.nanoTime() - p.submittedAt();
    moved[0] += s.completedBytes();
    if (!s.allCompleted() && problems.size() < LISTED) {
      TaskResult bad = s.tasks().stream().filter(t -> !t.completed()).findFirst().orElse(null);
      problems.add(
          bad == null
              ? String.format(
                  Locale.ROOT,
                  "LAYER request %d layer %d not done within %d s",
                  p.request(),
                  p.layer(),
                  o.timeout().toSeconds())
              : String.format(
                  Locale.ROOT,
                  "LAYER request %d layer %d: page %d %s %s: %s",
                  p.request(),
                  p.layer(),
                  bad.index() - s.first(),
                  bad.state(),
                  bad.errorKind(),
                  bad.detail()));
    }
    return took;
  }

  /**
   * Checks every layer and every guard gap of the destination; returns how many layers were wrong
   * (a layer whose guard gap before it is damaged counts as wrong).
   */
  private static long verify(
      KvLayers plan, KvLayers.Destination dst, MemorySegment seg, List<String> problems) {
    int n = dst.offsets().length;
    String[] found = new String[n + 1];
    IntStream.range(0, n + 1)
        .parallel()
        .forEach(
            i -> {
              long gapFrom = i == 0 ? 0 : dst.offsets()[i - 1] + plan.layerBytes();
              long gapTo = i == n ? dst.bytes() : dst.offsets()[i];
              long guardSeed = plan.guardSeed();
              long badGuard = Pattern.verify(seg, gapFrom, gapTo - gapFrom, guardSeed, gapFrom);
              String where =
                  i == n
                      ? "after the last layer"
                      : "request " + i / plan.layers() + " layer " + i % plan.layers();
              if (badGuard >= 0) {
                found[i] =
                    String.format(
                        Locale.ROOT,
                        "GUARD damaged before %s: destination byte %d is 0x%02x, expected 0x%02x",
                        where,
                        badGuard,
                        seg.get(ValueLayout.JAVA_BYTE, badGuard),
                        Pattern.at(guardSeed, badGuard));
                return;
              }
              if (i == n) {
                return;
              }
              int r = i / plan.layers();
              long pos = (i % plan.layers()) * plan.layerBytes();
              long bad = Pattern.verify(seg, gapTo, plan.layerBytes(), plan.contentSeed(r), pos);
              if (bad >= 0) {
                long k = bad - gapTo;
                found[i] =
                    String.format(
                        Locale.ROOT,
                        "MISMATCH %s: first bad byte is byte %d of the layer (page %d): 0x%02x, "
                            + "expected 0x%02x",
                        where,
                        k,
                        k / plan.pageBytes(),
                        seg.get(ValueLayout.JAVA_BYTE, bad),
                        Pattern.at(plan.contentSeed(r), pos + k));
              }
            });
    long bad = 0;
    for (int i = 0; i <= n; i++) {
      if (found[i] != null) {
        bad += i < n ? 1 : 0;
        if (problems.size() < LISTED) {
          problems.add(found[i]);
        }
      }
    }
    return bad;
  }

  private void report(
      KvLayers plan,
      EngineCounters before,
      EngineCounters after,
      long bytes,
      long nanos,
      long[] latencies) {
    double seconds = nanos / 1e9;
    double gbps = seconds > 0 ? bytes / 1e9 / seconds : 0;
    Arrays.sort(latencies);
    double p50 = percentileMicros(latencies, 50);
    double p99 = percentileMicros(latencies, 99);
    long tasks = (long) plan.requests() * plan.layers() * plan.pages() * o.layerRounds();
    long merged = before == null ? 0 : after.tasksMerged() - before.tasksMerged();
    long mergedTransfers = before == null ? 0 : after.mergedTransfers() - before.mergedTransfers();
    StringBuilder perTransport = new StringBuilder();
    long physical = 0;
    for (Transport t : Transport.values()) {
      long d = before == null ? 0 : after.tasksDispatched(t) - before.tasksDispatched(t);
      if (d > 0) {
        perTransport.append(perTransport.isEmpty() ? "" : ", ").append(t).append(' ').append(d);
        physical += d;
      }
    }
    out.printf(
        Locale.ROOT,
        "pulled   %d layers in %d timed round(s), %s in %.3f s = %.2f GB/s; per layer, submit to "
            + "await: p50 %.0f us, p99 %.0f us%n",
        latencies.length,
        o.layerRounds(),
        KvHandoff.size(bytes),
        seconds,
        gbps,
        p50,
        p99);
    out.printf(
        Locale.ROOT,
        "merging  %d page READs travelled as %d physical transfers (%s): %d tasks merged into %d "
            + "merged transfers (counters of the timed rounds)%n",
        tasks,
        physical,
        perTransport.isEmpty() ? "none counted" : perTransport,
        merged,
        mergedTransfers);
    figures.put("layers_pulled", (double) latencies.length);
    figures.put("layers_pulled_bytes", (double) bytes);
    figures.put("layers_pulled_seconds", seconds);
    figures.put("layers_pulled_GBps", gbps);
    figures.put("layer_p50_us", p50);
    figures.put("layer_p99_us", p99);
    figures.put("layer_tasks", (double) tasks);
    figures.put("tasks_merged", (double) merged);
    figures.put("merged_transfers", (double) mergedTransfers);
    figures.put("physical_transfers", (double) physical);
  }

  /** The {@code p}-th percentile in µs (nearest rank) of sorted nanoseconds; NaN when empty. */
  static double percentileMicros(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e3;
  }
}
