package io.orbite.qualification.contract;

import io.orbite.engine.fault.FaultHooks;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A fault hook that, once armed, holds the first worker that reaches its point until {@link
 * #release()}: a worker stuck while it owns a task's memory. By default the point is a TCP
 * requester lane about to move a READ payload into local memory; {@link #atSharedCopy()} holds an
 * SHM copy thread about to copy a task instead.
 */
public final class HeldWorker implements FaultHooks {
  private final boolean sharedCopy;
  private final AtomicBoolean armed = new AtomicBoolean();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch released = new CountDownLatch(1);
  private final AtomicReference<String> lane = new AtomicReference<>();

  public HeldWorker() {
    this(false);
  }

  private HeldWorker(boolean sharedCopy) {
    this.sharedCopy = sharedCopy;
  }

  /** Holds the SHM copy thread that is about to copy a task. */
  public static HeldWorker atSharedCopy() {
    return new HeldWorker(true);
  }

  public void arm() {
    armed.set(true);
  }

  @Override
  public void beforeReadPayload(String laneName) {
    if (!sharedCopy) {
      hold(laneName);
    }
  }

  @Override
  public void beforeSharedCopy(String laneName) {
    if (sharedCopy) {
      hold(laneName);
    }
  }

  private void hold(String laneName) {
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

  /** Waits until a worker is held; returns its lane's name. */
  public String awaitHeld(Duration timeout) throws InterruptedException {
    if (!entered.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("no worker reached the hook within " + timeout);
    }
    return lane.get();
  }

  public void release() {
    released.countDown();
  }
}
