package io.orbite.engine.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Racing movers for the tests of what many threads move at once (lifecycles, gates, grants): each
 * mover on a platform thread of its own, all released by one signal.
 */
public final class Racers {
  private Racers() {}

  /**
   * Runs each of {@code movers} on a thread of its own, released together, and waits for them all.
   * A mover that throws (an assertion inside it) fails the caller after all have ended.
   *
   * @param movers what each thread does
   * @throws InterruptedException if interrupted while waiting
   */
  public static void race(List<? extends Runnable> movers) throws InterruptedException {
    CountDownLatch go = new CountDownLatch(1);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (Runnable mover : movers) {
      threads.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      go.await();
                    } catch (InterruptedException e) {
                      return;
                    }
                    try {
                      mover.run();
                    } catch (Throwable t) {
                      failed.compareAndSet(null, t);
                    }
                  }));
    }
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    if (failed.get() != null) {
      throw new AssertionError("a racing mover failed", failed.get());
    }
  }
}
