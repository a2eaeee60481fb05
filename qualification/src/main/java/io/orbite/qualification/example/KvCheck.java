package io.orbite.qualification.example;

import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.streams.TransferResult;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.IntStream;

/**
 * The decode side's check of the timed pass of {@link KvHandoff}: each block's result (missing,
 * failed, short or arrived), the per-request latency, and every byte of the destination region
 * (each arrived block against the content its request and block must hold, every guard byte around
 * the blocks). It prints a line for each and puts its figures in the run's figures.
 */
final class KvCheck {
  /**
   * What the check found.
   *
   * @param problems one line per failed task, missing result, wrong block or damaged guard, in that
   *     order; the caller may add its own
   * @param badBlocks the blocks named in {@code problems} ("request r block b")
   * @param bytes bytes of completed blocks
   * @param verified blocks whose every byte was checked and right
   */
  record Verdict(List<String> problems, List<String> badBlocks, long bytes, int verified) {}

  private final PrintStream out;
  private final Map<String, Double> figures;

  KvCheck(PrintStream out, Map<String, Double> figures) {
    this.out = out;
    this.figures = figures;
  }

  /**
   * Checks {@code timed}, which pulled {@code blocks} of {@code requestCount} requests into {@code
   * local} at {@code dst}'s offsets, the gaps holding the guard pattern of {@code guardSeed}.
   */
  Verdict check(
      List<KvBlock> blocks,
      Pass timed,
      int requestCount,
      RegisteredMemory local,
      KvDestination dst,
      long guardSeed) {
    int n = blocks.size();
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
        KvHandoff.size(bytes),
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
              long gapFrom = dst.gapFrom(blocks, i);
              long gapTo = dst.gapTo(i);
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
    return new Verdict(problems, badBlocks, bytes, verified);
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
}
