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
 * SHM copy thread about to copy a task instead, and {@link #atRdmaPost()} an RDMA CQ lane about to
 * post a granted slice's payload.
 */
public final class HeldWorker implements FaultHooks {
  /** Where a worker is held. */
  private enum Point {
    READ_PAYLOAD,
    SHARED_COPY,
    RDMA_POST
  }

  private final Point point;
  private final AtomicBoolean armed = new AtomicBoolean();
  private volatile CountDownLatch entered = new CountDownLatch(1);
  private volatile CountDownLatch released = new CountDownLatch(1);
  private final AtomicReference<String> lane = new AtomicReference<>();

  public HeldWorker() {
    this(Point.READ_PAYLOAD);
  }

  private HeldWorker(Point point) {
    this.point = point;
  }

  /** Holds the SHM copy thread that is about to copy a task. */
  public static HeldWorker atSharedCopy() {
    return new HeldWorker(Point.SHARED_COPY);
  }

  /**
   * Holds the RDMA CQ lane that is about to post a granted slice's payload: the lane's thread, so
   * nothing else queued on that lane is sent meanwhile.
   */
  public static HeldWorker atRdmaPost() {
    return new HeldWorker(Point.RDMA_POST);
  }

  /**
   * Holds the next worker that reaches the point. May be called again once the previous hold was
   * released: each arming holds one worker.
   */
  public void arm() {
    entered = new CountDownLatch(1);
    released = new CountDownLatch(1);
    armed.set(true);
  }

  @Override
  public void beforeReadPayload(String laneName) {
    if (point == Point.READ_PAYLOAD) {
      hold(laneName);
    }
  }

  @Override
  public void beforeSharedCopy(String laneName) {
    if (point == Point.SHARED_COPY) {
      hold(laneName);
    }
  }

  @Override
  public void beforeRdmaPost(String laneName, int qpNum, long wrId, boolean write) {
    if (point == Point.RDMA_POST) {
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

  /** Lets the held worker go; disarms the hook if no worker reached it. */
  public void release() {
    armed.set(false);
    released.countDown();
  }
}
