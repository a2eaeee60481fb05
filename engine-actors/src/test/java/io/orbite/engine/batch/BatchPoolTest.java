package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Freed batches kept for reuse: only for the same capacity, bounded in number and size, never
 * leased twice, and retired (their actor told to stop) when they are not kept. A lease that ended
 * finds the batch freed even after the batch serves the next allocation.
 */
@ExtendWith(TestKitJUnit5Extension.class)
class BatchPoolTest {
  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();

  private BatchCore core(String name, int capacity, TestProbe<BatchActor.Command> actor) {
    BatchCore c =
        new BatchCore(
            name,
            capacity,
            gate,
            counters,
            board,
            Duration.ofSeconds(30),
            Duration.ofSeconds(5),
            new QuarantineLedger(),
            Runnable::run);
    c.bind(actor.ref());
    return c;
  }

  @Test
  void aFreedBatchIsReusedOnlyForItsCapacityAndItsOldLeaseStaysFreed() {
    TestProbe<BatchActor.Command> actor = testKit.createTestProbe();
    BatchPool pool = new BatchPool();
    BatchCore c = core("batch-1", 8, actor);
    assertTrue(gate.tryBatch().granted());
    long first = c.lease();
    assertThrows(IllegalStateException.class, c::lease, "a leased batch cannot be leased again");
    c.free(first);
    pool.give(c);
    assertEquals(1, pool.size());
    assertNull(pool.take(4), "another capacity is not served");
    assertSame(c, pool.take(8));
    assertEquals(0, pool.size());
    long second = c.lease();
    TransferException old = assertThrows(TransferException.class, () -> c.status(first));
    assertEquals(ErrorKind.INVALID_ARGUMENT, old.kind());
    assertTrue(old.getMessage().contains("already freed"), old.getMessage());
    assertEquals(0, c.status(second).tasks().size());
    assertEquals(
        0, gate.usage().batches(), "the pool holds no batch slot: the caller charged and freed it");
    actor.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void thePoolIsBoundedAndRetiresWhatItDoesNotKeep() {
    TestProbe<BatchActor.Command> kept = testKit.createTestProbe();
    TestProbe<BatchActor.Command> large = testKit.createTestProbe();
    TestProbe<BatchActor.Command> extra = testKit.createTestProbe();
    BatchPool pool = new BatchPool();
    for (int i = 0; i < BatchPool.MAX_POOLED; i++) {
      pool.give(core("batch-" + i, 2, kept));
    }
    assertEquals(BatchPool.MAX_POOLED, pool.size());
    pool.give(core("batch-extra", 2, extra));
    assertEquals(
        BatchActor.Retire.INSTANCE, extra.receiveMessage(), "a full pool retires the batch");
    pool.give(core("batch-large", BatchPool.MAX_POOLED_CAPACITY + 1, large));
    assertEquals(BatchActor.Retire.INSTANCE, large.receiveMessage(), "a large batch is never kept");
    assertEquals(BatchPool.MAX_POOLED, pool.size());
    kept.expectNoMessage(Duration.ofMillis(50));

    pool.close();
    for (int i = 0; i < BatchPool.MAX_POOLED; i++) {
      assertEquals(
          BatchActor.Retire.INSTANCE, kept.receiveMessage(), "close retires every kept batch");
    }
    assertEquals(0, pool.size());
    assertNull(pool.take(2));
    TestProbe<BatchActor.Command> late = testKit.createTestProbe();
    pool.give(core("batch-late", 2, late));
    assertEquals(BatchActor.Retire.INSTANCE, late.receiveMessage(), "a closed pool keeps nothing");
    assertFalse(pool.size() > 0);
  }
}
