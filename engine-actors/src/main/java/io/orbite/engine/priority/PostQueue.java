package io.orbite.engine.priority;

import io.orbite.engine.Priority;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Predicate;

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
 * <p>It sits on the data path, so it allocates nothing per entry: each tier is a ring of parallel
 * arrays (the work, its enqueue time, its offer number) that grows to the largest backlog seen and
 * then stays, and a promotion merges into a spare ring that changes places with the tier it
 * replaces.
 *
 * <p>Not thread-safe: one worker owns it.
 *
 * @param <T> the work
 */
public final class PostQueue<T> {
  /** The reference's promotion timeout. */
  public static final Duration DEFAULT_PROMOTION_TIMEOUT = Duration.ofMillis(10);

  private static final long PASS_NANOS = 1_000_000L;

  /** The tiers, indexed by {@link Priority#ordinal()}. */
  private final Ring[] tiers = {new Ring(), new Ring(), new Ring()};

  /** Empty; the target of the next promotion's merge. */
  private Ring spare = new Ring();

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
    tiers[priority.ordinal()].add(Objects.requireNonNull(work, "work"), nowNanos, offered++);
  }

  /** The next work to post (the first of the highest tier holding any), or null when empty. */
  public T poll() {
    for (Ring tier : tiers) {
      if (tier.size != 0) {
        return work(tier.pollFirst());
      }
    }
    return null;
  }

  /** Work queued in all tiers. */
  public int size() {
    return tiers[0].size + tiers[1].size + tiers[2].size;
  }

  /** Work queued in {@code priority}'s tier now (promoted work counts where it is). */
  public int size(Priority priority) {
    return tiers[priority.ordinal()].size;
  }

  /** Whether no work is queued in any tier. */
  public boolean isEmpty() {
    return size() == 0;
  }

  /** Entries moved up a tier since the queue was made. */
  public long promotions() {
    return promotions;
  }

  /**
   * Removes every entry that {@code which} accepts and hands each to {@code removed}, in the order
   * {@link #poll} would have taken them; the others keep their tier, order and age. For a worker's
   * sweep of work that must no longer be posted (cancelled, past its deadline). An entry has left
   * the queue before it is handed over; if either function throws, the entries not yet looked at
   * stay queued, and so does the one {@code which} threw on. Neither function may use this queue.
   *
   * @return how many entries were removed
   */
  public int removeIf(Predicate<? super T> which, Consumer<? super T> removed) {
    int n = 0;
    for (Ring tier : tiers) {
      n += tier.removeIf(which, removed);
    }
    return n;
  }

  /**
   * Removes every entry and hands each to {@code to}, in the order {@link #poll} would take them
   * (for a worker that ends and fails or hands over what it never posted). {@code to} may not use
   * this queue.
   *
   * @return how many entries were removed
   */
  public int drainTo(Consumer<? super T> to) {
    int n = 0;
    for (T work = poll(); work != null; work = poll()) {
      to.accept(work);
      n++;
    }
    return n;
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

  /**
   * Moves the aged work of tier {@code from} one tier up, merged with what is there in enqueue
   * order: one walk over the source, whose staying entries close ranks in place, while the spare
   * ring receives the merge and then replaces the upper tier (which becomes the spare).
   */
  private void moveUp(int from, long nowNanos) {
    Ring source = tiers[from];
    if (source.size == 0 || nowNanos - source.enqueuedNanos(0) < timeoutNanos) {
      return; // the head is the oldest: nothing in the tier aged out
    }
    Ring into = tiers[from - 1];
    Ring out = spare;
    out.ensureCapacity(into.size + source.size);
    int taken = 0;
    int kept = 0;
    int moved = 0;
    int n = source.size;
    for (int r = 0; r < n; r++) {
      long at = source.enqueuedNanos(r);
      if (perEntry && nowNanos - at < timeoutNanos) {
        source.moveWithin(r, kept++);
        continue;
      }
      long seq = source.seq(r);
      while (taken < into.size && into.before(taken, at, seq)) {
        out.addFrom(into, taken++);
      }
      out.addFrom(source, r);
      moved++;
    }
    while (taken < into.size) {
      out.addFrom(into, taken++);
    }
    source.truncate(kept);
    into.truncate(0);
    tiers[from - 1] = out;
    spare = into;
    promotions += moved;
  }

  @SuppressWarnings("unchecked")
  private T work(Object o) {
    return (T) o;
  }

  /**
   * One tier: a FIFO ring of entries held as three arrays kept in step, growing by doubling (the
   * only allocation, and only past the largest size reached so far).
   */
  private static final class Ring {
    private static final int INITIAL_CAPACITY = 16;

    private Object[] work = new Object[INITIAL_CAPACITY];
    private long[] enqueued = new long[INITIAL_CAPACITY];
    private long[] seqs = new long[INITIAL_CAPACITY];
    private int mask = INITIAL_CAPACITY - 1;
    private int head;
    int size;

    private int slot(int i) {
      return (head + i) & mask;
    }

    long enqueuedNanos(int i) {
      return enqueued[slot(i)];
    }

    long seq(int i) {
      return seqs[slot(i)];
    }

    /**
     * Whether entry {@code i} was enqueued before an entry of time {@code at} and offer {@code
     * seq}.
     */
    boolean before(int i, long at, long seq) {
      int s = slot(i);
      return enqueued[s] != at ? enqueued[s] - at < 0 : seqs[s] < seq;
    }

    void add(Object w, long at, long seq) {
      ensureCapacity(size + 1);
      int s = slot(size++);
      work[s] = w;
      enqueued[s] = at;
      seqs[s] = seq;
    }

    /** Appends entry {@code i} of {@code other}, which keeps it until it is truncated. */
    void addFrom(Ring other, int i) {
      int o = other.slot(i);
      add(other.work[o], other.enqueued[o], other.seqs[o]);
    }

    Object pollFirst() {
      Object w = work[head];
      work[head] = null;
      head = (head + 1) & mask;
      size--;
      return w;
    }

    /** Copies entry {@code from} to position {@code to} (not after it); for closing ranks. */
    void moveWithin(int from, int to) {
      if (from != to) {
        int f = slot(from);
        int t = slot(to);
        work[t] = work[f];
        enqueued[t] = enqueued[f];
        seqs[t] = seqs[f];
      }
    }

    /** Keeps the first {@code n} entries, dropping the references of the rest. */
    void truncate(int n) {
      for (int i = n; i < size; i++) {
        work[slot(i)] = null;
      }
      size = n;
      if (n == 0) {
        head = 0;
      }
    }

    <T> int removeIf(Predicate<? super T> which, Consumer<? super T> removed) {
      int n = size;
      int r = 0;
      int kept = 0;
      int count = 0;
      try {
        while (r < n) {
          @SuppressWarnings("unchecked")
          T w = (T) work[slot(r)];
          if (!which.test(w)) {
            moveWithin(r++, kept++);
            continue;
          }
          r++; // out of the queue before it is handed over
          count++;
          removed.accept(w);
        }
      } finally {
        while (r < n) {
          moveWithin(r++, kept++);
        }
        truncate(kept);
      }
      return count;
    }

    void ensureCapacity(int wanted) {
      if (wanted <= work.length) {
        return;
      }
      int capacity = work.length;
      while (capacity < wanted) {
        capacity <<= 1;
      }
      Object[] w = new Object[capacity];
      long[] e = new long[capacity];
      long[] q = new long[capacity];
      for (int i = 0; i < size; i++) {
        int s = slot(i);
        w[i] = work[s];
        e[i] = enqueued[s];
        q[i] = seqs[s];
      }
      work = w;
      enqueued = e;
      seqs = q;
      mask = capacity - 1;
      head = 0;
    }
  }
}
