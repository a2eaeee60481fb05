package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench idle [--json] [--seconds S] [--rdma-events]}: what an idle engine costs. A
 * source engine process ({@code shm.enabled}) and a requester engine (this process), default
 * configuration otherwise; the requester opens the source, so its TCP lanes and its SHM lanes run,
 * and moves one READ over each transport (bytes verified). Then both sit idle, 5 s untimed (the JIT
 * settles), then {@code S} seconds (default 10) while their CPU time is read from {@code
 * /proc/<pid>/stat} (user + system, all threads). Reported as a percentage of one core per process;
 * the requester's figure includes this JVM's own idle threads (JIT, GC), as a serving process's
 * would. With {@code --rdma-events} both engines also run the RDMA transport on the software
 * provider with {@code rdma.completionEvents} on (two rails of three lanes, their idle lanes
 * sleeping on their completion channels), one READ moves over RDMA too, and the figures are named
 * {@code idle_rdma_events_*}.
 */
public final class IdleBench {
  private static final long REGION = 1L << 20;

  /** Untimed idle time before the measured one. */
  private static final long SETTLE_MILLIS = 5_000;

  /** The source's configuration ({@code ORBITE_CONF}), with the RDMA variant or without. */
  static String sourceConf(boolean rdmaEvents) {
    return rdmaEvents
        ? "{\"shm\":{\"enabled\":true},\"rdma\":{\"enabled\":true,\"softwareDevices\":2,"
            + "\"lanes\":3,\"completionEvents\":true}}"
        : "{\"shm\":{\"enabled\":true}}";
  }

  /** The requester's configuration: {@code base}, with the RDMA variant's keys or as it is. */
  static EngineConfig requesterConfig(EngineConfig base, boolean rdmaEvents) {
    EngineConfig c = base.withName("bench-idle-requester");
    return rdmaEvents
        ? c.withRdma(
            c.rdma()
                .withEnabled(true)
                .withSoftwareDevices(2)
                .withLanes(3)
                .withCompletionEvents(true))
        : c;
  }

  /** The transports of the READs moved before idling. */
  static List<Transport> transports(boolean rdmaEvents) {
    return rdmaEvents
        ? List.of(Transport.TCP, Transport.SHM, Transport.RDMA)
        : List.of(Transport.TCP, Transport.SHM);
  }

  /** A figure's name: {@code idle_<what>}, or {@code idle_rdma_events_<what>} for the variant. */
  static String figure(boolean rdmaEvents, String what) {
    return (rdmaEvents ? "idle_rdma_events_" : "idle_") + what;
  }

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    boolean rdmaEvents = args.contains("--rdma-events");
    PrintStream human = json ? System.err : System.out;
    int at = args.indexOf("--seconds");
    double seconds = at >= 0 && at + 1 < args.size() ? Double.parseDouble(args.get(at + 1)) : 10;
    Map<String, Double> figures = new LinkedHashMap<>();
    try (ChildLogs logs = ChildLogs.create("bench-idle");
        EngineProcess source =
            EngineProcess.start(
                "bench-idle-source", logs.dir(), Map.of("ORBITE_CONF", sourceConf(rdmaEvents)));
        TransferEngine requester =
            TransferEngine.start(requesterConfig(EngineConfig.fromEnv(), rdmaEvents))) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 91");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      int failures = 0;
      for (Transport t : transports(rdmaEvents)) {
        Pattern.fill(local.segment(), 0, REGION, 92, 0);
        Batch batch = requester.allocateBatch(1);
        batch.submit(
            List.of(TransferRequest.read(local, 0, peer, remote, 0, REGION).withTransport(t)));
        BatchStatus s = batch.await(Duration.ofSeconds(30));
        batch.free();
        if (!s.allCompleted() || Pattern.verify(local.segment(), 0, REGION, 91, 0) != -1) {
          human.println("  the " + t + " READ before idling failed: " + s);
          failures++;
        }
      }
      human.printf(
          Locale.ROOT,
          "bench idle: source pid %d, requester pid %d; lanes up (%s), idle 5 s, then measured for %.0f s%n",
          source.pid(),
          ProcessHandle.current().pid(),
          rdmaEvents ? "TCP, SHM and RDMA with completion events" : "TCP and SHM",
          seconds);
      // Let the JIT finish with what the READs and the start made hot: a serving process idles long
      // after.
      Thread.sleep(SETTLE_MILLIS);
      long self = ProcessHandle.current().pid();
      long wall0 = System.nanoTime();
      long req0 = cpuTicks(self);
      long src0 = cpuTicks(source.pid());
      Map<String, Long> threads0 = threadTicks(self);
      // Sleeping is the measurement here: both engines are left idle for the measured time.
      Thread.sleep((long) (seconds * 1000));
      long req1 = cpuTicks(self);
      Map<String, Long> threads1 = threadTicks(self);
      long src1 = cpuTicks(source.pid());
      double wall = (System.nanoTime() - wall0) / 1e9;
      double hz = 100.0; // USER_HZ, which Linux fixes at 100 for /proc
      double reqPct = (req1 - req0) / hz / wall * 100;
      double srcPct = (src1 - src0) / hz / wall * 100;
      figures.put(figure(rdmaEvents, "requester_cpu_pct_of_core"), reqPct);
      figures.put(figure(rdmaEvents, "source_cpu_pct_of_core"), srcPct);
      figures.put(figure(rdmaEvents, "seconds"), wall);
      human.printf(
          Locale.ROOT,
          "  requester %5.2f %% of one core, source %5.2f %% of one core, over %.1f s%n",
          reqPct,
          srcPct,
          wall);
      human.println("  the requester's busiest threads while idle (clock ticks of 10 ms):");
      threads1.entrySet().stream()
          .map(e -> Map.entry(e.getKey(), e.getValue() - threads0.getOrDefault(e.getKey(), 0L)))
          .filter(e -> e.getValue() > 0)
          .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
          .limit(8)
          .forEach(e -> human.printf(Locale.ROOT, "    %4d  %s%n", e.getValue(), e.getKey()));
      long threads = ManagementFactory.getThreadMXBean().getThreadCount();
      figures.put("requester_threads", (double) threads);
      BenchReport.print(human, json, figures, Map.of(), Map.of());
      human.println(
          failures == 0
              ? "RESULT: PASS - the READs before idling were verified byte for byte"
              : "RESULT: FAIL - " + failures + " READ(s) before idling failed");
      return failures == 0 ? 0 : 1;
    }
  }

  /** utime + stime of each thread of {@code pid} by "tid name", in clock ticks. */
  static Map<String, Long> threadTicks(long pid) throws IOException {
    Map<String, Long> out = new LinkedHashMap<>();
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : tasks.toList()) {
        try {
          String stat = Files.readString(t.resolve("stat"));
          String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          out.put(t.getFileName() + " " + name, Long.parseLong(f[11]) + Long.parseLong(f[12]));
        } catch (IOException gone) {
          // The thread ended meanwhile.
        }
      }
    }
    return out;
  }

  /**
   * utime + stime of every thread of {@code pid}, in clock ticks (fields 14 and 15 of
   * /proc/pid/stat).
   */
  static long cpuTicks(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }
}
