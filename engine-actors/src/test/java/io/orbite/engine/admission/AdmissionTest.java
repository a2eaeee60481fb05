package io.orbite.engine.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.LogCapturingExtension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** C9: budgets charge all or nothing, refuse with the budget's name, and come back on release. */
@ExtendWith(TestKitJUnit5Extension.class)
@ExtendWith(LogCapturingExtension.class)
class AdmissionTest {
  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  private static final BudgetConfig SMALL =
      BudgetConfig.defaults()
          .withMaxBatches(1)
          .withMaxTasksInFlight(4)
          .withMaxInflightBytes(1L << 20)
          .withMaxEndpoints(1);

  @Test
  void tasksAndBytesAreChargedTogetherOrNotAtAll() {
    AdmissionGate b = new AdmissionGate(SMALL);
    assertTrue(b.tryTasks(3, 1000).granted());
    Admission.Decision refused = b.tryTasks(2, 10);
    assertInstanceOf(Admission.Decision.Exhausted.class, refused);
    assertFalse(refused.granted());
    assertFalse(refused.fenced());
    assertNotNull(refused.refusal());
    assertTrue(refused.refusal().startsWith("tasks in flight"), refused.refusal());
    assertEquals(
        new Budgets.Usage(0, 3, 1000, 0), b.usage(), "a refused charge leaves nothing behind");
    refused = b.tryTasks(1, 1L << 20);
    assertTrue(refused.refusal().startsWith("in-flight bytes"), refused.refusal());
    assertEquals(3, b.usage().tasks());
    b.releaseTasks(3, 1000);
    assertTrue(b.tryTasks(1, 1L << 20).granted());
  }

  @Test
  void releasingMoreThanChargedIsABrokenInvariant() {
    AdmissionGate b = new AdmissionGate(SMALL);
    assertThrows(IllegalStateException.class, () -> b.releaseTasks(1, 1));
  }

  @Test
  void actorRefusesExhaustedBudgetsAndFencesOnRequest() {
    var admission = testKit.spawn(Admission.create(SMALL));
    TestProbe<Admission.Decision> probe = testKit.createTestProbe();
    admission.tell(new Admission.AcquireBatch(probe.getRef()));
    assertTrue(probe.receiveMessage().granted());
    admission.tell(new Admission.AcquireBatch(probe.getRef()));
    Admission.Decision second = probe.receiveMessage();
    assertInstanceOf(Admission.Decision.Exhausted.class, second);
    assertFalse(second.granted());
    assertFalse(second.fenced());
    admission.tell(new Admission.ReleaseBatch());
    admission.tell(new Admission.AcquireBatch(probe.getRef()));
    assertTrue(probe.receiveMessage().granted());
    admission.tell(new Admission.Fence("closing"));
    admission.tell(new Admission.AdmitTasks(1, 1, probe.getRef()));
    Admission.Decision fenced = probe.receiveMessage();
    assertInstanceOf(Admission.Decision.Unavailable.class, fenced);
    assertEquals("engine is not accepting requester work: closing", fenced.refusal());
    assertFalse(fenced.granted());
    assertTrue(fenced.fenced());
    TestProbe<Budgets.Usage> usage = testKit.createTestProbe();
    admission.tell(new Admission.GetUsage(usage.getRef()));
    assertEquals(new Budgets.Usage(1, 0, 0, 0), usage.receiveMessage());
  }
}
