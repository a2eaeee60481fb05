package io.orbite.qualification.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.config.TcpConfig;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.ChildLogs;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench heal [--json] [--trials N]}: how fast the requester heals. Two processes,
 * the requester in this JVM and a source engine process; READs of 64 KiB over TCP, every payload
 * and guard byte verified ({@link HealReads}). Each figure is the median of {@code N} trials
 * (default {@value #DEFAULT_TRIALS}) in this run, with its min and max ({@link HealTrials} says
 * what each measures):
 *
 * <ul>
 *   <li>{@code all_lanes_cut_resume_ms}: both lanes' sockets cut under a running READ loop;
 *   <li>{@code lane_cut_stall_ms}: one of two lanes' sockets cut under it;
 *   <li>{@code sigstop_detect_ms} and {@code sigcont_restore_ms}: the idle source stopped, then
 *       continued;
 *   <li>{@code restart_detect_ms}: the idle source killed and started again at its port.
 * </ul>
 *
 * Beside them, the goals, each met or not by the median; the run's exit status says only
 * whether every byte was right and every heal happened (a missed goal is a figure, not a failure).
 */
public final class HealBench {
  static final int DEFAULT_TRIALS = 5;

  /** The goal of {@code lane_cut_stall_ms}. */
  static final double LANE_CUT_STALL_GOAL_MS = 50;

  /** The goal of {@code all_lanes_cut_resume_ms}, before the first backoff step is added. */
  static final double ALL_LANES_CUT_RESUME_GOAL_MS = 100;

  /** The figures, in the order they are printed. */
  static final List<String> FIGURES =
      List.of(
          "lane_cut_stall_ms",
          "all_lanes_cut_resume_ms",
          "restart_detect_ms",
          "sigstop_detect_ms",
          "sigcont_restore_ms",
          "lane_cut_gap_before_ms",
          "lane_cut_outage_ms");

  public int run(List<String> args) throws Exception {
    boolean json = false;
    int trials = DEFAULT_TRIALS;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (a.equals("--json")) {
        json = true;
      } else if (a.equals("--trials") && i + 1 < args.size()) {
        trials = parseTrials(args.get(++i));
        if (trials < 0) {
          return ExitCodes.USAGE;
        }
      } else {
        System.err.println(
            "bench heal: unknown option "
                + a
                + " (usage: ./orbite bench heal [--json] [--trials N])");
        return ExitCodes.USAGE;
      }
    }
    PrintStream human = json ? System.err : System.out;
    long began = System.nanoTime();
    try (ChildLogs logs = ChildLogs.create("bench-heal");
        HealTrials run = HealTrials.start(human, logs.dir())) {
      TcpConfig tcp = run.tcp();
      human.printf(
          Locale.ROOT,
          "bench heal: source %s (pid %d), requester pid %d; tcp.lanes %d, keepalive %d ms,"
              + " liveness %d ms, reconnect backoff %d..%d ms; %d trials per figure%n",
          run.source().endpoint(),
          run.source().pid(),
          ProcessHandle.current().pid(),
          tcp.lanes(),
          tcp.keepaliveIntervalMillis(),
          tcp.livenessTimeoutMillis(),
          tcp.reconnectInitialBackoffMillis(),
          tcp.reconnectMaxBackoffMillis(),
          trials);
      run.allLanesCut(trials);
      run.laneCut(trials);
      run.sigstop(trials);
      run.restart(trials);
      List<String> failures = run.failures();
      report(human, json, run, tcp, trials, (System.nanoTime() - began) / 1e9);
      if (failures.isEmpty()) {
        logs.passed();
        human.printf(
            Locale.ROOT,
            "RESULT: PASS - %d READs verified (payload and guard bytes), %d failed after drain"
                + " (no byte claimed); every heal happened%n",
            run.readsVerified(),
            run.readsFailed());
        return ExitCodes.PASS;
      }
      failures.forEach(f -> human.println("  FAILURE: " + f));
      human.println("source log kept: " + run.source().log());
      human.println("RESULT: FAIL - " + failures.size() + " failure(s), above");
      return ExitCodes.FAILED;
    }
  }

  private static int parseTrials(String v) {
    try {
      int n = Integer.parseInt(v);
      if (n >= 1 && n <= 50) {
        return n;
      }
    } catch (NumberFormatException e) {
      // Said below.
    }
    System.err.println("bench heal: --trials takes a whole number from 1 to 50, got " + v);
    return -1;
  }

  /** The table on {@code human} and, with {@code json}, one JSON object on stdout. */
  private static void report(
      PrintStream human, boolean json, HealTrials run, TcpConfig tcp, int trials, double seconds)
      throws Exception {
    Map<String, Double> figures = new LinkedHashMap<>();
    human.println("figures (median of the trials; min .. max):");
    for (String name : FIGURES) {
      List<Double> s = run.samples().get(name);
      if (s == null || s.isEmpty()) {
        human.printf(Locale.ROOT, "  %-28s %10s%n", name, "(none)");
        continue;
      }
      double median = median(s);
      double min = s.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
      double max = s.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
      figures.put(name, median);
      figures.put(name + "_min", min);
      figures.put(name + "_max", max);
      human.printf(
          Locale.ROOT,
          "  %-28s %10.1f   (%.1f .. %.1f, %d trials)%n",
          name,
          median,
          min,
          max,
          s.size());
    }
    figures.put("trials", (double) trials);
    figures.put("reads_verified", (double) run.readsVerified());
    figures.put("bytes_verified", (double) run.readsVerified() * HealReads.TASK);
    figures.put("reads_failed", (double) run.readsFailed());
    figures.put("seconds", seconds);

    Map<String, Double> goals = new LinkedHashMap<>();
    goals.put("lane_cut_stall_ms", LANE_CUT_STALL_GOAL_MS);
    goals.put(
        "all_lanes_cut_resume_ms",
        ALL_LANES_CUT_RESUME_GOAL_MS + tcp.reconnectInitialBackoffMillis());
    goals.put("restart_detect_ms", (double) tcp.livenessTimeoutMillis());
    String[] why = {
      "",
      " (100 + tcp.reconnectInitialBackoffMillis)",
      " (tcp.livenessTimeoutMillis, the configured bound)"
    };
    human.println("goals (the median against the goal):");
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode goalsJson = mapper.createObjectNode();
    int g = 0;
    int met = 0;
    for (var e : goals.entrySet()) {
      Double median = figures.get(e.getKey());
      boolean ok = median != null && median <= e.getValue();
      met += ok ? 1 : 0;
      human.printf(
          Locale.ROOT,
          "  %-28s %10s <= %-6.0f %s%s%n",
          e.getKey(),
          median == null ? "(none)" : String.format(Locale.ROOT, "%.1f", median),
          e.getValue(),
          ok ? "PASS" : "FAIL",
          why[g++]);
      ObjectNode o = goalsJson.putObject(e.getKey());
      o.put("goal_max", BenchReport.round(e.getValue()));
      if (median != null) {
        o.put("median", BenchReport.round(median));
      }
      o.put("met", ok);
    }
    human.printf(
        Locale.ROOT,
        "goals met: %d of %d; %d READs verified, %d failed after drain; %.0f s%n",
        met,
        goals.size(),
        run.readsVerified(),
        run.readsFailed(),
        seconds);
    if (!json) {
      return;
    }
    ObjectNode root = mapper.createObjectNode();
    ObjectNode f = root.putObject("figures");
    figures.forEach((k, v) -> f.put(k, BenchReport.round(v)));
    root.putObject("ceilings");
    root.putObject("ratios");
    ObjectNode c = root.putObject("config");
    c.put("tcp.lanes", tcp.lanes());
    c.put("tcp.keepaliveIntervalMillis", tcp.keepaliveIntervalMillis());
    c.put("tcp.livenessTimeoutMillis", tcp.livenessTimeoutMillis());
    c.put("tcp.reconnectInitialBackoffMillis", tcp.reconnectInitialBackoffMillis());
    c.put("tcp.reconnectMaxBackoffMillis", tcp.reconnectMaxBackoffMillis());
    c.put("tcp.retryReadOnOtherLane", tcp.retryReadOnOtherLane());
    c.put("tcp.waitWhileReconnecting", tcp.waitWhileReconnecting());
    c.put("read_bytes", HealReads.TASK);
    c.put("reads_per_batch", HealReads.PER_BATCH);
    root.set("goals", goalsJson);
    root.put("passed", run.failures().isEmpty());
    System.out.println(mapper.writeValueAsString(root));
  }

  static double median(List<Double> values) {
    List<Double> s = new ArrayList<>(values);
    s.sort(null);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }
}
