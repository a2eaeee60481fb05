package io.orbite.transport.rdma;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The {@code rdma.maxDirectBytes} budget of one engine: bytes of registered memory on loan to the
 * RDMA devices at once. A requester task charges all its slices' bytes in one step, before any
 * grant is asked or work request posted, and each slice returns its share at its drain (its one
 * receipt); a task that does not fit now waits, in arrival order, until enough is returned ({@link
 * #chargeOrWait}), and one larger than the whole budget is refused. A source window charges its
 * length before it is bound ({@link #chargeWithin}: its reader thread waits a bounded time, then
 * refuses) and returns it when the window is deallocated. A share whose drain is never proven (a QP
 * or window whose release failed) is never returned. Thread-safe: requester dispatch threads, lanes
 * and source readers use it, under one lock held for a few steps.
 */
final class DirectBytes {
  /**
   * A task waiting for its charge: started with it once it fits, or refused; or, with a {@code
   * timedOut}, told so once {@link #expire} finds its deadline passed.
   */
  private record Waiter(
      long bytes,
      Object owner,
      Runnable start,
      Consumer<String> refuse,
      long deadlineNanos,
      Runnable timedOut) {}

  private final String key;
  private final long limitBytes;
  private long usedBytes;
  private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();

  DirectBytes(long limitBytes) {
    this("rdma.maxDirectBytes", limitBytes);
  }

  /**
   * A budget of {@code limit} units under the configuration key {@code key}: the same ordered
   * charge-or-wait rules counting something else (a requester's reserved parents, {@code
   * rdma.maxGrants}: one unit each).
   */
  DirectBytes(String key, long limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException(key + " must be positive: " + limit);
    }
    this.key = key;
    this.limitBytes = limit;
  }

  /**
   * Charges {@code bytes} if they fit under the limit with what is charged now and no task waits
   * before them; all or nothing.
   *
   * @return whether they were charged
   */
  synchronized boolean tryCharge(long bytes) {
    requirePositive(bytes);
    if (!waiting.isEmpty() || bytes > limitBytes - usedBytes) {
      return false;
    }
    usedBytes += bytes;
    return true;
  }

  /**
   * Charges {@code bytes} now when they fit and nobody waits before them, and returns true; or
   * queues {@code start} to run (on the thread that returns the charge that makes room, with the
   * bytes charged) and returns false. A waiter that is {@link #cancel}led instead hears why through
   * {@code refuse}.
   *
   * @param bytes at most {@link #limitBytes()}
   * @param owner who the waiter belongs to, for {@link #cancel}
   * @throws IllegalArgumentException if {@code bytes} is not positive or beyond the whole budget
   */
  boolean chargeOrWait(long bytes, Object owner, Runnable start, Consumer<String> refuse) {
    return chargeOrWait(bytes, owner, start, refuse, 0, null);
  }

  /**
   * {@link #chargeOrWait(long, Object, Runnable, Consumer)}, and a waiter that {@link #expire}
   * finds past {@code deadlineNanos} ({@link System#nanoTime()}) is removed uncharged and hears it
   * through {@code timedOut} (none when {@code timedOut} is null).
   */
  boolean chargeOrWait(
      long bytes,
      Object owner,
      Runnable start,
      Consumer<String> refuse,
      long deadlineNanos,
      Runnable timedOut) {
    requirePositive(bytes);
    if (bytes > limitBytes) {
      throw new IllegalArgumentException(refusal(bytes, "a charge") + " even alone");
    }
    synchronized (this) {
      if (waiting.isEmpty() && bytes <= limitBytes - usedBytes) {
        usedBytes += bytes;
        return true;
      }
      waiting.addLast(new Waiter(bytes, owner, start, refuse, deadlineNanos, timedOut));
      return false;
    }
  }

  /**
   * Charges {@code bytes}, waiting on this thread until they fit (after the queued {@link
   * #chargeOrWait} tasks) for at most {@code timeoutNanos}, or until {@code abandoned} says the
   * caller gave up: a source's reader thread, whose grant requests queue behind it meanwhile.
   *
   * @return whether they were charged
   */
  synchronized boolean chargeWithin(
      long bytes, long timeoutNanos, java.util.function.BooleanSupplier abandoned)
      throws InterruptedException {
    requirePositive(bytes);
    if (bytes > limitBytes) {
      return false;
    }
    long deadline = System.nanoTime() + timeoutNanos;
    while (!(waiting.isEmpty() && bytes <= limitBytes - usedBytes)) {
      long left = deadline - System.nanoTime();
      if (left <= 0 || abandoned.getAsBoolean()) {
        return false;
      }
      // Woken by every release; the bound re-checks abandonment.
      java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(
          this, Math.min(left, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(50)));
    }
    usedBytes += bytes;
    return true;
  }

  /**
   * Returns {@code bytes} of an earlier charge, then starts the waiters that fit now, oldest first
   * (stopping at the first that does not, so a large one is not passed over for ever).
   */
  void release(long bytes) {
    List<Waiter> started = null;
    synchronized (this) {
      long left = usedBytes - bytes;
      if (bytes <= 0 || left < 0) {
        throw new IllegalStateException(
            key
                + " released beyond their charges: "
                + bytes
                + " B released, "
                + usedBytes
                + " B charged");
      }
      usedBytes = left;
      notifyAll(); // a source reader waiting in chargeWithin
      started = startFitting(null);
    }
    if (started != null) {
      for (Waiter w : started) {
        w.start().run();
      }
    }
  }

  /** Charges and takes the waiters that fit now, oldest first (under the lock). */
  private List<Waiter> startFitting(List<Waiter> started) {
    while (!waiting.isEmpty() && waiting.peekFirst().bytes() <= limitBytes - usedBytes) {
      Waiter w = waiting.pollFirst();
      usedBytes += w.bytes();
      if (started == null) {
        started = new ArrayList<>(2);
      }
      started.add(w);
    }
    return started;
  }

  /**
   * Removes every waiter of {@code owner} with a deadline that passed by {@code nowNanos},
   * uncharged, and tells each through its {@code timedOut}; then starts the waiters that fit now
   * (one removed from the head may have held them back).
   */
  void expire(Object owner, long nowNanos) {
    List<Waiter> late = null;
    List<Waiter> started;
    synchronized (this) {
      if (waiting.isEmpty()) {
        return;
      }
      for (var it = waiting.iterator(); it.hasNext(); ) {
        Waiter w = it.next();
        if (w.owner() == owner && w.timedOut() != null && nowNanos - w.deadlineNanos() > 0) {
          it.remove();
          if (late == null) {
            late = new ArrayList<>(2);
          }
          late.add(w);
        }
      }
      if (late == null) {
        return;
      }
      started = startFitting(null);
    }
    for (Waiter w : late) {
      w.timedOut().run();
    }
    if (started != null) {
      for (Waiter w : started) {
        w.start().run();
      }
    }
  }

  /**
   * Refuses every waiter of {@code owner} with {@code why} (its channel closed): none is charged.
   */
  void cancel(Object owner, String why) {
    List<Waiter> refused = new ArrayList<>();
    synchronized (this) {
      waiting.removeIf(
          w -> {
            if (w.owner() == owner) {
              refused.add(w);
              return true;
            }
            return false;
          });
    }
    for (Waiter w : refused) {
      w.refuse().accept(why);
    }
  }

  synchronized long usedBytes() {
    return usedBytes;
  }

  /** Bytes of the tasks waiting for their charge. */
  synchronized long waitingBytes() {
    long n = 0;
    for (Waiter w : waiting) {
      n += w.bytes();
    }
    return n;
  }

  private static void requirePositive(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("a charge must be positive: " + bytes);
    }
  }

  long limitBytes() {
    return limitBytes;
  }

  /** Why {@code bytes} were refused, for the receipt or grant answer that says so. */
  String refusal(long bytes, String what) {
    return "rdma.maxDirectBytes: "
        + what
        + " of "
        + bytes
        + " B does not fit; "
        + usedBytes()
        + " of "
        + limitBytes
        + " B are on loan to the RDMA devices";
  }
}
