package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * {@code ./orbite bench notify}: how soon a notification follows the bytes (C16). A sender engine
 * process WRITEs 4 KiB into this process's engine with a notification attached, one submission per
 * round, over TCP and then SHM; this process consumes {@code notifications()} with a stream that
 * checks the written bytes and the guards around them the moment each notification arrives. Per
 * transport it reports, in µs, p50 and p99 of: the time from the sender's WRITE completion (its
 * receipt, in the sender's clock: {@code nanoTime} is one clock for every process of a Linux host)
 * to the notification's arrival in this engine's inbox, and to the stream's consumer; beside the 4
 * KiB WRITE's own round trip (submit to receipt) in the same rounds. Then this process's CPU over
 * one idle second: a receiver that spins would show there.
 */
public final class NotifyBench {
  private static final long REGION = 1L << 20;
  private static final long SIZE = 4096;
  private static final long GUARD = 256;
  private static final long SENDER_SEED = 0x5e4d;
  private static final long GUARD_SEED = 0x6a4d;

  private PrintStream human = System.out;
  private int rounds = 2000;
  private int warmup = 300;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    int at = args.indexOf("--rounds");
    if (at >= 0 && at + 1 < args.size()) {
      rounds = Integer.parseInt(args.get(at + 1));
      warmup = Math.min(warmup, rounds);
    }
    if (json) {
      human = System.err;
    }
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    int failures = 0;
    EngineConfig config =
        EngineConfig.fromJson("{\"shm\":{\"enabled\":true}}").withName("bench-notify-receiver");
    try (ChildLogs logs = ChildLogs.create("bench-notify");
        TransferEngine receiver = TransferEngine.start(config);
        EngineProcess sender = EngineProcess.start("bench-notify-sender", logs.dir(), Map.of())) {
      RegisteredMemory landing = receiver.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(landing.segment(), 0, REGION, GUARD_SEED, 0);
      long from = Long.parseLong(sender.call("ALLOC " + REGION + " READ_WRITE"));
      sender.call("FILL " + from + " " + SENDER_SEED);
      sender.call("OPEN " + receiver.localSegment().endpoint());
      human.printf(
          Locale.ROOT,
          "bench notify: receiver %s (this process, pid %d), sender pid %d; %d rounds of one 4 KiB"
              + " WRITE with a notification per transport, after %d warm-up rounds%n",
          receiver.localSegment().endpoint(),
          ProcessHandle.current().pid(),
          sender.pid(),
          rounds,
          warmup);
      // One consumer for the whole run: it checks each round's bytes and guards on arrival.
      BlockingQueue<long[]> arrivals = new LinkedBlockingQueue<>();
      receiver
          .notifications()
          .runWith(
              Sink.foreach(
                  n -> {
                    long now = System.nanoTime();
                    int round = Integer.parseInt(n.tag().substring(1));
                    long off = offset(round);
                    boolean right =
                        Pattern.verify(landing.segment(), off, SIZE, SENDER_SEED, off) < 0
                            && Pattern.verify(
                                    landing.segment(), off - GUARD, GUARD, GUARD_SEED, off - GUARD)
                                < 0
                            && Pattern.verify(
                                    landing.segment(), off + SIZE, GUARD, GUARD_SEED, off + SIZE)
                                < 0;
                    arrivals.add(new long[] {round, n.receivedAtNanos(), now, right ? 1 : 0});
                  }),
              receiver.system());
      int round = 0;
      for (Transport t : List.of(Transport.TCP, Transport.SHM)) {
        String name = t.name().toLowerCase(Locale.ROOT);
        long[] inbox = new long[rounds];
        long[] consumer = new long[rounds];
        long[] roundTrip = new long[rounds];
        for (int i = -warmup; i < rounds; i++, round++) {
          long off = offset(round);
          // The range is poisoned again before each round: only this round's WRITE makes it right.
          Pattern.fill(landing.segment(), off, SIZE, GUARD_SEED, off);
          String[] a =
              sender
                  .call(
                      "XFERNT "
                          + t
                          + " "
                          + from
                          + " 1 "
                          + SIZE
                          + " "
                          + SIZE
                          + " "
                          + off
                          + " "
                          + landing.regionId()
                          + " "
                          + off
                          + " r"
                          + round
                          + " 16 "
                          + round)
                  .split(" ");
          if (!a[0].equals(String.valueOf(SIZE)) || !a[1].equals("DELIVERED")) {
            human.println("  " + name + " round " + round + ": " + String.join(" ", a));
            failures++;
            continue;
          }
          long[] got = arrivals.poll(10, TimeUnit.SECONDS);
          if (got == null || got[0] != round || got[3] != 1) {
            human.println(
                "  "
                    + name
                    + " round "
                    + round
                    + ": "
                    + (got == null
                        ? "no notification arrived"
                        : got[0] != round
                            ? "notification of round " + got[0] + " arrived instead"
                            : "the bytes were not there when it arrived"));
            failures++;
            continue;
          }
          if (i >= 0) {
            long writeDone = Long.parseLong(a[3]);
            inbox[i] = got[1] - writeDone;
            consumer[i] = got[2] - writeDone;
            roundTrip[i] = Long.parseLong(a[4]);
          }
        }
        Arrays.sort(inbox);
        Arrays.sort(consumer);
        Arrays.sort(roundTrip);
        double rt50 = LatencyBench.percentile(roundTrip, 50);
        double rt99 = LatencyBench.percentile(roundTrip, 99);
        double in50 = LatencyBench.percentile(inbox, 50);
        double in99 = LatencyBench.percentile(inbox, 99);
        double co50 = LatencyBench.percentile(consumer, 50);
        double co99 = LatencyBench.percentile(consumer, 99);
        figures.put(name + "_notify_after_write_to_inbox_p50_us", in50);
        figures.put(name + "_notify_after_write_to_inbox_p99_us", in99);
        figures.put(name + "_notify_after_write_to_consumer_p50_us", co50);
        figures.put(name + "_notify_after_write_to_consumer_p99_us", co99);
        ceilings.put(name + "_write_4KiB_round_trip_p50_us", rt50);
        ceilings.put(name + "_write_4KiB_round_trip_p99_us", rt99);
        ratios.put(name + "_notify_to_inbox_p50_vs_round_trip", in50 / rt50);
        ratios.put(name + "_notify_to_inbox_p99_vs_round_trip", in99 / rt99);
        ratios.put(name + "_notify_to_consumer_p50_vs_round_trip", co50 / rt50);
        ratios.put(name + "_notify_to_consumer_p99_vs_round_trip", co99 / rt99);
        human.printf(
            Locale.ROOT,
            "  %s: notification %.1f us (p50) after the WRITE's receipt to the inbox, %.1f us to"
                + " the consumer; the 4 KiB WRITE round trip %.1f us%n",
            name,
            in50,
            co50,
            rt50);
      }
      // The receiver idle for a second, its notification stream and connections open.
      var os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      long cpu0 = os.getProcessCpuTime();
      long t0 = System.nanoTime();
      Thread.sleep(1000);
      figures.put(
          "receiver_process_idle_cpu_pct",
          100.0 * (os.getProcessCpuTime() - cpu0) / (System.nanoTime() - t0));
      BenchReport.settleLogs(human, logs, sender, failures);
    }
    BenchReport.print(human, json, figures, ceilings, ratios);
    if (failures > 0) {
      human.println("RESULT: FAIL - " + failures + " round(s) failed or found wrong bytes");
      return ExitCodes.FAILED;
    }
    human.println("RESULT: PASS");
    return ExitCodes.PASS;
  }

  /** Round {@code r}'s 4 KiB, with a guard gap on each side, cycling through the region. */
  private static long offset(int r) {
    long slots = (REGION - GUARD) / (SIZE + GUARD);
    return GUARD + (r % slots) * (SIZE + GUARD);
  }
}
