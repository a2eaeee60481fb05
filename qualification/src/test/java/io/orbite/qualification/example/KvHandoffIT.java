package io.orbite.qualification.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.streams.StreamSettings;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The KV-cache handoff example end to end, small: a real prefill process (a child JVM) and a decode
 * engine in this JVM, every block pulled through the transfer stream and every byte checked.
 */
class KvHandoffIT {
  /**
   * 12 requests x 3 blocks of 8..64 KiB pages in a small pool; a layered region of 3 requests x 4
   * layers x 4 pages of 16 KiB, pulled 3 layers deep in 2 timed rounds.
   */
  private static List<String> small(String... more) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "--requests",
                "12",
                "--blocks",
                "3",
                "--page-kib",
                "64",
                "--pool-mib",
                "2",
                "--batch-tasks",
                "4",
                "--inflight-mib",
                "1",
                "--timeout-s",
                "60",
                "--layer-requests",
                "3",
                "--layers",
                "4",
                "--layer-pages",
                "4",
                "--layer-page-kib",
                "16",
                "--layer-depth",
                "3",
                "--layer-rounds",
                "2"));
    args.addAll(List.of(more));
    return args;
  }

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  static Path logs;

  private record Run(KvHandoff.Outcome outcome, String output) {}

  private static Run run(List<String> args) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    KvHandoff.Outcome outcome;
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      // The prefill logs go to a JUnit temp dir: a run the test expects to FAIL would keep its own.
      outcome = new KvHandoff(out).execute(KvOptions.parse(args), logs);
    }
    String output = bytes.toString(StandardCharsets.UTF_8);
    System.out.print(output);
    // Both sides are gone: the decode engine is closed by execute, the prefill process has exited.
    long pid = outcome.prefillPid();
    assertTrue(pid > 0, "the prefill process was started");
    assertFalse(
        ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false),
        "prefill process " + pid + " still runs");
    assertTrue(
        decodeThreadsGone(Duration.ofSeconds(10)),
        () -> "decode engine threads still run: " + decodeThreads());
    return new Run(outcome, output);
  }

  /** The decode engine's actor system names its threads after it ("decode-..."). */
  private static List<String> decodeThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(Thread::isAlive)
        .map(Thread::getName)
        .filter(n -> n.startsWith("decode-"))
        .toList();
  }

  private static boolean decodeThreadsGone(Duration within) {
    return io.orbite.qualification.Await.until(within, () -> decodeThreads().isEmpty());
  }

  @Test
  @Timeout(120)
  void everyBlockArrivesAndVerifiesInOrder() {
    Run run = run(small("--ordering", "in-order"));
    KvHandoff.Outcome o = run.outcome();
    assertEquals(0, o.exitCode(), () -> "problems: " + o.problems());
    assertEquals(36, o.blocks());
    assertEquals(36, o.verifiedBlocks());
    assertTrue(o.problems().isEmpty(), () -> o.problems().toString());
    // The push phase: every request pushed, notified exactly once, its bytes right on arrival.
    assertEquals(12, o.pushed());
    assertEquals(12, o.notified());
    assertEquals(12, o.pushVerified());
    assertTrue(
        run.output().contains("pushed   12/12 requests notified (12 DELIVERED by the prefill's"),
        run.output());
    assertTrue(
        run.output().contains("verified 12/12 requests on their notification: every block"),
        run.output());
    // The layer phase: 2 timed rounds of 3 requests x 4 layers, every byte and guard right.
    assertEquals(24, o.layers());
    assertEquals(24, o.layersVerified());
    assertTrue(
        run.output()
            .contains(
                "layers   3 requests x 4 layers x 4 adjacent pages of 16 KiB (a layer is 64 KiB), one"
                    + " submission per layer on one batch"),
        run.output());
    assertTrue(
        run.output().matches("(?s).*merging  96 page READs travelled as [1-9][0-9]* physical.*"),
        run.output());
    assertTrue(
        run.output()
            .matches(
                "(?s).*warm-up  every block pulled ([1-9]|1[0-2]) time\\(s\\), untimed, until the JIT was "
                    + "quiet.*"),
        run.output());
    assertTrue(run.output().contains("RESULT: PASS"), run.output());
  }

  @Test
  @Timeout(120)
  void everyBlockArrivesAndVerifiesAsCompleted() {
    // Without the warm-up pass: the destination holds only its guards when the timed pass begins.
    Run run = run(small("--ordering", "as-completed", "--no-warmup"));
    KvHandoff.Outcome o = run.outcome();
    assertEquals(0, o.exitCode(), () -> "problems: " + o.problems());
    assertEquals(36, o.verifiedBlocks());
    assertEquals(12, o.pushVerified());
    assertEquals(24, o.layersVerified());
    assertTrue(run.output().contains("RESULT: PASS"), run.output());
  }

  @Test
  @Timeout(120)
  void aCorruptedBlockIsFoundAndNamed() {
    List<String> args = small("--corrupt-one-block");
    KvPlan.Corruption damaged = KvOptions.parse(args).plan().corruption();
    KvLayers.Corruption damagedLayer = KvOptions.parse(args).layered().corruption();
    Run run = run(args);
    KvHandoff.Outcome o = run.outcome();
    assertEquals(1, o.exitCode(), "a damaged block must fail the run");
    assertEquals(List.of(damaged.name()), o.badBlocks(), () -> "problems: " + o.problems());
    assertEquals(35, o.verifiedBlocks(), "every other block is right");
    String line = o.problems().get(0);
    assertTrue(
        line.startsWith(
            "MISMATCH "
                + damaged.name()
                + ": first bad byte is byte "
                + damaged.byteInBlock()
                + " of "),
        line);
    // The push phase finds the damaged block when its request's notification arrives, in the
    // timed pass and in every untimed one, and nothing else.
    List<String> pushProblems = o.problems().stream().filter(p -> p.startsWith("push: ")).toList();
    assertFalse(pushProblems.isEmpty(), () -> o.problems().toString());
    for (String p : pushProblems) {
      assertTrue(
          p.matches(
              "push: (untimed pass [0-9]+: )?MISMATCH "
                  + damaged.name()
                  + ": on its notification, byte "
                  + damaged.byteInBlock()
                  + " of [0-9]+ is 0x.*"),
          p);
    }
    assertEquals(
        1,
        pushProblems.stream().filter(p -> !p.contains("untimed")).count(),
        () -> pushProblems.toString());
    assertEquals(pushProblems.size(), o.pushBadBlocks().size());
    assertTrue(
        o.pushBadBlocks().stream().allMatch(damaged.name()::equals), o.pushBadBlocks()::toString);
    assertEquals(12, o.notified(), "every request was notified");
    assertEquals(11, o.pushVerified(), "every other request is right on arrival");
    // The layer phase finds the damaged layer in each of its 2 timed rounds and every untimed one,
    // and nothing else.
    List<String> layerProblems =
        o.problems().stream().filter(p -> p.startsWith("layers: ")).toList();
    for (String p : layerProblems) {
      assertTrue(
          p.matches(
              "layers: (untimed round [0-9]+: )?MISMATCH "
                  + damagedLayer.name()
                  + ": first bad byte is byte "
                  + damagedLayer.byteInLayer()
                  + " of the layer \\(page 2\\).*"),
          p);
    }
    assertEquals(
        2,
        layerProblems.stream().filter(p -> !p.contains("untimed")).count(),
        () -> layerProblems.toString());
    assertEquals(
        1 + pushProblems.size() + layerProblems.size(),
        o.problems().size(),
        () -> o.problems().toString());
    assertEquals(24, o.layers());
    assertEquals(22, o.layersVerified(), "every other layer of the timed rounds is right");
    assertTrue(run.output().contains("RESULT: FAIL"), run.output());
  }

  /**
   * The notification count is exact: in the timed push pass the prefill leaves one request's
   * notification out and sends another's twice (the same tag and payload, by Engine.notify); the
   * run names both and fails, and every byte is still right.
   */
  @Test
  @Timeout(120)
  void aMissingAndADuplicateNotificationFailTheRun() {
    Run run = run(small("--notification-fault", "--no-warmup"));
    KvHandoff.Outcome o = run.outcome();
    int missing = PrefillPush.missingHook(12);
    int duplicate = PrefillPush.duplicateHook(12);
    assertEquals(1, o.exitCode(), "a missing and a duplicate notification must fail the run");
    assertEquals(36, o.verifiedBlocks(), () -> o.problems().toString());
    assertEquals(24, o.layersVerified(), () -> o.problems().toString());
    assertEquals(List.of(), o.pushBadBlocks(), "every pushed byte is right");
    assertEquals(11, o.notified(), "every request but one was notified");
    assertEquals(10, o.pushVerified(), "neither the missing nor the duplicated request counts");
    List<String> problems = o.problems();
    assertEquals(3, problems.size(), problems::toString);
    assertTrue(
        problems
            .get(0)
            .startsWith(
                "push: NOT DELIVERED request-"
                    + missing
                    + ": the prefill's submission says NONE (3/3 WRITEs completed)"),
        problems::toString);
    assertEquals("push: MISSING notification request-" + missing, problems.get(1));
    assertTrue(
        problems
            .get(2)
            .startsWith(
                "push: DUPLICATE notification in push pass 1: tag 'request-"
                    + duplicate
                    + "', payload 'pass=0 blocks=3 bytes="),
        problems::toString);
    assertTrue(run.output().contains("RESULT: FAIL"), run.output());
  }

  @Test
  void optionsAreParsedAndBadOnesRefused() {
    KvOptions o = KvOptions.parse(List.of("--requests", "7", "--ordering=as-completed"));
    assertEquals(7, o.requests());
    assertEquals(StreamSettings.Ordering.AS_COMPLETED, o.ordering());
    assertEquals(Duration.ofSeconds(300), o.timeout());
    assertEquals(64, KvOptions.parse(List.of()).requests());
    assertTrue(KvOptions.parse(List.of()).warmup());
    assertFalse(KvOptions.parse(List.of("--no-warmup")).warmup());
    for (List<String> bad :
        List.of(
            List.of("--requests", "0"),
            List.of("--ordering", "sideways"),
            List.of("--requests"),
            List.of("--page-kib", "3"),
            List.of("--layer-depth", "1"),
            List.of("--layers", "1024", "--layer-pages", "1024"),
            List.of("--frobnicate", "1"))) {
      try {
        KvOptions.parse(bad);
        org.junit.jupiter.api.Assertions.fail("accepted " + bad);
      } catch (IllegalArgumentException expected) {
        // refused, as it should be
      }
    }
    assertEquals(
        2,
        new KvHandoff(new PrintStream(new ByteArrayOutputStream()))
            .run(List.of("--requests", "-1")));
  }

  @Test
  void thePlanIsDeterministicAndFitsThePool() {
    KvPlan plan = new KvPlan(64, 4, 2L << 20, 512L << 20, 20260101L);
    List<KvBlock> a = plan.blocks(1);
    assertEquals(a, plan.blocks(1));
    assertEquals(512L << 20, plan.regionBytes());
    List<KvBlock> byOffset = new java.util.ArrayList<>(a);
    byOffset.sort(java.util.Comparator.comparingLong(KvBlock::offset));
    long end = 0;
    for (KvBlock b : byOffset) {
      assertTrue(b.length() >= 128 << 10 && b.length() <= 2 << 20, b.toString());
      assertEquals(0, b.offset() % KvPlan.ALIGN, b.toString());
      assertTrue(b.offset() >= end, "blocks overlap at " + b);
      end = b.offset() + b.length();
      assertEquals(b, KvBlock.parse(b.toLine()));
    }
    assertTrue(end <= plan.regionBytes());
    // Larger than the pool: the pool grows to hold every block, no more.
    KvPlan big = new KvPlan(100, 3, 2L << 20, 1L << 20, 1);
    assertEquals(big.neededBytes(), big.regionBytes());
    KvBlock last =
        big.blocks(1).stream()
            .max(java.util.Comparator.comparingLong(KvBlock::offset))
            .orElseThrow();
    assertTrue(last.offset() + last.length() <= big.regionBytes());
  }
}
