package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * The request-merging figures that {@code bench tcp}, {@code bench shm} and {@code bench rdma}
 * report in the same run: {@code tasks_4KiB_adjacent_per_s}, 4 KiB READs in submissions of 1024
 * whose local and remote ranges each follow the one before (so the engine may merge them), and
 * {@code tasks_4KiB_adjacent_unmerged_per_s}, the same loop with {@code merge.enabled} off, and
 * their ratio {@code tasks_4KiB_adjacent_merged_vs_unmerged}. Each runs on a requester engine of
 * its own, made for it from the bench's requester configuration and differing only in {@code
 * merge.enabled}, so that neither inherits the other's warm-up, counters or mappings. The loop is
 * {@link BenchLoop#taskRate}'s (warm-up until the JIT settles, then timed), over a working set of
 * its own at the start of the source's region, which must hold the source's pattern; every byte
 * read is verified, and every task must have run on the bench's transport.
 */
final class AdjacentTasks {
  /**
   * The most of the source's region the loop cycles over: cold enough, without 1 GiB per engine.
   */
  static final long MAX_WORKING_SET_BYTES = 256L << 20;

  private AdjacentTasks() {}

  /**
   * Measures both figures against {@code source}'s region {@code remote} (its first {@code
   * workingSetBytes}, at most {@link #MAX_WORKING_SET_BYTES}, holding the pattern {@code
   * sourceSeed}), every request naming {@code transport} (UNSPEC: the engine chooses, and {@code
   * expected} is where it must choose); puts them in {@code figures} and their ratio in {@code
   * ratios}.
   *
   * @return the failures: tasks that failed, wrong bytes, tasks off {@code expected}
   */
  static int measure(
      PrintStream human,
      EngineConfig requesterConfig,
      EngineProcess source,
      long remote,
      long workingSetBytes,
      long sourceSeed,
      Transport transport,
      Transport expected,
      double seconds,
      Map<String, Double> figures,
      Map<String, Double> ratios)
      throws Exception {
    long ws = Math.min(MAX_WORKING_SET_BYTES, workingSetBytes);
    int failures = 0;
    double merged = 0;
    double unmerged = 0;
    for (boolean merge : new boolean[] {true, false}) {
      String name = merge ? "tasks_4KiB_adjacent" : "tasks_4KiB_adjacent_unmerged";
      EngineConfig config =
          requesterConfig
              .withName(requesterConfig.name() + (merge ? "-adjacent" : "-adjacent-unmerged"))
              .withMerge(requesterConfig.merge().withEnabled(merge));
      human.printf(
          Locale.ROOT,
          "  %s: a requester with merge.enabled=%s, 4 KiB READs in submissions of 1024, each"
              + " following the one before on both sides, over %d MiB%n",
          name,
          merge,
          ws >> 20);
      try (TransferEngine requester = TransferEngine.start(config)) {
        RegisteredMemory local = requester.allocate(ws, Access.READ_WRITE);
        RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
        BenchLoop.Run r =
            BenchLoop.taskRate(
                human, requester, transport, local, peer, remote, ws, false, seconds);
        failures += r.failed();
        failures +=
            BenchReport.verify(
                human, Op.READ, local, source, remote, r.touchedBytes(), sourceSeed, 0);
        failures += offTransport(human, requester, expected, name);
        double rate = r.tasks() / r.seconds();
        figures.put(name + "_per_s", rate);
        if (merge) {
          merged = rate;
        } else {
          unmerged = rate;
        }
        peer.close();
      }
    }
    if (unmerged > 0) {
      ratios.put("tasks_4KiB_adjacent_merged_vs_unmerged", merged / unmerged);
    }
    return failures;
  }

  /** 1 (and says so) when {@code requester} dispatched a task to another transport than wanted. */
  private static int offTransport(
      PrintStream human, TransferEngine requester, Transport expected, String name) {
    long off = 0;
    for (Transport t : Transport.values()) {
      if (t != expected && t != Transport.UNSPEC) {
        off += requester.counters().tasksDispatched(t);
      }
    }
    if (off == 0 && requester.counters().tasksDispatched(expected) > 0) {
      return 0;
    }
    human.printf(
        "  %s: %d task(s) went off %s (%d on it)%n",
        name, off, expected, requester.counters().tasksDispatched(expected));
    return 1;
  }
}
