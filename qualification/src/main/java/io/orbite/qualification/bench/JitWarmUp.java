package io.orbite.qualification.bench;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.DoubleFunction;

/**
 * A warm-up that runs a bench's own loop until the JITs of both engine processes have settled under
 * it: in spells, until {@value #QUIET_SPELLS} spells in a row in which the JIT compiler threads of
 * this process and of the other engine's process used less than {@value #JIT_QUIET_SHARE} of the
 * wall time between them, or a longest warm-up passed. A path's methods are compiled by C2 only as
 * they turn hot under the load that uses them; on this 2-core host the RDMA slice path took 10 to
 * 20 s of it, at 60 to 80% of a core, and a figure timed before then measured the compilers
 * competing with the engine for the cores.
 */
final class JitWarmUp {
  /** The JITs' share of a spell's wall time below which they count as settled. */
  static final double JIT_QUIET_SHARE = 0.03;

  /** Consecutive quiet spells that end the warm-up. */
  static final int QUIET_SPELLS = 2;

  private JitWarmUp() {}

  /**
   * Runs {@code spell} (given the spell's seconds) until the JITs settled, {@code maxSeconds}
   * passed or a spell failed a task; prints how long it took and whether it settled.
   *
   * @param human where the line goes
   * @param name the figure's name, for that line
   * @param otherPid the other engine process, whose compiler threads count too
   * @return the warm-up's tasks, bytes and failures, for the figures' own checks
   */
  static BenchLoop.Run untilSettled(
      PrintStream human,
      String name,
      long otherPid,
      double spellSeconds,
      double maxSeconds,
      DoubleFunction<BenchLoop.Run> spell) {
    long start = System.nanoTime();
    long bytes = 0;
    long tasks = 0;
    long touched = 0;
    int failed = 0;
    int spells = 0;
    int quiet = 0;
    while (true) {
      long jitBefore = jitNanos(otherPid);
      long spellStart = System.nanoTime();
      BenchLoop.Run w = spell.apply(spellSeconds);
      long spellNanos = System.nanoTime() - spellStart;
      double jitShare = (double) (jitNanos(otherPid) - jitBefore) / spellNanos;
      bytes += w.bytes();
      tasks += w.tasks();
      touched = Math.max(touched, w.touchedBytes());
      failed += w.failed();
      spells++;
      quiet = jitShare < JIT_QUIET_SHARE ? quiet + 1 : 0;
      double elapsed = (System.nanoTime() - start) / 1e9;
      if (quiet == QUIET_SPELLS || elapsed >= maxSeconds || failed > 0) {
        human.printf(
            Locale.ROOT,
            "  %-22s warm-up %.1f s in %d spells; the JITs used %.1f%% of the last spell%s%n",
            name,
            elapsed,
            spells,
            jitShare * 100,
            quiet == QUIET_SPELLS ? "" : " (not settled: the figure includes compilation)");
        return new BenchLoop.Run(bytes, tasks, elapsed, touched, failed);
      }
    }
  }

  /** CPU time the JIT compilers of this process and of process {@code otherPid} used so far. */
  private static long jitNanos(long otherPid) {
    return Jit.compilerCpuNanos(ProcessHandle.current().pid()) + Jit.compilerCpuNanos(otherPid);
  }
}
