package io.orbite.engine.notify;

import io.orbite.engine.ReceivedNotification;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * The receiver's bounded inbox of notifications: the connections' threads put into it, and the
 * takers ({@code Engine.notifications()} streams, {@code pollNotifications}, {@code
 * pollNotification}) take from it, each notification by exactly one of them.
 *
 * <p>Nothing spins and nothing is handed on: a taker that finds the inbox empty registers a {@link
 * Waiter}, and the thread that puts the next notification in wakes one waiter itself (a blocked
 * poller is unparked, a stream gets its stage's callback). A woken waiter looks again and may find
 * nothing (another taker was quicker); it then waits again. So wakes may be spurious but are never
 * lost: a waiter that leaves after it was woken passes the wake on ({@link #leave}).
 *
 * <p>Bounded twice: {@code notifications.inboxCapacity} notifications and {@code
 * notifications.inboxBytes} bytes (tags and payloads); a notification beyond either is refused
 * ({@link Offer#FULL}), and its sender is answered RESOURCE_EXHAUSTED. Thread-safe; every method
 * holds the inbox's lock only for a few field updates.
 */
public final class NotificationInbox {
  /** What became of an offered notification. */
  public enum Offer {
    ACCEPTED,
    /** Refused: the inbox holds its capacity in notifications or in bytes. */
    FULL,
    /** Refused: the engine is closing. */
    CLOSED
  }

  /** A taker waiting for a notification: woken once, from the thread that put one in. */
  public interface Waiter {
    /** Called without the inbox's lock; must not block. */
    void wake();
  }

  private record Held(ReceivedNotification notification, long bytes) {}

  private final int capacity;
  private final long maxBytes;
  private final ArrayDeque<Held> held = new ArrayDeque<>();
  private final LinkedHashSet<Waiter> waiters = new LinkedHashSet<>();
  private long bytes;
  private boolean closed;

  /**
   * @param capacity most notifications held at once
   * @param maxBytes most bytes (tags and payloads) held at once
   */
  public NotificationInbox(int capacity, long maxBytes) {
    this.capacity = capacity;
    this.maxBytes = maxBytes;
  }

  /** The bound in notifications. */
  public int capacity() {
    return capacity;
  }

  /** The bound in bytes. */
  public long maxBytes() {
    return maxBytes;
  }

  /**
   * Puts {@code n} in, unless the inbox is full or closed, and wakes one waiter.
   *
   * @param n the notification
   * @param size its tag's and payload's bytes, as the bound counts them
   * @return whether it was accepted
   */
  public Offer offer(ReceivedNotification n, long size) {
    Waiter next;
    synchronized (this) {
      if (closed) {
        return Offer.CLOSED;
      }
      if (held.size() >= capacity || bytes + size > maxBytes) {
        return Offer.FULL;
      }
      held.addLast(new Held(n, size));
      bytes += size;
      next = takeWaiter();
    }
    if (next != null) {
      next.wake();
    }
    return Offer.ACCEPTED;
  }

  /** The oldest notification, or null when there is none. */
  public ReceivedNotification poll() {
    synchronized (this) {
      return takeHeld();
    }
  }

  /**
   * Up to {@code max} notifications, oldest first, without waiting.
   *
   * @param max how many at most, positive
   * @return the notifications taken; empty when there were none
   */
  public List<ReceivedNotification> drain(int max) {
    List<ReceivedNotification> out = new ArrayList<>(Math.min(max, 64));
    synchronized (this) {
      ReceivedNotification n;
      while (out.size() < max && (n = takeHeld()) != null) {
        out.add(n);
      }
    }
    return out;
  }

  /**
   * Takes the oldest notification, or, when there is none and the inbox is open, registers {@code
   * waiter} to be woken once when one arrives (or when the inbox closes).
   *
   * @return the notification, or null (registered, or closed: see {@link #closedAndEmpty})
   */
  public ReceivedNotification pollOrWait(Waiter waiter) {
    synchronized (this) {
      ReceivedNotification n = takeHeld();
      if (n == null && !closed) {
        waiters.add(waiter);
      }
      return n;
    }
  }

  /**
   * {@code waiter} no longer waits. If it was woken already, and a notification is there, another
   * waiter is woken in its place, so that no wake is lost to a taker that left.
   */
  public void leave(Waiter waiter) {
    Waiter next = null;
    synchronized (this) {
      if (!waiters.remove(waiter) && !held.isEmpty()) {
        next = takeWaiter();
      }
    }
    if (next != null) {
      next.wake();
    }
  }

  /**
   * Waits at most {@code timeoutNanos} for a notification, parked (never spinning); the thread that
   * puts one in unparks this one.
   *
   * @return the notification, or null when none came in time or the inbox closed
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public ReceivedNotification poll(long timeoutNanos) throws InterruptedException {
    Thread me = Thread.currentThread();
    Waiter waiter = () -> LockSupport.unpark(me);
    long deadline = System.nanoTime() + timeoutNanos;
    try {
      while (true) {
        ReceivedNotification n = pollOrWait(waiter);
        if (n != null) {
          return n;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0 || closedAndEmpty()) {
          return null;
        }
        LockSupport.parkNanos(this, left);
        if (Thread.interrupted()) {
          throw new InterruptedException("pollNotification interrupted");
        }
      }
    } finally {
      leave(waiter);
    }
  }

  /** Whether the inbox is closed and holds nothing more: a stream of it ends. */
  public synchronized boolean closedAndEmpty() {
    return closed && held.isEmpty();
  }

  /** How many notifications it holds now. */
  public synchronized int size() {
    return held.size();
  }

  /**
   * Refuses every later offer and wakes every waiter; what it holds can still be taken, and a
   * stream ends once it is empty. Idempotent.
   */
  public void close() {
    List<Waiter> all;
    synchronized (this) {
      closed = true;
      all = new ArrayList<>(waiters);
      waiters.clear();
    }
    all.forEach(Waiter::wake);
  }

  private ReceivedNotification takeHeld() {
    Held h = held.pollFirst();
    if (h == null) {
      return null;
    }
    bytes -= h.bytes();
    return h.notification();
  }

  private Waiter takeWaiter() {
    Iterator<Waiter> it = waiters.iterator();
    if (!it.hasNext()) {
      return null;
    }
    Waiter w = it.next();
    it.remove();
    return w;
  }
}
