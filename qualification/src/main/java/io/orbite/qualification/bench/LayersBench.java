package io.orbite.qualification.bench;

import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Submission;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench layers}: a decode side pulling a request's KV cache layer by layer, the way
 * a serving system's connector does, over TCP and over SHM from a source engine process on the same
 * host. A request is 32 layers of 16 pages of 64 KiB (1 MiB per layer, the pages adjacent so that
 * merging applies); each layer is one submission on ONE batch reused for all 1,000 requests
 * (512,000 tasks, never reset), and layers overlap: layer k+1 is submitted before layer k is
 * awaited through its {@link Submission}. A layer's latency runs from its submit to the return of
 * its await. The figures are per-layer p50 and p99 over the first and over the last 100 requests,
 * and the ratio of last to first: a wait that grew with the batch would show there (20 requests on
 * a batch of their own warm the JVM up first). Before each request the first and last page of every
 * layer are poisoned in the requester's memory and checked after it; at the end the whole touched
 * range is checked against the source's pattern.
 */
public final class LayersBench {
  private static final int LAYERS = 32;
  private static final int PAGES = 16;
  private static final long PAGE = 64L << 10;
  private static final long LAYER = PAGES * PAGE;
  private static final long REQUEST = LAYERS * LAYER;

  /** Request slots in the regions: request r uses slot r % SLOTS, so its pages move every time. */
  private static final int SLOTS = 4;

  private static final long REGION = SLOTS * REQUEST;
  private static final long SOURCE_SEED = 0x1a7e5L;
  private static final byte POISON = (byte) 0xEE;

