package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.engine.security.TlsFiles;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineMain;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench tcp}: a source engine process and a requester engine (this process) on
 * loopback. READ and WRITE throughput at 64 KiB, 1 MiB, 4 MiB and 64 MiB with many tasks in flight;
 * 4 KiB tasks per second in batches of 1024 (over the whole region, and over an 8 MiB working set
 * that stays in cache), and adjacent 4 KiB tasks with request merging on and off ({@link
 * AdjacentTasks}); heap bytes allocated per MiB moved on both sides; and, in the same run,
 * interleaved, the iperf3 one-stream 1 MiB-write loopback ceiling. Every measured run's bytes are
 * verified afterwards. {@code --json} prints one JSON object.
 *
 * <p>{@code --tls} adds, in the same run, READ and WRITE at 4 MiB and 64 MiB between a second pair
 * of engines whose every connection runs over mutual TLS 1.3 (certificates from a throwaway
 * authority, {@link TlsFiles}): {@code tls_<op>_<size>_GBps}, and its ratio to the plain figure of
 * the same size ({@code tls_<op>_<size>_vs_plain}).
 */
public final class TcpBench {
  private static final long REGION_BYTES = 1L << 30;
  private static final long[] SIZES = {64L << 10, 1L << 20, 4L << 20, 64L << 20};
  private static final String[] NAMES = {"64KiB", "1MiB", "4MiB", "64MiB"};
  private static final long IN_FLIGHT_BYTES = 256L << 20;

  /**
   * The working set of {@code tasks_4KiB_hot_per_s}: 8 MiB on each side, which stays in cache,
   * where {@code tasks_4KiB_per_s} cycles through the whole 1 GiB region.
   */
  private static final long HOT_WORKING_SET_BYTES = 8L << 20;

  /** The data path: the TCP lane threads of either engine. */
  private static final String LANE_THREADS = "orbite-tcp-";

