package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench latency}: the control path's cost. A source engine process ({@code
 * shm.enabled}, so the same source serves both transports) and a requester engine (this process),
 * both with the default configuration otherwise. One 1-task transfer at a time, READ and WRITE, 4
 * KiB and 64 KiB, forced over TCP and over SHM, in two patterns:
 *
 * <ul>
 *   <li><b>reused</b>: {@code submit} + {@code await} + {@code reset} on one batch of capacity 1,
 *       kept for the whole figure, all timed;
 *   <li><b>fresh</b>: {@code allocateBatch(1)} + {@code submit} + {@code await} + {@code free}, all
 *       timed.
 * </ul>
 *
 * <p>The two patterns of a figure run in one pass, taking turns every 100 transfers, so that their
 * ratio is not moved by the host's pace changing between them.
 *
 * <p>Each transfer goes to a slot of its own, never reused within a figure, so every transfer's
 * bytes are checked afterwards: after READs the requester's slots hold the source's pattern and the
 * bytes after them are untouched; after WRITEs the source (asked over its harness, refilled before
 * each figure) holds each slot's written pattern and its own bytes everywhere else. Warm-up
 * transfers (untimed) use slots after the timed ones and are checked too.
 *
 * <p>Ceilings in the same run, round trips: {@code sockperf ping-pong} over TCP at the same sizes
 * (64 KiB is measured at sockperf's largest message, 65507 B), and {@code ucx_perftest tag_lat}
 * over UCX {@code tcp} and {@code posix} shared memory. Percentiles in µs; ratios are ours over the
 * ceiling (lower is better).
 */
public final class LatencyBench {
  /**
   * Each side's region: both patterns' slots of the 64 KiB figures (2 x 11,000 x 64 KiB) and the
   * guard slot after them.
   */
  private static final long REGION_BYTES = 3L << 29;

  private static final long[] SIZES = {4L << 10, 64L << 10};
  private static final String[] NAMES = {"4KiB", "64KiB"};
  private static final Duration AWAIT = Duration.ofSeconds(30);

  /** The two patterns of each figure: reused (kept batch) first, then fresh. */
  private static final boolean[] PATTERNS = {false, true};

  /** Transfers of one pattern before the other takes its turn. */
  private static final int TURN = 100;

  private PrintStream human = System.out;
  private int timed = 10_000;
  private int warmup = 1_000;

  /** Untimed transfers of each pattern before the first figure, for the JIT. */
  private int jitWarmup = 5_000;

  private int ceilingSeconds = 3;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    if (args.contains("--quick")) {
      timed = 2_000;
      warmup = 300;
      jitWarmup = 1_000;
      ceilingSeconds = 1;
    }
    if (json) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    int failures = 0;

    for (int s = 0; s < SIZES.length; s++) {
      if (LatencyCeilings.installed("sockperf")) {
        Map<String, Double> rtt = LatencyCeilings.sockperf((int) SIZES[s], ceilingSeconds);
        ceilings.put("sockperf_rtt_" + NAMES[s] + "_p50_us", rtt.get("p50"));
        ceilings.put("sockperf_rtt_" + NAMES[s] + "_p99_us", rtt.get("p99"));
        ceilings.put("sockperf_rtt_" + NAMES[s] + "_p99.9_us", rtt.get("p99.9"));
        human.printf(
            Locale.ROOT,
            "  sockperf ping-pong %-6s round trip p50 %8.2f us, p99 %8.2f us%n",
            NAMES[s],
            rtt.get("p50"),
            rtt.get("p99"));
      } else {
        human.println("  sockperf is not installed: its ceiling is missing");
      }
      if (LatencyCeilings.installed("ucx_perftest")) {
        int n = timed * 10;
        double tcp = LatencyCeilings.ucxTagLatency("tcp", (int) SIZES[s], n);
        double shm = LatencyCeilings.ucxTagLatency("posix,self", (int) SIZES[s], n);
        ceilings.put("ucx_tcp_rtt_" + NAMES[s] + "_p50_us", tcp);
        ceilings.put("ucx_shm_rtt_" + NAMES[s] + "_p50_us", shm);
        human.printf(
            Locale.ROOT,
            "  ucx_perftest tag_lat %-6s round trip p50: tcp %8.2f us, posix shm %8.2f us%n",
            NAMES[s],
            tcp,
            shm);
      } else {
        human.println("  ucx_perftest is not installed: its ceilings are missing");
      }
    }

    try (ChildLogs logs = ChildLogs.create("bench-latency");
        EngineProcess source =
            EngineProcess.start(
                "bench-latency-source",
                logs.dir(),
                Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"));
        TransferEngine requester =
            TransferEngine.start(EngineConfig.fromEnv().withName("bench-latency-requester"))) {
      human.printf(
          "bench latency: source %s (pid %d), requester pid %d, %d timed transfers per figure after %d untimed%n",
          source.endpoint(), source.pid(), ProcessHandle.current().pid(), timed, warmup);
      long remote = Long.parseLong(source.call("ALLOC " + REGION_BYTES + " READ_WRITE"));
      long sourceSeed = 0x1a7e5L;
      RegisteredMemory local = requester.allocate(REGION_BYTES, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      if (!peer.sharedReachable(remote)) {
        human.println(
            "RESULT: ENVIRONMENT - the source's memory is not reachable through SHM: "
                + peer.unreachableBecause(Transport.SHM, remote));
        return ExitCodes.ENVIRONMENT;
      }
      // JIT warm-up, untimed: every pattern's path once, so the first figure of the run (TCP READ,
      // reused) is not measured while C2 compiles the submit, lane and receipt paths beside it.
      // The figures re-fill both sides before they run, so these transfers leave nothing behind.
      for (Transport transport : List.of(Transport.TCP, Transport.SHM)) {
        for (Op op : Op.values()) {
          for (boolean fresh : PATTERNS) {
            int[] failed =
                measure(
                    requester,
                    op,
                    transport,
                    local,
                    peer,
                    remote,
                    SIZES[0],
                    new boolean[] {fresh},
                    new long[][] {new long[jitWarmup]});
            failures += failed[0];
          }
        }
      }
      long seed = 0x100;
      for (Transport transport : List.of(Transport.TCP, Transport.SHM)) {
        for (Op op : Op.values()) {
          for (int s = 0; s < SIZES.length; s++) {
            // Both patterns of a size in one pass, taken in turn (see measure), so that a change
            // in the host's pace between the two does not pass for a difference between them.
            seed++;
            String base =
                transport.name().toLowerCase(Locale.ROOT)
                    + "_"
                    + op.name().toLowerCase(Locale.ROOT)
                    + "_"
                    + NAMES[s];
            long used = PATTERNS.length * (timed + warmup) * SIZES[s];
            source.call("FILL " + remote + " " + sourceSeed);
            Pattern.fill(local.segment(), 0, op == Op.READ ? used + SIZES[s] : used, seed, 0);
            long[][] nanos = new long[PATTERNS.length][timed];
            Jit.settle();
            int[] failed =
                measure(requester, op, transport, local, peer, remote, SIZES[s], PATTERNS, nanos);
            failures += verify(op, local, source, remote, used, SIZES[s], sourceSeed, seed, base);
            for (int p = 0; p < PATTERNS.length; p++) {
              boolean fresh = PATTERNS[p];
              String suffix = fresh ? "_fresh_batch" : "";
              String name = base + suffix;
              failures += failed[p];
              Arrays.sort(nanos[p]);
              double p50 = percentile(nanos[p], 50),
                  p99 = percentile(nanos[p], 99),
                  p999 = percentile(nanos[p], 99.9);
              figures.put(name + "_p50_us", p50);
              figures.put(name + "_p99_us", p99);
              figures.put(name + "_p99.9_us", p999);
              human.printf(
                  Locale.ROOT,
                  "  %-28s p50 %9.2f us  p99 %9.2f us  p99.9 %9.2f us  (%d transfers%s)%n",
                  name,
                  p50,
                  p99,
                  p999,
                  timed,
                  failed[p] > 0 ? ", " + failed[p] + " FAILED" : "");
              if (transport == Transport.TCP
                  && ceilings.containsKey("sockperf_rtt_" + NAMES[s] + "_p50_us")) {
                ratios.put(
                    name + "_p50_vs_sockperf",
                    p50 / ceilings.get("sockperf_rtt_" + NAMES[s] + "_p50_us"));
                ratios.put(
                    name + "_p99_vs_sockperf",
                    p99 / ceilings.get("sockperf_rtt_" + NAMES[s] + "_p99_us"));
              }
              String ucx =
                  "ucx_"
                      + (transport == Transport.TCP ? "tcp" : "shm")
                      + "_rtt_"
                      + NAMES[s]
                      + "_p50_us";
              if (ceilings.containsKey(ucx)) {
                ratios.put(name + "_p50_vs_ucx", p50 / ceilings.get(ucx));
              }
              if (fresh) {
                ratios.put(base + "_fresh_vs_reused_p50", p50 / figures.get(base + "_p50_us"));
              }
            }
          }
        }
      }
      long overShm = requester.counters().tasksDispatched(Transport.SHM);
      long overTcp = requester.counters().tasksDispatched(Transport.TCP);
      // Per transport: 2 directions x 2 sizes x 2 patterns of figures, and the JIT warm-up's
      // 2 directions x 2 patterns (each with its own untimed lead-in).
      long expected = 4L * 2 * (timed + warmup) + 4L * (warmup + jitWarmup);
      figures.put("tasks_over_tcp", (double) overTcp);
      figures.put("tasks_over_shm", (double) overShm);
      if (overShm != expected || overTcp != expected) {
        human.println(
            "  tasks went over the wrong transport: "
                + overTcp
                + " over TCP and "
                + overShm
                + " over SHM, expected "
                + expected
                + " each");
        failures++;
      }
      BenchReport.settleLogs(human, logs, source, failures);
    }
    BenchReport.print(human, json, figures, ceilings, ratios);
    if (failures > 0) {
      human.println("RESULT: FAIL - " + failures + " failed transfer(s) or wrong byte(s)");
      return ExitCodes.FAILED;
    }
    List<String> missing =
        java.util.stream.Stream.of("sockperf", "ucx_perftest")
            .filter(tool -> !LatencyCeilings.installed(tool))
            .toList();
    if (!missing.isEmpty()) {
      human.println(
          "RESULT: INCOMPLETE - every transfer's bytes verified, but "
              + String.join(" and ", missing)
              + " not installed: those ceilings and ratios are missing");
      return ExitCodes.ENVIRONMENT;
    }
    human.println("RESULT: PASS - every transfer's bytes verified");
    return ExitCodes.PASS;
  }

  /**
   * Runs the transfers of one figure for each pattern in {@code fresh} ({@code true}: a fresh batch
   * per transfer; {@code false}: one kept batch, reset after each). The patterns take turns in
   * blocks of {@link #TURN} transfers, {@link #warmup} untimed ones first, then {@code
   * nanos[p].length} timed ones. Pattern {@code p} owns the slots from {@code p * (warmup +
   * timed)}: its timed transfers go to the first of them in order, its untimed ones after those.
   *
   * @return for each pattern, how many of its transfers did not complete
   */
  private int[] measure(
      TransferEngine engine,
      Op op,
      Transport transport,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      boolean[] fresh,
      long[][] nanos) {
    int[] failed = new int[fresh.length];
    Batch[] kept = new Batch[fresh.length];
    int timedPerPattern = nanos[0].length;
    int total = warmup + timedPerPattern;
    for (int from = 0; from < total; from += TURN) {
      for (int p = 0; p < fresh.length; p++) {
        for (int k = from; k < Math.min(total, from + TURN); k++) {
          int slot = p * total + (k < warmup ? timedPerPattern + k : k - warmup);
          long offset = slot * size;
          TransferRequest request =
              (op == Op.READ
                      ? TransferRequest.read(local, offset, peer, remote, offset, size)
                      : TransferRequest.write(local, offset, peer, remote, offset, size))
                  .withTransport(transport);
          List<TransferRequest> one = List.of(request);
          boolean done;
          long begun;
          long ended;
          if (fresh[p]) {
            begun = System.nanoTime();
            Batch batch = engine.allocateBatch(1);
            batch.submit(one);
            BatchStatus status = batch.await(AWAIT);
            batch.free();
            ended = System.nanoTime();
            done = status.allCompleted();
          } else {
            if (kept[p] == null) {
              kept[p] = engine.allocateBatch(1);
            }
            begun = System.nanoTime();
            kept[p].submit(one);
            BatchStatus status = kept[p].await(AWAIT);
            kept[p].reset();
            ended = System.nanoTime();
            done = status.allCompleted();
          }
          if (!done) {
            failed[p]++;
          }
          if (k >= warmup) {
            nanos[p][k - warmup] = ended - begun;
          }
        }
      }
    }
    for (Batch batch : kept) {
      if (batch != null) {
        batch.free();
      }
    }
    return failed;
  }

  /**
   * The byte check of one figure's slots, on the side the transfers wrote; 1 if a byte is wrong.
   */
  private int verify(
      Op op,
      RegisteredMemory local,
      EngineProcess source,
      long remote,
      long used,
      long size,
      long sourceSeed,
      long writeSeed,
      String name)
      throws Exception {
    if (op == Op.READ) {
      // [0, used) holds the source's bytes; the slot after the last one still holds the guard
      // pattern.
      long bad =
          RegionCheck.check(
              local.segment().asSlice(0, used + size),
              List.of(new Span(0, used, sourceSeed, 0)),
              writeSeed);
      if (bad >= 0) {
        human.println("  MISMATCH in " + name + ": requester byte " + bad);
        return 1;
      }
      return 0;
    }
    String answer =
        source.ask(
            "VERIFY " + remote + " " + sourceSeed + " 1",
            List.of("0 " + used + " " + writeSeed + " 0"));
    if (!answer.equals("OK")) {
      human.println("  MISMATCH in " + name + ": source " + answer);
      return 1;
    }
    return 0;
  }

  /** The {@code p}th percentile of sorted nanoseconds, in µs (nearest rank). */
  static double percentile(long[] sorted, double p) {
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))] / 1000.0;
  }
}
