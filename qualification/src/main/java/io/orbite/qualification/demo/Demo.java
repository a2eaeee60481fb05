package io.orbite.qualification.demo;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.harness.TaskRunner;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * The main job: a source engine in a child process and a requester engine in this one, on loopback.
 * Both register memory with guard bytes around every task's range; READ and WRITE rounds of mixed
 * sizes (4 KiB to 16 MiB, unaligned offsets and odd lengths) run through the batch API; afterwards
 * every byte of both regions is checked (payload and guards). Prints throughput and per-size
 * latency; returns non-zero on any failed task or wrong byte.
 */
public final class Demo {
  private static final String[] CLASSES = {"4KiB", "64KiB", "1MiB", "4MiB", "16MiB"};
  private static final long[] SIZES = {4L << 10, 64L << 10, 1L << 20, 4L << 20, 16L << 20};
  private static final int[] COUNTS = {512, 192, 40, 12, 5};
  private static final int ROUNDS = 6;
  private static final int TASKS_PER_BATCH = 64;
  private static final int BATCHES_IN_FLIGHT = 4;

  private final PrintStream out = System.out;

  /** Longest {@code --serve} accepted, in seconds (one day). */
  static final long MAX_SERVE_SECONDS = 86_400;

  /**
   * {@code --serve SECONDS}: after the run, keep both engines with their dashboards and metrics
   * endpoints up that long; -1 when absent.
   */
  static long serveSeconds(List<String> args) {
    long serve = -1;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (a.equals("--serve")) {
        if (i + 1 >= args.size()) {
          throw new IllegalArgumentException(
              "--serve needs a number of seconds (1.." + MAX_SERVE_SECONDS + ")");
        }
        String v = args.get(++i);
        try {
          serve = Long.parseLong(v);
        } catch (NumberFormatException e) {
          serve = 0;
        }
        if (serve < 1 || serve > MAX_SERVE_SECONDS) {
          throw new IllegalArgumentException(
              "--serve " + v + ": must be 1.." + MAX_SERVE_SECONDS + " seconds");
        }
      } else {
        throw new IllegalArgumentException(
            "demo: unknown argument " + a + " (known: --serve SECONDS)");
      }
    }
    return serve;
  }

  /**
   * {@code base} with both observability endpoints enabled on loopback (ephemeral ports) when
   * serving.
   */
  static EngineConfig observed(EngineConfig base, boolean serve) {
    if (!serve) {
      return base;
    }
    return base.withObservability(
        base.observability()
            .withMetrics(base.observability().metrics().withEnabled(true))
            .withDashboard(base.observability().dashboard().withEnabled(true)));
  }

  /**
   * Prints each observability URL of one engine on its own line ({@code dashboard: http://...}).
   */
  private void printUrls(String who, Map<String, String> urls) {
    if (urls.isEmpty()) {
      return;
    }
    out.println(who + ":");
    urls.forEach((name, url) -> out.println(name + ": " + url));
  }

  private static Map<String, String> parseUrls(String answer) {
    Map<String, String> urls = new LinkedHashMap<>();
    for (String pair : answer.trim().split("\\s+")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        urls.put(pair.substring(0, eq), pair.substring(eq + 1));
      }
    }
    return urls;
  }

  public int run(List<String> args) throws Exception {
    long serve;
    try {
      serve = serveSeconds(args);
    } catch (IllegalArgumentException e) {
      System.err.println("orbite demo: " + e.getMessage());
      return 2;
    }
    EngineConfig base = EngineConfig.fromEnv();
    long seed = 20261129L;
    Random random = new Random(seed);
    List<Placement> placements = layout(random);
    long regionBytes = 0;
    for (Placement p : placements) {
      regionBytes = Math.max(regionBytes, Math.max(p.localOffset(), p.remoteOffset()) + p.length());
    }
    regionBytes += 4096 + 7;
    out.printf(
        Locale.ROOT,
        "OrbiTE demo: %d tasks per round (4 KiB .. 16 MiB, unaligned), %d rounds of READ and WRITE, "
            + "regions of %.1f MiB with guard bytes around every range%n",
        placements.size(),
        ROUNDS,
        regionBytes / 1048576.0);
    Map<String, String> sourceEnv =
        serve > 0 ? Map.of(EngineConfig.ENV_VAR, observed(base, true).toJson()) : Map.of();
    try (ChildLogs logs = ChildLogs.create("demo");
        EngineProcess source = EngineProcess.start("demo-source", logs.dir(), sourceEnv);
        TransferEngine requester =
            TransferEngine.start(observed(base, serve > 0).withName("demo-requester"))) {
      out.printf(
          "source    %s (pid %d, separate process)%nrequester %s (pid %d)%n",
          source.endpoint(),
          source.pid(),
          requester.localSegment().endpoint(),
          ProcessHandle.current().pid());
      printUrls("requester " + requester.localSegment().endpoint(), requester.observabilityUrls());
      printUrls("source " + source.endpoint(), parseUrls(source.call("URLS")));
      long remoteRegion = Long.parseLong(source.call("ALLOC " + regionBytes + " READ_WRITE"));
      RegisteredMemory local = requester.allocate(regionBytes, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      Map<String, List<Long>> readLatency = new LinkedHashMap<>();
      Map<String, List<Long>> writeLatency = new LinkedHashMap<>();
      long movedBytes = 0;
      double movedSeconds = 0;
      int failures = 0;
      for (int round = 1; round <= ROUNDS; round++) {
        Collections.shuffle(placements, random);
        long dataSeed = random.nextLong();
        long guardSeed = random.nextLong();
        // READ: remote holds data, local holds guards; afterwards local = data in spans, guards
        // elsewhere.
        source.call("FILL " + remoteRegion + " " + dataSeed);
        Pattern.fill(local.segment(), 0, regionBytes, guardSeed, 0);
        Phase read =
            phase(
                requester,
                Op.READ,
                "READ  round " + round + "/" + ROUNDS,
                placements,
                local,
                peer,
                remoteRegion);
        failures += read.failed();
        long bad = RegionCheck.check(local.segment(), spans(placements, true, dataSeed), guardSeed);
        failures += report(read, bad, "requester region (payload + guards)");
        String remoteCheck =
            source.ask("VERIFY " + remoteRegion + " " + dataSeed + " 0", List.of());
        failures +=
            report(
                null,
                remoteCheck.equals("OK") ? -1 : parseMismatch(remoteCheck),
                "source region untouched by READ");
        collect(readLatency, placements, read.results());
        // WRITE: local holds data, remote holds guards; afterwards remote = data in spans, guards
        // elsewhere.
        long writeSeed = random.nextLong();
        long remoteGuard = random.nextLong();
        Pattern.fill(local.segment(), 0, regionBytes, writeSeed, 0);
        source.call("FILL " + remoteRegion + " " + remoteGuard);
        Phase write =
            phase(
                requester,
                Op.WRITE,
                "WRITE round " + round + "/" + ROUNDS,
                placements,
                local,
                peer,
                remoteRegion);
        failures += write.failed();
        List<String> lines = new ArrayList<>();
        for (Span s : spans(placements, false, writeSeed)) {
          lines.add(s.offset() + " " + s.length() + " " + s.seed() + " " + s.from());
        }
        String answer =
            source.ask("VERIFY " + remoteRegion + " " + remoteGuard + " " + lines.size(), lines);
        failures +=
            report(
                write,
                answer.equals("OK") ? -1 : parseMismatch(answer),
                "source region (payload + guards)");
        failures +=
            report(
                null,
                Pattern.verify(local.segment(), 0, regionBytes, writeSeed, 0),
                "requester region untouched by WRITE");
        collect(writeLatency, placements, write.results());
        movedBytes += read.bytes() + write.bytes();
        movedSeconds += read.seconds() + write.seconds();
      }
      printLatency(readLatency, writeLatency);
      out.printf(
          Locale.ROOT,
          "moved %.2f GB in %.2f s of transfer time: %.2f GB/s over TCP loopback%n",
          movedBytes / 1e9,
          movedSeconds,
          movedBytes / 1e9 / movedSeconds);
      if (serve > 0) {
        printUrls(
            "requester " + requester.localSegment().endpoint(), requester.observabilityUrls());
        printUrls("source " + source.endpoint(), parseUrls(source.call("URLS")));
        out.printf(
            "serving both engines' dashboards and metrics for %d s (Ctrl-C to stop)%n", serve);
        out.flush();
        Thread.sleep(Duration.ofSeconds(serve));
      }
      if (failures == 0) {
        logs.passed();
        out.printf(
            "RESULT: PASS - %d tasks, every payload and guard byte verified on both sides%n",
            placements.size() * ROUNDS * 2);
        return 0;
      }
      out.printf("RESULT: FAIL - %d problem(s); source log: %s%n", failures, source.log());
      return 1;
    }
  }

  private record Phase(
      String label, List<TaskResult> results, long bytes, double seconds, int failed) {}

  private Phase phase(
      TransferEngine engine,
      Op op,
      String label,
      List<Placement> placements,
      RegisteredMemory local,
      RemoteSegment peer,
      long remoteRegion) {
    List<TransferRequest> requests = new ArrayList<>(placements.size());
    long total = 0;
    for (Placement p : placements) {
      requests.add(
          op == Op.READ
              ? TransferRequest.read(
                  local, p.localOffset(), peer, remoteRegion, p.remoteOffset(), p.length())
              : TransferRequest.write(
                  local, p.localOffset(), peer, remoteRegion, p.remoteOffset(), p.length()));
      total += p.length();
    }
    Progress progress = new Progress(label, requests.size(), "tasks");
    long start = System.nanoTime();
    List<TaskResult> results =
        TaskRunner.run(engine, requests, TASKS_PER_BATCH, BATCHES_IN_FLIGHT, progress);
    double seconds = (System.nanoTime() - start) / 1e9;
    progress.done();
    int failed = 0;
    for (TaskResult r : results) {
      if (!r.completed()) {
        if (failed < 5) {
          out.printf(
              "  task %d (%s) %s: %s %s%n",
              r.index(),
              placements.get(r.index()).sizeClass(),
              r.state(),
              r.errorKind(),
              r.detail());
        }
        failed++;
      }
    }
    out.printf(
        Locale.ROOT,
        "%-18s %4d tasks %8.1f MiB in %6.3f s = %5.2f GB/s%n",
        label,
        results.size(),
        total / 1048576.0,
        seconds,
        total / 1e9 / seconds);
    return new Phase(label, results, total, seconds, failed);
  }

  private int report(Phase phase, long badIndex, String what) {
    if (badIndex < 0) {
      out.printf("  verified %s%n", what);
      return 0;
    }
    out.printf("  MISMATCH in %s at byte %d%n", what, badIndex);
    return 1;
  }

  private static long parseMismatch(String answer) {
    return answer.startsWith("MISMATCH ") ? Long.parseLong(answer.substring(9).trim()) : 0;
  }

  private static List<Span> spans(List<Placement> placements, boolean localSide, long seed) {
    List<Span> spans = new ArrayList<>(placements.size());
    for (Placement p : placements) {
      spans.add(
          localSide
              ? new Span(p.localOffset(), p.length(), seed, p.remoteOffset())
              : new Span(p.remoteOffset(), p.length(), seed, p.localOffset()));
    }
    return spans;
  }

  private static void collect(
      Map<String, List<Long>> latency, List<Placement> placements, List<TaskResult> results) {
    for (TaskResult r : results) {
      if (r.completed()) {
        latency
            .computeIfAbsent(placements.get(r.index()).sizeClass(), k -> new ArrayList<>())
            .add(r.elapsedNanos());
      }
    }
  }

  private void printLatency(Map<String, List<Long>> read, Map<String, List<Long>> write) {
    out.println("per-size task latency (admission to confirmation, ms):");
    out.printf("  %-6s %9s %9s   %9s %9s%n", "size", "READ p50", "p99", "WRITE p50", "p99");
    for (String c : CLASSES) {
      out.printf(
          Locale.ROOT,
          "  %-6s %9.3f %9.3f   %9.3f %9.3f%n",
          c,
          pct(read.get(c), 50),
          pct(read.get(c), 99),
          pct(write.get(c), 50),
          pct(write.get(c), 99));
    }
  }

  static double pct(List<Long> values, double p) {
    if (values == null || values.isEmpty()) {
      return Double.NaN;
    }
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i))) / 1e6;
  }

  /** Lays tasks out one after another on each side, with an unaligned guard gap before each. */
  static List<Placement> layout(Random random) {
    List<Placement> out = new ArrayList<>();
    long localAt = 0;
    long remoteAt = 0;
    for (int c = 0; c < CLASSES.length; c++) {
      for (int i = 0; i < COUNTS[c]; i++) {
        long length = SIZES[c] + (i % 2 == 0 ? 0 : random.nextInt(1023) - 511);
        localAt += 1 + random.nextInt(4096);
        remoteAt += 1 + random.nextInt(4096);
        out.add(new Placement(CLASSES[c], length, localAt, remoteAt));
        localAt += length;
        remoteAt += length;
      }
    }
    return out;
  }
}
