package io.orbite.transport.lane;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.spi.ReceiptSink;

/**
 * The one rule every lane applies to work it has not started: a batch that was cancelled fails it
 * {@code CANCELLED}, else a deadline that passed fails it {@code TIMEOUT}; either way it was never
 * sent (effect {@code NONE}, zero bytes). Work a lane still holds when it ends fails with the
 * lane's closure kind and says it was never sent ({@link #neverSent}).
 */
public final class Unsendable {
  private Unsendable() {}

  /**
   * Why work not yet started must not start now.
   *
   * @param sink the batch the work belongs to
   * @param deadlineNanos its deadline ({@link System#nanoTime()})
   * @param nowNanos now
   * @return CANCELLED, else TIMEOUT, else null (it may start)
   */
  public static ErrorKind check(ReceiptSink sink, long deadlineNanos, long nowNanos) {
    if (sink.cancelled()) {
      return ErrorKind.CANCELLED;
    }
    return nowNanos - deadlineNanos > 0 ? ErrorKind.TIMEOUT : null;
  }

  /**
   * Whether work must not start now: {@link #check} is not null.
   *
   * @param sink the batch the work belongs to
   * @param deadlineNanos its deadline
   * @param nowNanos now
   * @return true when it is cancelled or past its deadline
   */
  public static boolean applies(ReceiptSink sink, long deadlineNanos, long nowNanos) {
    return sink.cancelled() || nowNanos - deadlineNanos > 0;
  }

  /**
   * The detail of a receipt for work failed by {@link #check}.
   *
   * @param kind CANCELLED or TIMEOUT
   * @return for example {@code "cancelled before it was sent"}
   */
  public static String detail(ErrorKind kind) {
    return kind == ErrorKind.CANCELLED
        ? "cancelled before it was sent"
        : "deadline passed before it was sent";
  }

  /**
   * The detail of a receipt for work a lane still held when it ended.
   *
   * @param why why the lane ended, naming it
   * @return {@code why} followed by {@code " (never sent)"}
   */
  public static String neverSent(String why) {
    return why + " (never sent)";
  }
}
