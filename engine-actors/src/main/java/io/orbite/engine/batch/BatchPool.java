package io.orbite.engine.batch;

import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Freed batches kept for the next {@code allocateBatch} of the same capacity, so that allocating
 * and freeing a batch costs no actor spawn and no ask. Bounded: at most {@link #MAX_POOLED} batches
 * of at most {@link #MAX_POOLED_CAPACITY} tasks each are kept; any other freed batch is retired
 * (its actor stops). A pooled batch holds no charge: its slot was given back at free. Thread-safe.
 */
public final class BatchPool {
  /** How many freed batches are kept in all. */
  public static final int MAX_POOLED = 32;

  /** Larger batches are not kept: their ledgers are large, and they are allocated rarely. */
  public static final int MAX_POOLED_CAPACITY = 4096;

  private final ConcurrentHashMap<Integer, Queue<BatchCore>> idle = new ConcurrentHashMap<>();
  private final AtomicInteger pooled = new AtomicInteger();
  private volatile boolean closed;

  /** A freed batch of exactly {@code capacity} tasks, or null if none is kept. */
  public BatchCore take(int capacity) {
    Queue<BatchCore> q = idle.get(capacity);
    BatchCore core = q == null ? null : q.poll();
    if (core != null) {
      pooled.decrementAndGet();
    }
    return core;
  }

  /** Keeps a freed batch for reuse, or retires it when the pool is full or closed. */
  public void give(BatchCore core) {
    if (closed || core.capacity() > MAX_POOLED_CAPACITY) {
      core.retire();
      return;
    }
    if (pooled.incrementAndGet() > MAX_POOLED) {
      pooled.decrementAndGet();
      core.retire();
      return;
    }
    Queue<BatchCore> q = idle.computeIfAbsent(core.capacity(), c -> new ConcurrentLinkedQueue<>());
    q.add(core);
    if (closed && q.remove(core)) {
      // close() ran while this one was being added: it must not stay behind.
      pooled.decrementAndGet();
      core.retire();
    }
  }

  /** How many freed batches are kept now. */
  public int size() {
    return pooled.get();
  }

  /** No batch is kept from now on; the kept ones are retired. */
  public void close() {
    closed = true;
    for (Queue<BatchCore> q : idle.values()) {
      BatchCore core;
      while ((core = q.poll()) != null) {
        pooled.decrementAndGet();
        core.retire();
      }
    }
  }
}
