package io.orbite.engine.spi;

import java.util.List;

/**
 * Where a transport sends receipts for one batch. Implemented by the engine (it forwards to the
 * batch's actor); transports call {@link #deliver} from their lane threads with every receipt
 * they collected for this batch in one pass, never one call per byte range.
 */
public interface ReceiptSink {
  void deliver(List<Receipt> receipts);

  /** Whether the batch was cancelled: frames not yet sent should fail CANCELLED, unsent. */
  boolean cancelled();
}
