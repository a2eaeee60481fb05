package io.orbite.qualification.example;

/**
 * When a phase's untimed warm-up passes stop: once two passes in a row compiled for at most {@link
 * #QUIET_JIT_MS} of JIT time in each JVM the phase runs in (as the JVMs count it, summed), at most
 * {@link #MAX_PASSES} passes, and no pass starts after {@link #MAX_SECONDS} of warm-up. The timed
 * pass then measures the engines, not the JIT compiling them: on two cores C2 competes with the
 * transfer, and a phase's per-request methods reach C2's thresholds only after several passes.
 */
final class Warmup {
  /** A pass that compiled for at most this long (ms) is quiet. */
  static final long QUIET_JIT_MS = 10;

  /** At most this many warm-up passes. */
  static final int MAX_PASSES = 12;

  /** No warm-up pass starts after this many seconds of warm-up. */
  static final long MAX_SECONDS = 20;

  private final long start = System.nanoTime();
  private int passes;
  private int quiet;

  /** Whether another warm-up pass runs. */
  boolean more() {
    return quiet < 2
        && passes < MAX_PASSES
        && (passes == 0 || System.nanoTime() - start < MAX_SECONDS * 1_000_000_000L);
  }

  /** One pass ran, and the {@code jvms} JVMs it ran in compiled for {@code jitMillis} in all. */
  void passed(long jitMillis, int jvms) {
    passes++;
    quiet = jitMillis <= QUIET_JIT_MS * jvms ? quiet + 1 : 0;
  }

  int passes() {
    return passes;
  }

  double seconds() {
    return (System.nanoTime() - start) / 1e9;
  }
}
