package io.orbite.transport.rdma;

import io.orbite.transport.lane.LaneRuntime;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits on one rail's async-event descriptor ({@code Verbs.awaitAsyncEvent}, {@code poll(2)} on
 * hardware) on a thread of its own, {@code orbite-rdma-<device>-events} (made by {@link
 * LaneRuntime#startBlocking}), so that a port, GID or device event is acted on at once rather than
 * at the monitor's next one-second scan. It takes no event itself: it tells its context ({@code
 * pending}), whose scan drains and judges them as every scan does, and then waits for that scan to
 * end ({@link #scanned}, or at most {@link #SCAN_WAIT}) before it looks again, so a pending event
 * never makes it spin. It stops when told to, and before the device is closed ({@link #stop}); a
 * provider whose wait fails ends it, and the periodic scan still reads the events then.
 */
final class EventWatch implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(EventWatch.class);

  /** How long one wait lasts, so that a stop is seen within it. */
  static final int WAIT_MILLIS = 200;

  /** How long it waits for the scan it asked for before looking again. */
  static final Duration SCAN_WAIT = Duration.ofSeconds(2);

  private final Rail rail;
  private final Runnable pending;
  private final Semaphore scanned = new Semaphore(0);
  private volatile boolean stopped;
  private Thread thread;

  EventWatch(Rail rail, Runnable pending) {
    this.rail = rail;
    this.pending = pending;
  }

  void start() {
    thread = LaneRuntime.startBlocking("orbite-rdma-" + rail.device + "-events", this);
  }

  @Override
  public void run() {
    while (!stopped) {
      int r = rail.verbs.awaitAsyncEvent(rail.context, WAIT_MILLIS);
      if (stopped) {
        return;
      }
      if (r < 0) {
        LOG.warn(
            "{}: waiting for async events failed (errno {}); they are read at each scan only",
            rail.device,
            -r);
        return;
      }
      if (r > 0) {
        scanned.drainPermits();
        pending.run();
        try {
          scanned.tryAcquire(SCAN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /** A scan ended (it drained the events that were pending when it ran): look again. */
  void scanned() {
    scanned.release();
  }

  /**
   * Stops the thread and waits for it to end, at most {@code within} (one wait of {@link
   * #WAIT_MILLIS} at most, on a provider that does not see the interrupt).
   *
   * @return whether it ended
   */
  boolean stop(Duration within) {
    stopped = true;
    Thread t = thread;
    if (t == null) {
      return true;
    }
    t.interrupt();
    try {
      return t.join(within);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
