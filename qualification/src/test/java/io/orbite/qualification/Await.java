package io.orbite.qualification;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Waits for a condition with a deadline: the one probe tests use instead of sleeping. */
public final class Await {
  private Await() {}

  /**
   * Spins, then parks briefly, until {@code condition} holds or {@code timeout} passes.
   *
   * @return whether the condition held in time
   */
  public static boolean until(Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    int spins = 0;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return condition.getAsBoolean();
      }
      if (++spins < 100) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(1_000_000);
      }
    }
    return true;
  }
}
