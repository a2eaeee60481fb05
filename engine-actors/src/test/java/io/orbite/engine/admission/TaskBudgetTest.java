package io.orbite.engine.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.BudgetConfig;
import org.junit.jupiter.api.Test;

/**
 * C9, the packed word: tasks, bytes and the fence share one atomic long without bleeding into each
 * other at the largest budgets the configuration allows, and a charge is exact to the byte up to
 * 256 GiB.
 */
class TaskBudgetTest {
  @Test
  void theLargestBudgetsFitAndFieldsDoNotOverflowIntoEachOther() {
    long maxBytes = BudgetConfig.MAX_MAX_INFLIGHT_BYTES;
    int maxTasks = BudgetConfig.MAX_MAX_TASKS_IN_FLIGHT;
    TaskBudget b = new TaskBudget(maxTasks, maxBytes);
    assertNull(b.tryCharge(maxTasks, maxBytes), "the whole of both budgets can be charged at once");
    assertEquals(maxTasks, b.tasks());
    assertEquals(maxBytes, b.bytes());
    assertTrue(b.tryCharge(1, 0).startsWith("tasks in flight"), "one task more is refused by name");
    assertTrue(b.tryCharge(0, 1).startsWith("in-flight bytes"), "one byte more is refused by name");
    assertTrue(!b.fenced(), "a full budget is not a fence");
    b.release(maxTasks, maxBytes);
    assertEquals(0, b.tasks());
    assertEquals(0, b.bytes());
  }

  @Test
  void chargesAreExactToTheByteUpTo256GiB() {
    long limit = 256L << 30;
    TaskBudget b = new TaskBudget(10, limit - 1);
    assertNull(b.tryCharge(1, limit - 2));
    assertNull(b.tryCharge(1, 1), "the last byte of the budget");
    String refusal = b.tryCharge(1, 1);
    assertNotNull(refusal);
    assertTrue(
        refusal.contains((limit - 1) + " + 1 exceeds the budget of " + (limit - 1)), refusal);
    assertEquals(limit - 1, b.bytes());
  }

  @Test
  void aboveThatChargesRoundUpToWholeUnitsAndComeBackWhole() {
    TaskBudget b = new TaskBudget(100, 1L << 40);
    assertNull(b.tryCharge(1, 1));
    assertEquals(8, b.bytes(), "1 TiB counts in 8-byte units; one byte charges one unit");
    b.release(1, 1);
    assertEquals(0, b.bytes());
  }

  @Test
  void theFenceRefusesChargesButNotReleases() {
    TaskBudget b = new TaskBudget(4, 1 << 20);
    assertNull(b.tryCharge(2, 100));
    b.fence();
    assertSame(TaskBudget.FENCED, b.tryCharge(1, 1));
    b.release(2, 100);
    assertEquals(0, b.tasks());
    assertTrue(b.fenced());
  }

  @Test
  void releasingMoreThanChargedIsABrokenInvariantAndChangesNothing() {
    TaskBudget b = new TaskBudget(4, 1 << 20);
    assertNull(b.tryCharge(1, 10));
    assertThrows(IllegalStateException.class, () -> b.release(1, 11));
    assertThrows(IllegalStateException.class, () -> b.release(2, 10));
    assertEquals(1, b.tasks());
    assertEquals(10, b.bytes());
  }
}
