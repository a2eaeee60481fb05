package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.Progress;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench rdma}: the RDMA transport on the software provider ({@code SoftVerbs},
 * whose devices talk over TCP on loopback), so every figure is the software provider's, never a
 * hardware figure. A source engine process and a requester engine (this process), each with {@value
 * #RAILS} software devices as rails and the default lanes: READ and WRITE throughput at 64 KiB, 1
 * MiB, 4 MiB and 64 MiB, the 64 KiB slice rate, and as the same-run reference the TCP READ at 1 MiB
 * and 4 MiB through the same two engines; adjacent 4 KiB READs with request merging on and off
 * ({@link AdjacentTasks}). Then a second requester, whose provider runs the null wire ({@link
 * SoftFaults#nullWire}), gives the slice rate of the engine's own RDMA path (grant request, window
 * bind, payload WR, completion SEND, release) with no byte moved. Every byte a run moves is
 * verified, the destination scrambled before each run; {@code --json} prints one JSON object in the
 * shape of {@code bench tcp --json}, with a {@code label}.
 */
public final class RdmaBench {
  /** What every figure of this bench is, and is not. */
  static final String LABEL = "software provider: not a hardware figure";

  static final List<String> SIZE_NAMES = List.of("64KiB", "1MiB", "4MiB", "64MiB");
  private static final long[] SIZES = {64L << 10, 1L << 20, 4L << 20, 64L << 20};

  /** The sizes of the TCP reference. */
  private static final List<String> TCP_SIZES = List.of("1MiB", "4MiB");

  /** A 64 KiB task is one slice: the RDMA channel's base block is 64 KiB. */
  private static final long SLICE_BYTES = 64L << 10;

  private static final int RAILS = 2;
  private static final long IN_FLIGHT_BYTES = 64L << 20;

  private static final long SOURCE_SEED = 0x5eed5L;
  private static final long WRITE_SEED = 0x77L;

  /** What a destination holds before each run, so that a byte the run did not move is caught. */
  private static final long STALE_SEED = 0xdeadL;

  private static final String SOURCE_CONF =
      "{\"rdma\":{\"enabled\":true,\"softwareDevices\":" + RAILS + "}}";

  private PrintStream human = System.out;
  private RdmaBenchOptions options;

  /** Tasks completed per transport, warm-ups included: what the engines' counters must show. */
  private final Map<Transport, Long> completed = new EnumMap<>(Transport.class);

  public int run(List<String> args) throws Exception {
    try {
      options = RdmaBenchOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("bench rdma: " + e.getMessage() + " (" + RdmaBenchOptions.USAGE + ")");
      return ExitCodes.USAGE;
    }
    if (options.json()) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    int failures = 0;
    try (ChildLogs logs = ChildLogs.create("bench-rdma");
        EngineProcess source =
            EngineProcess.start(
                "bench-rdma-source", logs.dir(), Map.of("ORBITE_CONF", SOURCE_CONF))) {
      long remote =
          Long.parseLong(source.call("ALLOC " + options.workingSetBytes() + " READ_WRITE"));
      if (!options.engineOnly()) {
        failures += overTheWireAndMerged(source, remote, figures, ratios);
      }
      SoftFaults nullWire = SoftFaults.create();
      nullWire.nullWire(true);
      try (TransferEngine requester =
          FaultInjection.start(requesterConfig("bench-rdma-nullwire"), providerFaults(nullWire))) {
        failures += withoutTheWire(requester, source, remote, figures);
      }
      BenchReport.settleLogs(human, logs, source, failures);
    }
    Double slices = figures.get("rdma_slices_per_s");
    Double nullSlices = figures.get("rdma_nullwire_slices_per_s");
    if (slices != null && nullSlices != null && nullSlices > 0) {
      ratios.put("rdma_slices_per_s_vs_nullwire", slices / nullSlices);
    }
    List<String> left = softThreadsLeft();
    if (!left.isEmpty()) {
      human.println(
          "warning: software provider threads still running after both engines closed: " + left);
    }
    BenchReport.print(human, options.json(), LABEL, figures, Map.of(), ratios);
    if (failures > 0) {
      human.println(
          "RESULT: FAIL - "
              + failures
              + " failed task(s), wrong byte(s) or task(s) off their transport");
      return ExitCodes.FAILED;
    }
    return ExitCodes.PASS;
  }

  /** The runs over the wire (every size, the slice rate, TCP's reference) and the merged loop. */
  private int overTheWireAndMerged(
      EngineProcess source, long remote, Map<String, Double> figures, Map<String, Double> ratios)
      throws Exception {
    int failures = 0;
    try (TransferEngine requester = TransferEngine.start(requesterConfig("bench-rdma-requester"))) {
      human.printf(
          Locale.ROOT,
          "bench rdma (%s): source %s (pid %d), requester pid %d, %d software devices as rails,"
              + " %d lanes each, %.1f s per figure, working set %d MiB%n",
          LABEL,
          source.endpoint(),
          source.pid(),
          ProcessHandle.current().pid(),
          RAILS,
          requester.config().rdma().lanes(),
          options.secondsPerFigure(),
          options.workingSetBytes() >> 20);
      BenchReport.printUrls(human, requester);
      failures += overTheWire(requester, source, remote, figures, ratios);
    }
    // Request merging: the adjacent loop on two fresh requesters, merge.enabled on and off, over
    // the source's pattern (the WRITE runs above changed it).
    source.call("FILL " + remote + " " + SOURCE_SEED);
    failures +=
        AdjacentTasks.measure(
            human,
            requesterConfig("bench-rdma-requester"),
            source,
            remote,
            options.workingSetBytes(),
            SOURCE_SEED,
            Transport.RDMA,
            Transport.RDMA,
            options.secondsPerFigure(),
            figures,
            ratios);
    return failures;
  }

  /**
   * This process's configuration, with RDMA on over the software provider's {@value #RAILS} rails,
   * and request merging off: the figures are per slice (one 64 KiB task, one slice), and merging
   * would fold the adjacent tasks of a batch into fewer, larger ones. The adjacent-task figures
   * turn it on and off themselves ({@link AdjacentTasks}).
   */
  private static EngineConfig requesterConfig(String name) {
    EngineConfig c = EngineConfig.fromEnv().withName(name);
    return c.withRdma(
            c.rdma().withEnabled(true).withProvider("software").withSoftwareDevices(RAILS))
        .withMerge(c.merge().withEnabled(false));
  }

  /** Hooks that change one thing: the engine's software provider is made with {@code faults}. */
  private static FaultHooks providerFaults(SoftFaults faults) {
    return new FaultHooks() {
      @Override
      public Object rdmaFaults() {
        return faults;
      }
    };
  }

  /**
   * READ at every size, the slice rate, the TCP reference, then WRITE at every size; every run's
   * bytes verified; every task on the transport it named; the failures.
   */
  private int overTheWire(
      TransferEngine requester,
      EngineProcess source,
      long remote,
      Map<String, Double> figures,
      Map<String, Double> ratios)
      throws Exception {
    long ws = options.workingSetBytes();
    source.call("FILL " + remote + " " + SOURCE_SEED);
    RegisteredMemory local = requester.allocate(ws, Access.READ_WRITE);
    RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
    long rdmaBefore = completed.getOrDefault(Transport.RDMA, 0L);
    long tcpBefore = completed.getOrDefault(Transport.TCP, 0L);
    int failures = 0;
    for (int s = 0; s < SIZES.length; s++) {
      if (!options.sizes().contains(SIZE_NAMES.get(s))) {
        continue;
      }
      String name = "rdma_read_" + SIZE_NAMES.get(s);
      Pattern.fill(local.segment(), 0, ws, STALE_SEED, 0);
      BenchLoop.Run r =
          measure(requester, Op.READ, Transport.RDMA, local, peer, remote, SIZES[s], name);
      figures.put(name + "_GBps", r.gbps());
      failures += r.failed() + verify(Op.READ, local, source, remote, r.touchedBytes());
    }
    Pattern.fill(local.segment(), 0, ws, STALE_SEED, 0);
    BenchLoop.Run slices = sliceRate(requester, local, peer, remote, source.pid(), "rdma_slices");
    figures.put("rdma_slices_per_s", slices.tasks() / slices.seconds());
    failures += slices.failed() + verify(Op.READ, local, source, remote, slices.touchedBytes());
    for (String n : TCP_SIZES) {
      if (!options.sizes().contains(n)) {
        continue;
      }
      long size = SIZES[SIZE_NAMES.indexOf(n)];
      Pattern.fill(local.segment(), 0, ws, STALE_SEED, 0);
      BenchLoop.Run r =
          measure(requester, Op.READ, Transport.TCP, local, peer, remote, size, "tcp_read_" + n);
      figures.put("tcp_read_" + n + "_GBps", r.gbps());
      failures += r.failed() + verify(Op.READ, local, source, remote, r.touchedBytes());
      Double rdma = figures.get("rdma_read_" + n + "_GBps");
      if (rdma != null && r.gbps() > 0) {
        ratios.put("rdma_read_" + n + "_vs_tcp", rdma / r.gbps());
      }
    }
    Pattern.fill(local.segment(), 0, ws, WRITE_SEED, 0);
    for (int s = 0; s < SIZES.length; s++) {
      if (!options.sizes().contains(SIZE_NAMES.get(s))) {
        continue;
      }
      String name = "rdma_write_" + SIZE_NAMES.get(s);
      source.call("FILL " + remote + " " + SOURCE_SEED);
      BenchLoop.Run r =
          measure(requester, Op.WRITE, Transport.RDMA, local, peer, remote, SIZES[s], name);
      figures.put(name + "_GBps", r.gbps());
      failures += r.failed() + verify(Op.WRITE, local, source, remote, r.touchedBytes());
    }
    EngineCounters c = requester.counters();
    long overRdma = c.tasksDispatched(Transport.RDMA);
    long overTcp = c.tasksDispatched(Transport.TCP);
    figures.put("tasks_over_rdma", (double) overRdma);
    figures.put("tasks_over_tcp", (double) overTcp);
    long wantRdma = completed.getOrDefault(Transport.RDMA, 0L) - rdmaBefore;
    long wantTcp = completed.getOrDefault(Transport.TCP, 0L) - tcpBefore;
    if (failures == 0 && (overRdma != wantRdma || overTcp != wantTcp)) {
      human.printf(
          "  %d task(s) went over RDMA and %d over TCP; the runs sent %d and %d%n",
          overRdma, overTcp, wantRdma, wantTcp);
      failures++;
    }
    for (int rail = 0; rail < RAILS; rail++) {
      String device = "soft" + rail;
      long bytes = c.laneBytes().getOrDefault("rdma/" + device, 0L);
      figures.put("rdma_rail_" + device + "_GB", bytes / 1e9);
      if (bytes == 0) {
        human.println("  warning: rail " + device + " carried no payload");
      }
    }
    peer.close();
    return failures;
  }

  /**
   * The slice rate of a requester whose provider runs the null wire: nothing moves, so no byte is
   * verified; the local region is checked unchanged instead, which proves the null wire was in
   * effect.
   */
  private int withoutTheWire(
      TransferEngine requester, EngineProcess source, long remote, Map<String, Double> figures)
      throws Exception {
    long ws = options.workingSetBytes();
    RegisteredMemory local = requester.allocate(ws, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, ws, STALE_SEED, 0);
    RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
    human.println(
        "  null wire: each RDMA READ completes at once without moving a byte, so no byte is"
            + " verified; grant request, window bind, completion SEND and release run as usual");
    long before = completed.getOrDefault(Transport.RDMA, 0L);
    BenchLoop.Run r =
        sliceRate(requester, local, peer, remote, source.pid(), "rdma_nullwire_slices");
    figures.put("rdma_nullwire_slices_per_s", r.tasks() / r.seconds());
    long slices = rdmaCharge(requester, "slicesDispatched");
    long sends = rdmaCharge(requester, "completionSends");
    if (sends > 0) {
      // How many slices one completion SEND named, on average (warm-up included).
      figures.put("rdma_nullwire_slices_per_completion_send", (double) slices / sends);
    }
    int failures = r.failed();
    long over = requester.counters().tasksDispatched(Transport.RDMA);
    long want = completed.getOrDefault(Transport.RDMA, 0L) - before;
    if (failures == 0 && over != want) {
      human.printf("  %d null-wire task(s) went over RDMA; the run sent %d%n", over, want);
      failures++;
    }
    long changed = Pattern.verify(local.segment(), 0, ws, STALE_SEED, 0);
    if (changed >= 0) {
      human.println(
          "  NULL WIRE NOT IN EFFECT: requester byte " + changed + " changed, yet none may move");
      failures++;
    }
    peer.close();
    return failures;
  }

  /** The sum of charge {@code name} over the engine's RDMA transport owners (its owner view). */
  private static long rdmaCharge(TransferEngine engine, String name) {
    long sum = 0;
    for (OwnerView.Owner o : engine.ownerView().owners()) {
      if (o.kind().equals("RdmaTransport")) {
        sum += o.charges().getOrDefault(name, 0L);
      }
    }
    return sum;
  }

  private int verify(Op op, RegisteredMemory local, EngineProcess source, long remote, long touched)
      throws Exception {
    return BenchReport.verify(human, op, local, source, remote, touched, SOURCE_SEED, WRITE_SEED);
  }

  /**
   * Tasks of {@code size} over {@code transport} at the same offsets on both sides, two 64 MiB
   * batches in flight at most, after an untimed warm-up (its bytes verified with the rest).
   */
  private BenchLoop.Run measure(
      TransferEngine engine,
      Op op,
      Transport transport,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long size,
      String name) {
    int perBatch = (int) Math.max(1, Math.min(1024, (64L << 20) / size));
    int batchesInFlight = (int) Math.max(2, IN_FLIGHT_BYTES / (perBatch * size));
    long slots = Math.max(1, options.workingSetBytes() / size);
    BenchLoop.Run warm =
        BenchLoop.runFor(
            human,
            engine,
            op,
            transport,
            local,
            peer,
            remote,
            size,
            perBatch,
            batchesInFlight,
            slots,
            options.warmupSeconds(),
            null);
    Progress progress = new Progress(name, (long) (options.secondsPerFigure() * 10), "ds");
    BenchLoop.Run r =
        BenchLoop.runFor(
            human,
            engine,
            op,
            transport,
            local,
            peer,
            remote,
            size,
            perBatch,
            batchesInFlight,
            slots,
            options.secondsPerFigure(),
            progress);
    progress.done();
    count(transport, warm, r);
    human.printf(
        Locale.ROOT,
        "  %-22s %6d tasks %9.1f MiB in %5.2f s = %6.3f GB/s (%s)%n",
        name,
        r.tasks(),
        r.bytes() / 1048576.0,
        r.seconds(),
        r.gbps(),
        transport == Transport.RDMA ? LABEL : "TCP through the same engines: the reference");
    return new BenchLoop.Run(
        r.bytes(),
        r.tasks(),
        r.seconds(),
        Math.max(warm.touchedBytes(), r.touchedBytes()),
        r.failed() + warm.failed());
  }

  /** The slice loop: 64 KiB RDMA READs in batches of 1024, 4 in flight, for {@code seconds}. */
  private BenchLoop.Run sliceLoop(
      TransferEngine engine,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long slots,
      double seconds,
      Progress progress) {
    return BenchLoop.runFor(
        human,
        engine,
        Op.READ,
        Transport.RDMA,
        local,
        peer,
        remote,
        SLICE_BYTES,
        1024,
        4,
        slots,
        seconds,
        progress);
  }

  /**
   * 64 KiB RDMA READs (one slice each) in batches of 1024, 4 batches in flight, timed once both
   * engines' JITs have settled under this very load ({@link JitWarmUp}).
   */
  private BenchLoop.Run sliceRate(
      TransferEngine engine,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long sourcePid,
      String name)
      throws InterruptedException {
    long slots = options.workingSetBytes() / SLICE_BYTES;
    BenchLoop.Run warm =
        JitWarmUp.untilSettled(
            human,
            name,
            sourcePid,
            options.warmupSpellSeconds(),
            options.maxWarmupSeconds(),
            spell -> sliceLoop(engine, local, peer, remote, slots, spell, null));
    Jit.settle();
    Progress progress = new Progress(name, (long) (options.secondsPerFigure() * 10), "ds");
    BenchLoop.Run r =
        sliceLoop(engine, local, peer, remote, slots, options.secondsPerFigure(), progress);
    progress.done();
    count(Transport.RDMA, warm, r);
    human.printf(
        Locale.ROOT,
        "  %-22s %6d slices in %5.2f s = %,.0f slices/s (64 KiB READs, batches of 1024, 4 in"
            + " flight; %s)%n",
        name,
        r.tasks(),
        r.seconds(),
        r.tasks() / r.seconds(),
        LABEL);
    return new BenchLoop.Run(
        r.bytes(),
        r.tasks(),
        r.seconds(),
        Math.max(warm.touchedBytes(), r.touchedBytes()),
        r.failed() + warm.failed());
  }

  private void count(Transport transport, BenchLoop.Run... runs) {
    for (BenchLoop.Run r : runs) {
      completed.merge(transport, r.tasks(), Long::sum);
    }
  }

  /**
   * The software provider's threads ({@code soft-...}) still alive 5 s after the engines closed:
   * each is joined with what is left of the 5 s, so this returns as soon as they have all ended.
   */
  private static List<String> softThreadsLeft() throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    List<String> left = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (!t.getName().startsWith("soft-")) {
        continue;
      }
      long rest = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L);
      t.join(rest);
      if (t.isAlive()) {
        left.add(t.getName());
      }
    }
    return left;
  }
}
