package io.orbite.transport.lane;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;

/**
 * The work handed to one lane, oldest first: any thread adds, the lane's thread takes. Guarded by
 * its own monitor, over an array deque, so that handing over an item allocates nothing; {@link
 * #count} reads without the lock, so an idle lane looks at an empty inbox for one volatile read.
 * Once {@link #close}d it refuses every item ({@link #offer} answers false, and the caller fails
 * the item, never sent), and hands back what it still held: no item is left behind between a lane's
 * end and a late producer.
 *
 * @param <T> the lane's unit of work (a frame, a task, a command)
 */
public final class LaneInbox<T> {
  private ArrayDeque<T> items = new ArrayDeque<>(256);
  private volatile int count;
  private boolean closed;

  /**
   * Adds {@code item}; any thread.
   *
   * @param item the work
   * @return false when the inbox is closed (the item was not taken)
   */
  public boolean offer(T item) {
    synchronized (this) {
      if (closed) {
        return false;
      }
      items.add(item);
      count = items.size();
      return true;
    }
  }

  /**
   * Adds every item of {@code batch}, in order, under one lock; any thread.
   *
   * @param batch the work
   * @return false when the inbox is closed (none was taken)
   */
  public boolean offerAll(Collection<T> batch) {
    synchronized (this) {
      if (closed) {
        return false;
      }
      items.addAll(batch);
      count = items.size();
      return true;
    }
  }

  /**
   * How many items wait, read without the lock (exact only on the lane's thread, which alone takes
   * them; a producer may add one any moment).
   *
   * @return the count
   */
  public int count() {
    return count;
  }

  /**
   * Hands every waiting item to {@code into}, oldest first, on the lane's thread.
   *
   * @param into where each item goes (runs under the inbox's lock: keep it short, no I/O)
   * @return how many were taken
   */
  public int drainTo(Consumer<T> into) {
    if (count == 0) {
      return 0;
    }
    synchronized (this) {
      int n = items.size();
      T item;
      while ((item = items.poll()) != null) {
        into.accept(item);
      }
      count = 0;
      return n;
    }
  }

  /**
   * Takes every waiting item at once by exchanging the inbox's deque for {@code empty}, so that
   * producers wait for one reference swap, not for a copy.
   *
   * @param empty an empty deque the lane owns; the inbox keeps it
   * @return the deque that held the waiting items, now the lane's
   */
  public ArrayDeque<T> swap(ArrayDeque<T> empty) {
    synchronized (this) {
      ArrayDeque<T> taken = items;
      items = empty;
      count = 0;
      return taken;
    }
  }

  /**
   * Moves the newest half of the waiting items, at most {@code max}, to {@code into}: an idle
   * sibling lane helping a busy one.
   *
   * @param into where the items go
   * @param max the most to take
   * @return how many were taken
   */
  public int stealNewestHalf(Collection<T> into, int max) {
    synchronized (this) {
      int n = Math.min(max, items.size() / 2);
      for (int k = 0; k < n; k++) {
        into.add(items.pollLast());
      }
      count = items.size();
      return n;
    }
  }

  /**
   * Refuses every later item and returns the ones still waiting, oldest first.
   *
   * @return what the lane must still fail
   */
  public List<T> close() {
    synchronized (this) {
      closed = true;
      List<T> left = new ArrayList<>(items);
      items.clear();
      count = 0;
      return left;
    }
  }

  /**
   * Whether {@link #close} was called.
   *
   * @return true once closed
   */
  public boolean closed() {
    synchronized (this) {
      return closed;
    }
  }
}
