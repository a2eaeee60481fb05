package io.orbite.engine.testkit;

import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;

/** Waiting in the actor tests: a check retried on a probe's schedule until it passes. */
public final class Probes {
  private Probes() {}

  /**
   * Waits (at most 10 s) until {@code check} passes.
   *
   * @param probe whose schedule retries the check
   * @param check assertions that pass once the actors got there
   */
  public static void eventually(TestProbe<?> probe, Runnable check) {
    probe.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          check.run();
          return null;
        });
  }
}
