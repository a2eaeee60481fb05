package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Registry under {@link OwnerSupervision}: an exception inside it turns it quarantined, not
 * stopped and not restarted. Every later message is answered UNAVAILABLE naming it, the ledger
 * lists it with what it held, and its registration stays registered and mapped, also after the
 * actor stops (a quarantined owner's state is not trusted to free anything).
 */
@ExtendWith(TestKitJUnit5Extension.class)
class OwnerSupervisionTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(OwnerSupervisionTest.class);
  }

  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  @Test
  void anExceptionQuarantinesTheOwnerWhichRefusesEverythingAndKeepsWhatItHeld() {
    AtomicBoolean armed = new AtomicBoolean();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public void beforeOwnerMessage(String owner, Object message) {
            if (owner.equals("Registry") && armed.compareAndSet(true, false)) {
              throw new IllegalStateException("injected");
            }
          }
        };
    QuarantineLedger ledger = new QuarantineLedger();
    EngineTally counters = new EngineTally();
    OwnerBoard board = new OwnerBoard();
    OwnerSupervision supervision =
        new OwnerSupervision("test@here", ledger, counters, board, hooks);
    RegistryView view = new RegistryView();
    ActorRef<Registry.Command> registry =
        testKit.spawn(
            supervision.supervise(
                "Registry",
                Registry.Command.class,
                Registry.create(view, 8, Duration.ofSeconds(5), ledger, board),
                Registry::refuse));

    Arena arena = Arena.ofShared();
    TestProbe<Registry.RegisterReply> replies = testKit.createTestProbe();
    registry.tell(
        new Registry.Register(arena.allocate(4096), Access.READ_WRITE, arena, replies.getRef()));
    Registration held =
        assertInstanceOf(Registry.Registered.class, replies.receiveMessage()).memory();
    assertNull(supervision.unavailable("Registry"));

    armed.set(true);
    Arena second = Arena.ofShared();
    registry.tell(
        new Registry.Register(second.allocate(4096), Access.READ_WRITE, second, replies.getRef()));
    Registry.RegisterRefused refused =
        assertInstanceOf(Registry.RegisterRefused.class, replies.receiveMessage());
    assertEquals(ErrorKind.UNAVAILABLE, refused.kind());
    assertTrue(
        refused.detail().contains("the Registry of engine test@here is quarantined")
            && refused.detail().contains("injected"),
        refused.detail());

    // Every later message too, at once; the facade's check says the same without a message.
    TestProbe<Registry.UnregisterReply> unregister = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(held.regionId(), unregister.getRef()));
    Registry.UnregisterFailed failed =
        assertInstanceOf(Registry.UnregisterFailed.class, unregister.receiveMessage());
    assertEquals(ErrorKind.UNAVAILABLE, failed.kind());
    TestProbe<Registry.SharedFenced> fence = testKit.createTestProbe();
    registry.tell(new Registry.FenceShared(fence.getRef()));
    assertEquals(-1, fence.receiveMessage().stillCopying(), "could not fence, said so");
    assertEquals(refused.detail(), supervision.unavailable("Registry"));

    List<QuarantinedOwner> listed = ledger.list();
    assertEquals(1, listed.size(), listed::toString);
    QuarantinedOwner q = listed.getFirst();
    assertEquals("Registry", q.owner());
    assertEquals(QuarantinedOwner.Kind.OWNER, q.kind());
    assertTrue(q.reason().contains("registrations=1"), q::toString);
    assertFalse(q.reason().contains("Limit"), "limits are not held: " + q);
    assertEquals(1, counters.sum(Count.OWNERS_QUARANTINED));
    assertTrue(
        board.snapshot().owners().stream()
            .anyMatch(
                o ->
                    o.kind().equals("Registry")
                        && o.state() == io.orbite.engine.OwnerState.QUARANTINED),
        () -> board.snapshot().owners().toString());

    // What it held stays held: visible, mapped, not released, also once the actor has stopped.
    testKit.stop(registry);
    assertSame(held, view.lookup(held.regionId()));
    assertFalse(held.released());
    assertTrue(arena.scope().isAlive(), "its memory stays mapped");
    second.close(); // refused before the Registry took it: the caller still owns it
  }
}
