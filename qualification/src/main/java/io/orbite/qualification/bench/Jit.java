package io.orbite.qualification.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/** The JIT's activity, so that a bench can keep compilations out of its timed runs. */
public final class Jit {
  private Jit() {}

  /**
   * Waits (untimed, at most 3 s) until the JIT's compiler threads have used less than 1 ms of CPU
   * in each of three 20 ms spells (a long C2 compilation shows as CPU before it ends).
   */
  public static void settle() throws InterruptedException {
    long deadline = System.nanoTime() + 3_000_000_000L;
    long last = compilerCpuNanos();
    int quietChecks = 0;
    while (quietChecks < 3 && System.nanoTime() - deadline < 0) {
      Thread.sleep(20);
      long now = compilerCpuNanos();
      quietChecks = now - last < 1_000_000L ? quietChecks + 1 : 0;
      last = now;
    }
  }

  /** Time the JIT compilers have spent so far (ms, as the JVM accounts it). */
  public static long millis() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported()
        ? jit.getTotalCompilationTime()
        : 0;
  }

  /**
   * CPU time of process {@code pid}'s JIT compiler threads (C1 and C2) so far, in nanoseconds: a
   * child engine's, which this JVM's own accounting cannot see (0 where /proc cannot be read).
   */
  public static long compilerCpuNanos(long pid) {
    return IoWorkers.sample(pid, "C1 CompilerThre", "C2 CompilerThre").runNanos();
  }

  /** CPU time of the JIT's compiler threads (C1 and C2), which moves while a compilation runs. */
  private static long compilerCpuNanos() {
    return IoWorkers.sample("C1 CompilerThre", "C2 CompilerThre").runNanos()
        + millis() * 1_000_000L;
  }
}
