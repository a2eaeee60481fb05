package io.orbite.qualification.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The warm-up's stopping rules and sums, with spells that move nothing and take no time: a failed
 * spell ends it at once, it ends settled or out of time, and what it returns adds up every spell.
 */
class JitWarmUpTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final PrintStream human = new PrintStream(out, true, StandardCharsets.UTF_8);
  private final long self = ProcessHandle.current().pid();

  @Test
  void aSpellWithAFailedTaskEndsTheWarmUpAtOnce() {
    AtomicInteger spells = new AtomicInteger();
    BenchLoop.Run r =
        JitWarmUp.untilSettled(
            human,
            "x",
            self,
            0.01,
            30,
            s -> {
              spells.incrementAndGet();
              return new BenchLoop.Run(10, 1, s, 10, 1);
            });
    assertEquals(1, spells.get());
    assertEquals(1, r.failed());
    assertTrue(out.toString(StandardCharsets.UTF_8).contains("not settled"), out::toString);
  }

  @Test
  void itAddsUpEverySpellAndEndsWithinItsLongestTime() {
    AtomicInteger spells = new AtomicInteger();
    BenchLoop.Run r =
        JitWarmUp.untilSettled(
            human,
            "x",
            self,
            0.05,
            0.5,
            s -> {
              spells.incrementAndGet();
              return new BenchLoop.Run(100, 3, s, 7 * spells.get(), 0);
            });
    int n = spells.get();
    // Settled (two quiet spells) or out of time (0.5 s): either way it ended, after at least the
    // two spells that settling needs or the one that ran past its time.
    assertTrue(n >= 1, () -> n + " spells");
    assertTrue(r.seconds() >= 0.5 || n >= JitWarmUp.QUIET_SPELLS, () -> r + " after " + n);
    assertEquals(100L * n, r.bytes());
    assertEquals(3L * n, r.tasks());
    assertEquals(7L * n, r.touchedBytes(), "the largest range any spell touched");
    assertEquals(0, r.failed());
    assertTrue(out.toString(StandardCharsets.UTF_8).contains("warm-up"), out::toString);
  }
}
