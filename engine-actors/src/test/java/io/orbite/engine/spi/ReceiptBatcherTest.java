package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The lanes' receipt batcher: one block per batch per pass, in the order the lane gave them, blocks
 * reused from pass to pass without a stale entry, and a sink that throws does not strand the
 * receipts of the other batches.
 */
class ReceiptBatcherTest {
  /**
   * A sink that copies what it is lent (the block is reused after the call) and can be made to
   * throw.
   */
  private static final class Recording implements ReceiptSink {
    final List<List<Receipt>> calls = new ArrayList<>();
    Receipts lastBlock;
    boolean explode;

    @Override
    public void deliver(Receipts receipts) {
      lastBlock = receipts;
      List<Receipt> copy = new ArrayList<>();
      for (int k = 0; k < receipts.size(); k++) {
        copy.add(receipts.get(k));
      }
      calls.add(copy);
      if (explode) {
        throw new IllegalStateException("receipt for a task that owes nothing");
      }
    }

    @Override
    public boolean cancelled() {
      return false;
    }
  }

  @Test
  void eachBatchGetsItsReceiptsInOrderInOneCallPerPass() {
    ReceiptBatcher batcher = new ReceiptBatcher();
    Recording a = new Recording();
    Recording b = new Recording();
    batcher.ok(a, 0, 100, RemoteEffect.NONE);
    batcher.ok(b, 5, 7, RemoteEffect.APPLIED);
    batcher.failed(a, 1, ErrorKind.TIMEOUT, RemoteEffect.NONE, "late");
    batcher.ok(a, 2, 50, RemoteEffect.NONE);
    batcher.flush();
    assertEquals(
        List.of(
            List.of(
                new Receipt(0, 100, null, RemoteEffect.NONE, ""),
                new Receipt(1, 0, ErrorKind.TIMEOUT, RemoteEffect.NONE, "late"),
                new Receipt(2, 50, null, RemoteEffect.NONE, ""))),
        a.calls);
    assertEquals(List.of(List.of(new Receipt(5, 7, null, RemoteEffect.APPLIED, ""))), b.calls);
    assertTrue(batcher.isEmpty());
  }

  @Test
  void aReusedBlockCarriesNothingOfTheLastPass() {
    ReceiptBatcher batcher = new ReceiptBatcher();
    Recording a = new Recording();
    for (int k = 0; k < 40; k++) {
      batcher.failed(a, k, ErrorKind.PEER_LOST, RemoteEffect.UNKNOWN, "gone " + k);
    }
    batcher.flush();
    Receipts first = a.lastBlock;
    assertEquals(0, first.size(), "the lent block is cleared after the call");
    batcher.ok(a, 3, 9, RemoteEffect.NONE);
    batcher.flush();
    assertSame(first, a.lastBlock, "the block is reused, not allocated again");
    assertEquals(List.of(new Receipt(3, 9, null, RemoteEffect.NONE, "")), a.calls.get(1));
    assertThrows(
        IndexOutOfBoundsException.class, () -> first.error(1), "no stale entry is readable");
  }

  @Test
  void aSinkThatThrowsDoesNotStrandTheOtherBatchesReceipts() {
    ReceiptBatcher batcher = new ReceiptBatcher();
    Recording broken = new Recording();
    broken.explode = true;
    // Sixteen healthy batches beside the broken one: whatever order the pass delivers them in, most
    // come after it.
    List<Recording> fine = new ArrayList<>();
    for (int s = 0; s < 16; s++) {
      fine.add(new Recording());
    }
    batcher.ok(broken, 0, 1, RemoteEffect.NONE);
    for (int s = 0; s < fine.size(); s++) {
      batcher.ok(fine.get(s), 0, 2 + s, RemoteEffect.NONE);
      batcher.ok(broken, 1 + s, 3, RemoteEffect.NONE);
      batcher.ok(fine.get(s), 1, 4, RemoteEffect.NONE);
    }
    IllegalStateException e = assertThrows(IllegalStateException.class, batcher::flush);
    assertTrue(e.getMessage().contains("owes nothing"), e.getMessage());
    for (int s = 0; s < fine.size(); s++) {
      assertEquals(
          List.of(
              List.of(
                  new Receipt(0, 2 + s, null, RemoteEffect.NONE, ""),
                  new Receipt(1, 4, null, RemoteEffect.NONE, ""))),
          fine.get(s).calls,
          "batch " + s + " got all of its receipts");
    }
    assertTrue(batcher.isEmpty(), "nothing is delivered twice on the next flush");
    broken.explode = false;
    batcher.flush();
    assertEquals(1, broken.calls.size());
  }
}
