package io.orbite.engine.spi;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Collects one lane pass's receipts per batch and hands each batch its block in one call ({@link
 * #flush}), so a batch takes its ledger's lock once per pass rather than once per frame. Blocks are
 * reused from pass to pass: confirming a frame allocates nothing. Every transport's lanes use it.
 * Confined to the thread that owns the lane's pass (the lane thread, or a caller that holds the
 * lane's owner lock).
 */
public final class ReceiptBatcher {
  private final Map<ReceiptSink, Receipts> pending = new IdentityHashMap<>();
  private final ArrayDeque<Receipts> spare = new ArrayDeque<>();

  /** The sink of the last receipt added, and its block: a pass's frames mostly share one batch. */
  private ReceiptSink lastSink;

  private Receipts lastBlock;
  private int expected = 16;

  /** Sizes the blocks of the next pass for {@code receipts} receipts (a hint). */
  public void expect(int receipts) {
    expected = Math.max(1, receipts);
  }

  /** Adds a confirmation of a frame of task {@code taskIndex} for {@code sink}. */
  public void ok(ReceiptSink sink, int taskIndex, long bytes, RemoteEffect effect) {
    block(sink).ok(taskIndex, bytes, effect);
  }

  /** Adds a failure of a frame of task {@code taskIndex} for {@code sink}. */
  public void failed(
      ReceiptSink sink, int taskIndex, ErrorKind kind, RemoteEffect effect, String detail) {
    block(sink).failed(taskIndex, kind, effect, detail);
  }

  public void add(ReceiptSink sink, Receipt receipt) {
    block(sink).add(receipt);
  }

  private Receipts block(ReceiptSink sink) {
    if (sink != lastSink) {
      Receipts b = pending.get(sink);
      if (b == null) {
        b = spare.isEmpty() ? new Receipts(expected) : spare.pop();
        pending.put(sink, b);
      }
      lastSink = sink;
      lastBlock = b;
    }
    return lastBlock;
  }

  /** Whether no receipt waits. */
  public boolean isEmpty() {
    return pending.isEmpty();
  }

  /** Delivers every batch its receipts, one call each, and forgets them. */
  public void flush() {
    lastSink = null;
    lastBlock = null;
    if (pending.isEmpty()) {
      return;
    }
    // Every batch gets its block even if another batch's sink throws (a broken invariant there must
    // not strand this pass's receipts for the others); the first failure is rethrown after.
    RuntimeException failure = null;
    for (Map.Entry<ReceiptSink, Receipts> e : pending.entrySet()) {
      try {
        e.getKey().deliver(e.getValue());
      } catch (RuntimeException ex) {
        if (failure == null) {
          failure = ex;
        } else {
          failure.addSuppressed(ex);
        }
      }
      e.getValue().clear();
      if (spare.size() < 8) {
        spare.push(e.getValue());
      }
    }
    pending.clear();
    if (failure != null) {
      throw failure;
    }
  }
}
