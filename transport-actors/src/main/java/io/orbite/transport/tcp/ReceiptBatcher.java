package io.orbite.transport.tcp;

import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptSink;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Collects a lane pass's receipts per batch and hands each batch its list in one call, so a batch
 * actor gets one message per lane pass rather than one per frame. Confined to its lane's thread.
 */
final class ReceiptBatcher {
  private final Map<ReceiptSink, List<Receipt>> pending = new IdentityHashMap<>();

  void add(ReceiptSink sink, Receipt receipt) {
    pending.computeIfAbsent(sink, s -> new ArrayList<>()).add(receipt);
  }

  void flush() {
    if (pending.isEmpty()) {
      return;
    }
    pending.forEach(ReceiptSink::deliver);
    pending.clear();
  }
}
