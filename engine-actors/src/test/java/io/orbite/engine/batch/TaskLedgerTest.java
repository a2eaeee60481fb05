package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.TaskState;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Registration;
import java.lang.foreign.Arena;
import org.junit.jupiter.api.Test;

/**
 * The ledger now learns a task's receipt count after its dispatch returns, and a lane (or the
 * caller's own thread, for a copy it ran) may deliver before that: such a task must not turn
 * terminal, or return its loan, until both the count and every receipt are in.
 */
class TaskLedgerTest {
  private final Arena arena = Arena.ofAuto();
  private final Registration region =
      new Registration(7, arena.allocate(4096), Access.READ_WRITE, null);

  private int task(TaskLedger ledger) {
    assertTrue(region.tryLoan());
    return ledger.add(Op.READ, 100, region, System.nanoTime() + 1_000_000_000L, System.nanoTime());
  }

  @Test
  void aReceiptBeforeTheCountLeavesTheTaskPendingUntilTheCountArrives() {
    TaskLedger ledger = new TaskLedger(2);
    int i = task(ledger);
    assertEquals(TaskLedger.Outcome.NONE, ledger.apply(Receipt.ok(i, 60, RemoteEffect.NONE)));
    assertEquals(TaskState.PENDING, ledger.result(i).state());
    assertFalse(ledger.result(i).locallyDrained());
    assertEquals(1, region.loans(), "the loan stays while the count is unknown");
    assertEquals(TaskLedger.Outcome.NONE, ledger.owe(i, 2), "one of two receipts is still owed");
    assertEquals(1, ledger.pending());
    assertEquals(TaskLedger.Outcome.FINISHED, ledger.apply(Receipt.ok(i, 40, RemoteEffect.NONE)));
    assertEquals(TaskState.COMPLETED, ledger.result(i).state());
    assertEquals(100, ledger.result(i).bytes());
    assertTrue(ledger.result(i).locallyDrained());
    assertEquals(0, region.loans());
    assertEquals(0, ledger.pending());
  }

  @Test
  void everyReceiptBeforeTheCountFinishesTheTaskWhenTheCountArrives() {
    TaskLedger ledger = new TaskLedger(1);
    int i = task(ledger);
    ledger.apply(Receipt.failed(i, ErrorKind.EPOCH_MISMATCH, RemoteEffect.NONE, "fenced"));
    assertEquals(TaskState.PENDING, ledger.result(i).state());
    assertEquals(TaskLedger.Outcome.FINISHED, ledger.owe(i, 1));
    assertEquals(TaskState.FAILED, ledger.result(i).state());
    assertEquals(ErrorKind.EPOCH_MISMATCH, ledger.result(i).errorKind());
    assertEquals(0, region.loans());
  }

  @Test
  void moreReceiptsThanTheCountIsABrokenContract() {
    TaskLedger ledger = new TaskLedger(1);
    int i = task(ledger);
    ledger.apply(Receipt.ok(i, 50, RemoteEffect.NONE));
    ledger.apply(Receipt.ok(i, 50, RemoteEffect.NONE));
    assertThrows(IllegalStateException.class, () -> ledger.owe(i, 1));
  }

  @Test
  void anOverdueTaskWithoutItsCountIsHeldAndDrainsWhenTheCountShowsNothingOwed() {
    TaskLedger ledger = new TaskLedger(1);
    int i = task(ledger);
    ledger.apply(Receipt.ok(i, 100, RemoteEffect.NONE));
    long late = System.nanoTime() + 10_000_000_000L;
    assertEquals(
        1,
        ledger.quarantineOverdue(late, 0, "overdue"),
        "without its count it may still be worked on");
    assertEquals(TaskState.UNQUIESCED, ledger.result(i).state());
    assertEquals(1, ledger.held());
    assertEquals(1, region.loans());
    assertThrows(IllegalStateException.class, ledger::reset, "held tasks keep the ledger");
    assertEquals(TaskLedger.Outcome.LATE_DRAINED, ledger.owe(i, 1));
    assertEquals(
        TaskState.UNQUIESCED, ledger.result(i).state(), "a reported outcome never changes");
    assertTrue(ledger.result(i).locallyDrained());
    assertEquals(0, ledger.held());
    assertEquals(0, region.loans());
    ledger.reset();
    assertEquals(0, ledger.size());
  }

  @Test
  void resetRefusesPendingTasksAndReusesTheSlots() {
    TaskLedger ledger = new TaskLedger(1);
    int i = task(ledger);
    assertThrows(IllegalStateException.class, ledger::reset);
    ledger.owe(i, 1);
    ledger.apply(Receipt.failed(i, ErrorKind.TIMEOUT, RemoteEffect.NONE, "late"));
    ledger.reset();
    int j = task(ledger);
    assertEquals(0, j);
    assertEquals(TaskState.PENDING, ledger.result(j).state());
    assertEquals(null, ledger.result(j).errorKind(), "nothing of the earlier task is left");
    ledger.owe(j, 1);
    ledger.apply(Receipt.ok(j, 100, RemoteEffect.NONE));
    assertEquals(TaskState.COMPLETED, ledger.result(j).state());
  }
}
