package io.orbite.engine.spi;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Collects one lane pass's receipts per batch and hands each batch its list in one call ({@link
 * #flush}), so a batch takes its ledger's lock once per pass rather than once per frame. Every
 * transport's lanes use it. Confined to the thread that owns the lane's pass (the lane thread, or
 * a caller that holds the lane's owner lock).
 */
public final class ReceiptBatcher {
  private final Map<ReceiptSink, List<Receipt>> pending = new IdentityHashMap<>();
  /** The sink of the last receipt added, and its list: a pass's frames mostly share one batch. */
  private ReceiptSink lastSink;
  private List<Receipt> lastList;
  private int expected = 16;

  /** Sizes the lists of the next pass for {@code receipts} receipts (a hint). */
  public void expect(int receipts) {
    expected = Math.max(1, receipts);
  }

  public void add(ReceiptSink sink, Receipt receipt) {
    if (sink != lastSink) {
      lastSink = sink;
      lastList = pending.computeIfAbsent(sink, s -> new ArrayList<>(expected));
    }
    lastList.add(receipt);
  }

  /** Whether no receipt waits. */
  public boolean isEmpty() {
    return pending.isEmpty();
  }

  /** Delivers every batch its receipts, one call each, and forgets them. */
  public void flush() {
    lastSink = null;
    lastList = null;
    if (pending.isEmpty()) {
      return;
    }
    pending.forEach(ReceiptSink::deliver);
    pending.clear();
  }
}
