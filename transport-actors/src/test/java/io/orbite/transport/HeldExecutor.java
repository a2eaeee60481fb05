package io.orbite.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A blocking-I/O executor a test can hold: while held, what it is given waits (an endpoint stays
 * opening, its open not started) until {@link #release}; otherwise it runs on a pool of its own.
 */
public final class HeldExecutor implements Executor {
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private final List<Runnable> held = new ArrayList<>();
  private boolean holding;

  /** From now on nothing starts until {@link #release}. */
  public synchronized void hold() {
    holding = true;
  }

  /** Starts everything held, and everything given from now on. */
  public void release() {
    List<Runnable> start;
    synchronized (this) {
      holding = false;
      start = List.copyOf(held);
      held.clear();
    }
    start.forEach(pool::execute);
  }

  /**
   * How many tasks wait for {@link #release}.
   *
   * @return the count
   */
  public synchronized int waiting() {
    return held.size();
  }

  @Override
  public synchronized void execute(Runnable task) {
    if (holding) {
      held.add(task);
    } else {
      pool.execute(task);
    }
  }

  /** Stops the pool's threads. */
  public void shutdown() {
    pool.shutdownNow();
  }
}
