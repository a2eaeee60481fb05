package io.orbite.qualification.contract;

import io.orbite.engine.spi.FaultHooks;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A fault hook that, once armed, holds the first requester lane that is about to move a READ
 * payload into local memory, until {@link #release()}: a worker stuck while it owns a task's memory.
 */
final class HeldWorker implements FaultHooks {
  private final AtomicBoolean armed = new AtomicBoolean();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch released = new CountDownLatch(1);
  private final AtomicReference<String> lane = new AtomicReference<>();

  void arm() {
    armed.set(true);
  }

  @Override
  public void beforeReadPayload(String laneName) {
    if (!armed.compareAndSet(true, false)) {
      return;
    }
    lane.set(laneName);
    entered.countDown();
    try {
      // Bounded so that a failed test never leaves a thread behind for good.
      released.await(5, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits until a lane is held; returns its name. */
  String awaitHeld(Duration timeout) throws InterruptedException {
    if (!entered.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("no lane reached a READ payload within " + timeout);
    }
    return lane.get();
  }

  void release() {
    released.countDown();
  }
}
