package io.orbite.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.Receipts;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;

/** Receipts in the transport tests: a batch's sink played by a probe, and a task's success. */
public final class ReceiptProbes {
  private ReceiptProbes() {}

  /**
   * Hands every receipt it gets to {@code probe}, as a batch's sink would take them.
   *
   * @param probe that gets each receipt as a message
   * @return a sink that is never cancelled
   */
  public static ReceiptSink sink(TestProbe<Receipt> probe) {
    return new ReceiptSink() {
      @Override
      public void deliver(Receipts receipts) {
        for (int k = 0; k < receipts.size(); k++) {
          probe.getRef().tell(receipts.get(k));
        }
      }

      @Override
      public boolean cancelled() {
        return false;
      }
    };
  }

  /**
   * Waits (at most 20 s) for the next receipt and checks it says a READ moved {@code bytes}: no
   * error, nothing done to the remote side. The bytes themselves are the caller's to check.
   *
   * @param receipts the probe the task's sink hands receipts to
   * @param bytes how many bytes the task moved
   * @return the receipt
   */
  public static Receipt readSucceeded(TestProbe<Receipt> receipts, long bytes) {
    Receipt r = receipts.receiveMessage(Duration.ofSeconds(20));
    assertNull(r.error(), r::toString);
    assertEquals(bytes, r.bytes());
    assertEquals(RemoteEffect.NONE, r.effect());
    return r;
  }
}