  private PrintStream human = System.out;
  private long workingSetBytes = REGION_BYTES;
  private double secondsPerFigure = 3.0;
  private int iperfSeconds = 5;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    boolean tls = args.contains("--tls");
    int sizesAt = args.indexOf("--sizes");
    List<String> onlySizes =
        sizesAt >= 0 && sizesAt + 1 < args.size()
            ? List.of(args.get(sizesAt + 1).split(","))
            : null;
    boolean skipSmall = onlySizes != null && !onlySizes.contains("4KiB");
    int wsAt = args.indexOf("--working-set");
    if (wsAt >= 0 && wsAt + 1 < args.size()) {
      workingSetBytes = Math.min(REGION_BYTES, Long.parseLong(args.get(wsAt + 1)));
    }
    if (args.contains("--quick")) {
      secondsPerFigure = 1.0;
      iperfSeconds = 2;
    }
    if (json) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    List<Double> iperf = new ArrayList<>();
    List<Double> iperfCpu = new ArrayList<>();
    boolean haveIperf = Iperf3.installed();
    if (!haveIperf) {
      human.println(
          "warning: iperf3 is not installed; the ceiling and ratios are missing (./orbite bench installs it)");
    }
    int failures = 0;
    try (ChildLogs logs = ChildLogs.create("bench-tcp");
        EngineProcess source = EngineProcess.start("bench-source", logs.dir(), Map.of());
        TransferEngine requester =
            TransferEngine.start(EngineConfig.fromEnv().withName("bench-requester"))) {
      human.printf(
          "bench tcp: source %s (pid %d), requester pid %d, %d lanes, %.0f s per figure%n",
          source.endpoint(),
          source.pid(),
          ProcessHandle.current().pid(),
          requester.config().tcp().lanes(),
          secondsPerFigure);
      BenchReport.printUrls(human, requester);
      long remote = Long.parseLong(source.call("ALLOC " + REGION_BYTES + " READ_WRITE"));
      long sourceSeed = 0x5eed5L;
      source.call("FILL " + remote + " " + sourceSeed);
      RegisteredMemory local = requester.allocate(REGION_BYTES, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      if (haveIperf) {
        addIperf(iperf, iperfCpu);
      }
      // Every WRITE run writes the same pattern at the same offsets from 0, so the source holds
      // it over the widest range any WRITE run touched so far, and the source pattern beyond.
      long writtenUpTo = 0;
      for (Op op : Op.values()) {
        long writeSeed = 0x77L;
        if (op == Op.WRITE) {
          Pattern.fill(local.segment(), 0, REGION_BYTES, writeSeed, 0);
        }
        for (int s = 0; s < SIZES.length; s++) {
          if (onlySizes != null && !onlySizes.contains(NAMES[s])) {
            continue;
          }
          String name = op.name().toLowerCase(Locale.ROOT) + "_" + NAMES[s];
          boolean measureAllocation = SIZES[s] == (4L << 20);
          long srcAllocBefore = measureAllocation ? Long.parseLong(source.call("ALLOCATED")) : 0;
          long srcLaneAllocBefore =
              measureAllocation ? Long.parseLong(source.call("ALLOCATED " + LANE_THREADS)) : 0;
          long cpuBefore = cpuNanos(source.pid());
          Run r = measure(requester, op, local, peer, remote, SIZES[s], name, measureAllocation);
          figures.put(
              "cpu_s_per_GB_" + name, (cpuNanos(source.pid()) - cpuBefore) / 1e9 / (r.bytes / 1e9));
          failures += r.failed;
          figures.put(name + "_GBps", r.gbps());
          if (measureAllocation) {
            long srcAlloc = Long.parseLong(source.call("ALLOCATED")) - srcAllocBefore;
            long srcLaneAlloc =
                Long.parseLong(source.call("ALLOCATED " + LANE_THREADS)) - srcLaneAllocBefore;
            double mib = r.bytes / 1048576.0;
            figures.put(
                "alloc_requester_lanes_" + name + "_bytes_per_MiB", r.laneAllocatedBytes / mib);
            figures.put("alloc_source_lanes_" + name + "_bytes_per_MiB", srcLaneAlloc / mib);
            figures.put(
                "alloc_requester_process_" + name + "_bytes_per_MiB", r.allocatedBytes / mib);
            figures.put("alloc_source_process_" + name + "_bytes_per_MiB", srcAlloc / mib);
          }
          if (op == Op.WRITE) {
            writtenUpTo = Math.max(writtenUpTo, r.touchedBytes);
          }
          failures +=
              BenchReport.verify(
                  human,
                  op,
                  local,
                  source,
                  remote,
                  op == Op.WRITE ? writtenUpTo : r.touchedBytes,
                  sourceSeed,
                  writeSeed);
        }
        if (haveIperf) {
          addIperf(iperf, iperfCpu);
        }
        if (op == Op.WRITE) {
          // Restore the source pattern for the 4 KiB READ run below.
          source.call("FILL " + remote + " " + sourceSeed);
        }
      }
      if (!skipSmall) {
        BenchLoop.Run small =
            BenchLoop.taskRate(
                human, requester, local, peer, remote, REGION_BYTES, secondsPerFigure);
        failures += small.failed();
        failures +=
            BenchReport.verify(
                human, Op.READ, local, source, remote, small.touchedBytes(), sourceSeed, 0);
        figures.put("tasks_4KiB_per_s", small.tasks() / small.seconds());
        figures.put("alloc_requester_process_tasks_4KiB_bytes_per_task", small.allocatedPerTask());
        figures.put("tasks_4KiB_jit_ms", (double) small.jitMillis());
        figures.put("tasks_4KiB_warmup_s", small.warmupSeconds());
        // The same loop over a working set that stays in cache: what the engine's own per-task
        // cost allows, without the cost of touching a cold 4 KiB page on either side.
        BenchLoop.Run hot =
            BenchLoop.taskRate(
                human, requester, local, peer, remote, HOT_WORKING_SET_BYTES, secondsPerFigure);
        failures += hot.failed();
        failures +=
            BenchReport.verify(
                human, Op.READ, local, source, remote, hot.touchedBytes(), sourceSeed, 0);
        figures.put("tasks_4KiB_hot_per_s", hot.tasks() / hot.seconds());
        // The cold loop again with the slots in swapped pairs: the same pages, but no task follows
        // the one before it, so each costs a wire request of its own (none merges).
        BenchLoop.Run apart =
            BenchLoop.taskRate(
                human, requester, local, peer, remote, REGION_BYTES, true, secondsPerFigure);
        failures += apart.failed();
        failures +=
            BenchReport.verify(
                human, Op.READ, local, source, remote, apart.touchedBytes(), sourceSeed, 0);
        figures.put("tasks_4KiB_unmerged_per_s", apart.tasks() / apart.seconds());
        ratios.put(
            "tasks_4KiB_cold_vs_hot",
            (small.tasks() / small.seconds()) / (hot.tasks() / hot.seconds()));
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
                Transport.TCP,
                secondsPerFigure,
                figures,
                ratios);
      }
      if (haveIperf && !skipSmall) {
        addIperf(iperf, iperfCpu);
      }
      if (failures == 0) {
        logs.passed();
      } else {
        human.println("source log kept: " + source.log());
      }
    }
    if (tls) {
      failures += measureTls(onlySizes, figures, ceilings, ratios);
    }
    if (!iperf.isEmpty()) {
      List<Double> sorted = new ArrayList<>(iperf);
      sorted.sort(Double::compare);
      int mid = sorted.size() / 2;
      double ceiling =
          sorted.size() % 2 == 1 ? sorted.get(mid) : (sorted.get(mid - 1) + sorted.get(mid)) / 2;
      ceilings.put("iperf3_1stream_GBps", ceiling);
      List<Double> cpu = new ArrayList<>(iperfCpu);
      cpu.sort(Double::compare);
      ceilings.put("iperf3_cpu_s_per_GB", cpu.get(cpu.size() / 2));
      for (int i = 0; i < iperf.size(); i++) {
        ceilings.put("iperf3_1stream_run" + (i + 1) + "_GBps", iperf.get(i));
      }
      for (Op op : Op.values()) {
        for (String n : NAMES) {
          String name = op.name().toLowerCase(Locale.ROOT) + "_" + n;
          if (figures.containsKey(name + "_GBps")) {
            ratios.put(name + "_vs_iperf3", figures.get(name + "_GBps") / ceiling);
          }
          if (figures.containsKey("tls_" + name + "_GBps")) {
            ratios.put(
                "tls_" + name + "_vs_iperf3", figures.get("tls_" + name + "_GBps") / ceiling);
          }
        }
      }
    }
    BenchReport.print(human, json, figures, ceilings, ratios);
    if (failures > 0) {
      human.println("RESULT: FAIL - " + failures + " failed task(s) or wrong byte(s)");
      return ExitCodes.FAILED;
    }
    if (!haveIperf) {
      human.println(
          "RESULT: INCOMPLETE - every byte verified, but iperf3 is not installed: no ceiling, no ratio");
      return ExitCodes.ENVIRONMENT;
    }
    return ExitCodes.PASS;
  }

  /**
   * The TLS figures: a source process and a requester whose every connection runs over mutual TLS,
   * READ and WRITE at 4 MiB and 64 MiB (those of {@code onlySizes}, when given), each run's bytes
   * verified as the plain runs' are.
   *
   * @return failed tasks and wrong bytes
   */
  private int measureTls(
      List<String> onlySizes,
      Map<String, Double> figures,
      Map<String, Double> ceilings,
      Map<String, Double> ratios)
      throws Exception {
    int failures = 0;
    try (ChildLogs logs = ChildLogs.create("bench-tcp-tls")) {
      TlsFiles ca = TlsFiles.authority(logs.dir().resolve("tls"), 2);
      Path sourceStore = ca.issue("bench-source-tls", 0, 2);
      Path requesterStore = ca.issue("bench-requester-tls", 0, 2);
      SecurityConfig requesterTls =
          SecurityConfig.defaults()
              .withTls(
                  requesterStore.toString(),
                  ca.trustStore().toString(),
                  ca.passwordFile().toString());
      // The source takes ORBITE_CONF as the plain one does, its security section replaced.
      var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
      String conf = System.getenv("ORBITE_CONF");
      var root =
          conf == null || conf.isBlank()
              ? mapper.createObjectNode()
              : (com.fasterxml.jackson.databind.node.ObjectNode) mapper.readTree(conf);
      root.putObject("security")
          .put("tlsKeyStore", sourceStore.toString())
          .put("tlsTrustStore", ca.trustStore().toString())
          .put("tlsPasswordFile", ca.passwordFile().toString());
      String sourceConf = mapper.writeValueAsString(root);
      // The ceiling: one JDK TLS stream, before and after the engine's runs (after a warm-up).
      TlsCeiling.oneStream(ca, sourceStore, requesterStore, 1.0);
      List<Double> jdk = new ArrayList<>();
      jdk.add(TlsCeiling.oneStream(ca, sourceStore, requesterStore, secondsPerFigure));
      try (EngineProcess source =
              EngineProcess.start(
                  "bench-source-tls", logs.dir(), Map.of("ORBITE_CONF", sourceConf));
          TransferEngine requester =
              TransferEngine.start(
                  EngineConfig.fromEnv()
                      .withName("bench-requester-tls")
                      .withSecurity(requesterTls))) {
        long remote = Long.parseLong(source.call("ALLOC " + REGION_BYTES + " READ_WRITE"));
        long sourceSeed = 0x5eed5L;
        long writeSeed = 0x77L;
        source.call("FILL " + remote + " " + sourceSeed);
        RegisteredMemory local = requester.allocate(REGION_BYTES, Access.READ_WRITE);
        RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
        human.printf("bench tcp --tls: every connection over mutual TLS 1.3%n");
        long writtenUpTo = 0;
        for (Op op : Op.values()) {
          if (op == Op.WRITE) {
            Pattern.fill(local.segment(), 0, REGION_BYTES, writeSeed, 0);
          }
          for (int s = 2; s < SIZES.length; s++) {
            if (onlySizes != null && !onlySizes.contains(NAMES[s])) {
              continue;
            }
            String name = op.name().toLowerCase(Locale.ROOT) + "_" + NAMES[s];
            Run r = measure(requester, op, local, peer, remote, SIZES[s], "tls_" + name, false);
            failures += r.failed;
            figures.put("tls_" + name + "_GBps", r.gbps());
            Double plain = figures.get(name + "_GBps");
            if (plain != null) {
              ratios.put("tls_" + name + "_vs_plain", r.gbps() / plain);
            }
            if (op == Op.WRITE) {
              writtenUpTo = Math.max(writtenUpTo, r.touchedBytes);
            }
            failures +=
                BenchReport.verify(
                    human,
                    op,
                    local,
                    source,
                    remote,
                    op == Op.WRITE ? writtenUpTo : r.touchedBytes,
                    sourceSeed,
                    writeSeed);
          }
        }
        if (failures == 0) {
          logs.passed();
        }
      }
      jdk.add(TlsCeiling.oneStream(ca, sourceStore, requesterStore, secondsPerFigure));
      double ceiling = (jdk.get(0) + jdk.get(1)) / 2;
      ceilings.put("jdk_tls_1stream_GBps", ceiling);
      for (int i = 0; i < jdk.size(); i++) {
        ceilings.put("jdk_tls_1stream_run" + (i + 1) + "_GBps", jdk.get(i));
      }
      for (String k : List.copyOf(figures.keySet())) {
        if (k.startsWith("tls_") && k.endsWith("_GBps")) {
          ratios.put(
              k.substring(0, k.length() - "_GBps".length()) + "_vs_jdk_tls",
              figures.get(k) / ceiling);
        }
      }
    }
    return failures;
  }

  private void addIperf(List<Double> gbps, List<Double> cpu)
      throws java.io.IOException, InterruptedException {
    Iperf3.Result r = Iperf3.oneStream(iperfSeconds);
    gbps.add(r.gbps());
    cpu.add(r.cpuSecondsPerGB());
  }

  /** CPU time of this process plus the source process, for CPU-per-byte figures. */
  private static long cpuNanos(long sourcePid) {
    long self = ProcessHandle.current().info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
    long other =
        ProcessHandle.of(sourcePid)
            .flatMap(p -> p.info().totalCpuDuration())
            .map(Duration::toNanos)
            .orElse(0L);
    return self + other;
  }

  private record Run(
      long bytes,
      long tasks,
      double seconds,
      long touchedBytes,
      long allocatedBytes,
      long laneAllocatedBytes,
      int failed) {
    double gbps() {
      return bytes / 1e9 / seconds;
    }
  }

  /** Runs tasks of {@code size} at the same offsets on both sides, cycling through the region. */
  private Run measure(
      TransferEngine engine,
      Op op,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      String name,
      boolean measureAllocation) {
    int perBatch = (int) Math.max(1, Math.min(1024, (64L << 20) / size));
    int batchesInFlight = (int) Math.max(2, IN_FLIGHT_BYTES / (perBatch * size));
    long slots = Math.max(1, workingSetBytes / size);
    // Warm up: one pass of batches, not measured (but its bytes are verified with the rest).
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
    long allocBefore = measureAllocation ? EngineMain.allocatedBytes() : 0;
    long laneAllocBefore = measureAllocation ? EngineMain.allocatedBytes(LANE_THREADS) : 0;
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
    long allocated = measureAllocation ? EngineMain.allocatedBytes() - allocBefore : 0;
    long laneAllocated =
        measureAllocation ? EngineMain.allocatedBytes(LANE_THREADS) - laneAllocBefore : 0;
    progress.done();
    human.printf(
        Locale.ROOT,
        "  %-12s %6d tasks %9.1f MiB in %5.2f s = %6.3f GB/s%n",
        name,
        r.tasks(),
        r.bytes() / 1048576.0,
        r.seconds(),
        r.gbps());
    return new Run(
        r.bytes(),
        r.tasks(),
        r.seconds(),
        Math.max(warm.touchedBytes(), r.touchedBytes()),
        allocated,
        laneAllocated,
        r.failed() + warm.failed());
  }
}
