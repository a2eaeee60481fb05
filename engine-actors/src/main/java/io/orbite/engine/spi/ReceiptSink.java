package io.orbite.engine.spi;

/**
 * Where a transport sends receipts for one batch. Implemented by the engine (the batch's ledger);
 * transports call {@link #deliver} from their lane threads with every receipt they collected for
 * this batch in one pass, never one call per byte range.
 */
public interface ReceiptSink {
  /** Applies {@code receipts}. The block is lent for this call only: the sender reuses it after. */
  void deliver(Receipts receipts);

  /** Delivers one receipt (a failure found outside a lane pass). */
  default void deliver(Receipt receipt) {
    deliver(Receipts.of(receipt));
  }

  /** Whether the batch was cancelled: frames not yet sent should fail CANCELLED, unsent. */
  boolean cancelled();
}
