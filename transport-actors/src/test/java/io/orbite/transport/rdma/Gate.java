package io.orbite.transport.rdma;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A point in a thread's path (a lane's post, a session's step) that the test can hold shut, and see
 * reached. A held gate lets its thread go after 20 s at the latest, so a failed test cannot hang.
 */
final class Gate {
  private volatile CountDownLatch shut;
  final AtomicInteger reached = new AtomicInteger();

  /** From now on a thread that reaches the gate waits at it until {@link #release}. */
  void hold() {
    shut = new CountDownLatch(1);
  }

  /** Lets every waiting thread go, and those that come later pass. */
  void release() {
    CountDownLatch s = shut;
    shut = null;
    if (s != null) {
      s.countDown();
    }
  }

  /** Called by the thread under test where the gate stands: counts it, and waits while held. */
  void pass() {
    reached.incrementAndGet();
    CountDownLatch s = shut;
    if (s != null) {
      try {
        s.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