  private PrintStream human = System.out;
  private int requests = 1000;
  private int window = 100;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    int at = args.indexOf("--requests");
    if (at >= 0 && at + 1 < args.size()) {
      requests = Integer.parseInt(args.get(at + 1));
      window = Math.max(1, Math.min(100, requests / 10));
    }
    if (json) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    int failures = 0;
    EngineConfig config =
        EngineConfig.fromEnv()
            .withName("bench-layers-requester")
            .withBudgets(
                BudgetConfig.defaults()
                    .withMaxBatchCapacity(Math.max(requests * LAYERS * PAGES, 1)));
    try (ChildLogs logs = ChildLogs.create("bench-layers");
        EngineProcess source =
            EngineProcess.start(
                "bench-layers-source",
                logs.dir(),
                Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"));
        TransferEngine requester = TransferEngine.start(config)) {
      human.printf(
          Locale.ROOT,
          "bench layers: source %s (pid %d); %d requests of %d layers x %d pages of %d KiB, one"
              + " submission per layer on one batch, layer k+1 submitted before layer k is"
              + " awaited%n",
          source.endpoint(),
          source.pid(),
          requests,
          LAYERS,
          PAGES,
          PAGE >> 10);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " " + SOURCE_SEED);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      for (Transport t : List.of(Transport.TCP, Transport.SHM)) {
        if (t == Transport.SHM && !peer.sharedReachable(remote)) {
          human.println(
              "RESULT: ENVIRONMENT - the source's memory is not reachable through SHM: "
                  + peer.unreachableBecause(Transport.SHM, remote));
          return ExitCodes.ENVIRONMENT;
        }
        failures += measure(requester, local, peer, remote, t, figures, ratios);
      }
      BenchReport.settleLogs(human, logs, source, failures);
    }
    BenchReport.print(human, json, figures, new LinkedHashMap<>(), ratios);
    if (failures > 0) {
      human.println("RESULT: FAIL - " + failures + " failed layer(s) or wrong byte(s)");
      return ExitCodes.FAILED;
    }
    human.println("RESULT: PASS");
    return ExitCodes.PASS;
  }

  private List<TransferRequest> layer(
      RegisteredMemory local, RemoteSegment peer, long remote, Transport t, int request, int k) {
    long base = (request % SLOTS) * REQUEST + k * LAYER;
    List<TransferRequest> pages = new ArrayList<>(PAGES);
    for (int p = 0; p < PAGES; p++) {
      long offset = base + p * PAGE;
      pages.add(TransferRequest.read(local, offset, peer, remote, offset, PAGE).withTransport(t));
    }
    return pages;
  }

  private int measure(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      Transport t,
      Map<String, Double> figures,
      Map<String, Double> ratios) {
    String name = t.name().toLowerCase(Locale.ROOT);
    // Warm up on a batch of its own (JIT, lanes, mappings), so that the first measured requests
    // are not the JVM's first: the comparison is of a young batch against an old one.
    Batch warm = requester.allocateBatch(LAYERS * PAGES);
    try {
      for (int r = 0; r < Math.min(20, requests); r++) {
        for (int k = 0; k < LAYERS; k++) {
          if (!warm.submit(layer(local, peer, remote, t, r, k))
              .await(Duration.ofSeconds(30))
              .allCompleted()) {
            human.println("  " + name + " warm-up request " + r + " layer " + k + " failed");
            return 1;
          }
        }
        warm.reset();
      }
    } finally {
      warm.free();
    }
    EngineCounters before = requester.counters();
    long[] first = new long[window * LAYERS];
    long[] last = new long[window * LAYERS];
    int failures = 0;
    long bytes = 0;
    // Time spent moving requests, from a request's first submit to its last await's return: the
    // poisoning and checking between requests is not counted.
    long movingNanos = 0;
    Batch batch = requester.allocateBatch(requests * LAYERS * PAGES);
    try {
      Submission[] inFlight = new Submission[LAYERS];
      long[] submittedAt = new long[LAYERS];
      for (int r = 0; r < requests; r++) {
        long slot = (r % SLOTS) * REQUEST;
        for (int k = 0; k < LAYERS; k++) {
          local.segment().asSlice(slot + k * LAYER, PAGE).fill(POISON);
          local.segment().asSlice(slot + (k + 1) * LAYER - PAGE, PAGE).fill(POISON);
        }
        submittedAt[0] = System.nanoTime();
        inFlight[0] = batch.submit(layer(local, peer, remote, t, r, 0));
        for (int k = 0; k < LAYERS; k++) {
          if (k + 1 < LAYERS) {
            submittedAt[k + 1] = System.nanoTime();
            inFlight[k + 1] = batch.submit(layer(local, peer, remote, t, r, k + 1));
          }
          SubmissionStatus s = inFlight[k].await(Duration.ofSeconds(30));
          long took = System.nanoTime() - submittedAt[k];
          if (!s.allCompleted()) {
            human.println("  " + name + " request " + r + " layer " + k + " failed: " + s.tasks());
            failures++;
          }
          bytes += s.completedBytes();
          if (k == LAYERS - 1) {
            movingNanos += System.nanoTime() - submittedAt[0];
          }
          if (r < window) {
            first[r * LAYERS + k] = took;
          } else if (r >= requests - window) {
            last[(r - (requests - window)) * LAYERS + k] = took;
          }
        }
        for (int k = 0; k < LAYERS; k++) {
          long a = slot + k * LAYER;
          long b = slot + (k + 1) * LAYER - PAGE;
          if (Pattern.verify(local.segment(), a, PAGE, SOURCE_SEED, a) >= 0
              || Pattern.verify(local.segment(), b, PAGE, SOURCE_SEED, b) >= 0) {
            human.println("  MISMATCH: " + name + " request " + r + " layer " + k);
            failures++;
          }
        }
      }
    } finally {
      batch.free();
    }
    double seconds = movingNanos / 1e9;
    long touched = Math.min(requests, SLOTS) * REQUEST;
    long bad = Pattern.verify(local.segment(), 0, touched, SOURCE_SEED, 0);
    if (bad >= 0) {
      human.println("  MISMATCH: " + name + " requester byte " + bad);
      failures++;
    }
    EngineCounters after = requester.counters();
    Arrays.sort(first);
    Arrays.sort(last);
    double firstP50 = LatencyBench.percentile(first, 50);
    double lastP50 = LatencyBench.percentile(last, 50);
    figures.put(name + "_layer_p50_first" + window + "_us", firstP50);
    figures.put(name + "_layer_p99_first" + window + "_us", LatencyBench.percentile(first, 99));
    figures.put(name + "_layer_p50_last" + window + "_us", lastP50);
    figures.put(name + "_layer_p99_last" + window + "_us", LatencyBench.percentile(last, 99));
    figures.put(name + "_GBps", bytes / seconds / 1e9);
    figures.put(name + "_tasks", (double) requests * LAYERS * PAGES);
    figures.put(name + "_tasks_merged", (double) (after.tasksMerged() - before.tasksMerged()));
    figures.put(
        name + "_physical_transfers",
        (double) (after.tasksDispatched(t) - before.tasksDispatched(t)));
    ratios.put(name + "_layer_p50_last_vs_first", lastP50 / firstP50);
    ratios.put(
        name + "_layer_p99_last_vs_first",
        LatencyBench.percentile(last, 99) / LatencyBench.percentile(first, 99));
    human.printf(
        Locale.ROOT,
        "  %s: layer p50 %.1f us (first %d requests) -> %.1f us (last %d), %.2f GB/s%n",
        name,
        firstP50,
        window,
        lastP50,
        window,
        bytes / seconds / 1e9);
    return failures;
  }
}
