package io.orbite.engine.priority;

import io.orbite.engine.Priority;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Objects;

/**
 * The post queue of one worker (C14): ready work in three tiers, {@link Priority#HIGH} first, then
 * {@link Priority#MEDIUM}, then {@link Priority#LOW}, FIFO within a tier (work of one batch keeps
 * its order). Work taken by {@link #poll} is posted and never preempted; completion, receive and
 * cleanup work does not go through the queue at all (the worker runs it first).
 *
 * <p>Aging: {@link #promote} runs at most once per millisecond and moves work up one tier per pass
 * (MEDIUM to HIGH, then LOW to MEDIUM), keeping each entry's original enqueue time, so old work
 * progresses against new HIGH arrivals. By default an aged head (waiting at least the promotion
 * timeout, 10 ms) promotes its whole tier; with {@code perEntry} only the entries that aged out
 * individually move. Promoted entries join their new tier in enqueue order (time, then the order of
 * the offers). Aging orders work; it is no deadline guarantee.
 *
 * <p>Not thread-safe: one worker owns it.
 *
 * @param <T> the work
 */
public final class PostQueue<T> {
  /** The reference's promotion timeout. */
  public static final Duration DEFAULT_PROMOTION_TIMEOUT = Duration.ofMillis(10);

  private static final long PASS_NANOS = 1_000_000L;

  private record Entry<T>(T work, long enqueuedNanos, long seq) {
    boolean before(Entry<?> other) {
      return enqueuedNanos != other.enqueuedNanos
          ? enqueuedNanos - other.enqueuedNanos < 0
          : seq < other.seq;
    }
  }

  @SuppressWarnings("unchecked")
  private final ArrayDeque<Entry<T>>[] tiers =
      new ArrayDeque[] {new ArrayDeque<>(), new ArrayDeque<>(), new ArrayDeque<>()};

  private final long timeoutNanos;
  private final boolean perEntry;
  private long lastPass = Long.MIN_VALUE;
  private long promotions;
  private long offered;

  /**
   * A queue promoting after {@code timeout} (positive), its whole tier at once unless {@code
   * perEntry}.
   */
  public PostQueue(Duration timeout, boolean perEntry) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("promotion timeout must be positive, got " + timeout);
    }
    this.timeoutNanos = timeout.toNanos();
    this.perEntry = perEntry;
  }

  /** Queues {@code work} at {@code priority}, enqueued at {@code nowNanos}. */
  public void offer(T work, Priority priority, long nowNanos) {
    tiers[priority.ordinal()].addLast(
        new Entry<>(Objects.requireNonNull(work, "work"), nowNanos, offered++));
  }

  /** The next work to post (the first of the highest tier holding any), or null when empty. */
  public T poll() {
    for (ArrayDeque<Entry<T>> tier : tiers) {
      Entry<T> e = tier.pollFirst();
      if (e != null) {
        return e.work();
      }
    }
    return null;
  }

  /** Work queued in all tiers. */
  public int size() {
    return tiers[0].size() + tiers[1].size() + tiers[2].size();
  }

  /** Work queued in {@code priority}'s tier now (promoted work counts where it is). */
  public int size(Priority priority) {
    return tiers[priority.ordinal()].size();
  }

  /** Entries moved up a tier since the queue was made. */
  public long promotions() {
    return promotions;
  }

  /**
   * One aging pass at {@code nowNanos}: does nothing within a millisecond of the last pass;
   * otherwise MEDIUM work that waited at least the timeout moves to HIGH, then LOW work to MEDIUM
   * (its whole tier when its head aged out, or only the aged entries with {@code perEntry}).
   */
  public void promote(long nowNanos) {
    if (lastPass != Long.MIN_VALUE && nowNanos - lastPass < PASS_NANOS) {
      return;
    }
    lastPass = nowNanos;
    moveUp(Priority.MEDIUM.ordinal(), nowNanos);
    moveUp(Priority.LOW.ordinal(), nowNanos);
  }

  private void moveUp(int from, long nowNanos) {
    ArrayDeque<Entry<T>> source = tiers[from];
    Entry<T> head = source.peekFirst();
    if (head == null || nowNanos - head.enqueuedNanos() < timeoutNanos) {
      return; // the head is the oldest: nothing in the tier aged out
    }
    ArrayDeque<Entry<T>> moving = new ArrayDeque<>();
    if (perEntry) {
      Iterator<Entry<T>> it = source.iterator();
      while (it.hasNext()) {
        Entry<T> e = it.next();
        if (nowNanos - e.enqueuedNanos() >= timeoutNanos) {
          moving.addLast(e);
          it.remove();
        }
      }
    } else {
      moving.addAll(source);
      source.clear();
    }
    promotions += moving.size();
    tiers[from - 1] = merge(tiers[from - 1], moving);
  }

  /** Both FIFOs as one, in enqueue order (time, then the order of the offers). */
  private static <T> ArrayDeque<Entry<T>> merge(
      ArrayDeque<Entry<T>> into, ArrayDeque<Entry<T>> more) {
    ArrayDeque<Entry<T>> out = new ArrayDeque<>(into.size() + more.size());
    while (!into.isEmpty() || !more.isEmpty()) {
      if (more.isEmpty() || (!into.isEmpty() && into.peekFirst().before(more.peekFirst()))) {
        out.addLast(into.pollFirst());
      } else {
        out.addLast(more.pollFirst());
      }
    }
    return out;
  }
}
