package io.orbite.engine.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.LogCapturingExtension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** C1: visibility, loans and release of registered ranges, through the Registry actor. */
@ExtendWith(TestKitJUnit5Extension.class)
@ExtendWith(LogCapturingExtension.class)
class RegistryTest {
  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  private Registration register(
      org.apache.pekko.actor.typed.ActorRef<Registry.Command> registry,
      MemorySegment segment,
      Arena owned) {
    TestProbe<Registry.RegisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Register(segment, Access.READ_WRITE, owned, probe.getRef()));
    return assertInstanceOf(Registry.Registered.class, probe.receiveMessage()).memory();
  }

  @Test
  void registeredRangeIsVisibleUntilUnregisterHidesIt() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 8, Duration.ofSeconds(5)));
    Arena arena = Arena.ofShared();
    Registration r = register(registry, arena.allocate(4096), arena);
    assertSame(r, view.lookup(r.regionId()));
    TestProbe<Registry.UnregisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(r.regionId(), probe.getRef()));
    assertInstanceOf(Registry.Unregistered.class, probe.receiveMessage());
    assertNull(view.lookup(r.regionId()));
    assertTrue(r.released());
    assertFalse(arena.scope().isAlive(), "engine-owned memory is freed after the last loan");
  }

  @Test
  void unregisterWaitsForLoansBeforeReleasing() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 8, Duration.ofSeconds(10)));
    Arena arena = Arena.ofShared();
    Registration r = register(registry, arena.allocate(4096), arena);
    assertTrue(r.tryLoan());
    TestProbe<Registry.UnregisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(r.regionId(), probe.getRef()));
    probe.expectNoMessage(Duration.ofMillis(200));
    assertNull(view.lookup(r.regionId()), "hidden at once");
    assertFalse(r.tryLoan(), "no new loan on a hidden range");
    assertTrue(arena.scope().isAlive(), "memory stays while a worker holds a loan");
    r.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 7);
    r.returnLoan();
    assertInstanceOf(Registry.Unregistered.class, probe.receiveMessage(Duration.ofSeconds(5)));
    assertFalse(arena.scope().isAlive());
  }

  @Test
  void loansStillHeldAfterTheDestructionWindowKeepTheMemory() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 8, Duration.ofMillis(100)));
    Arena arena = Arena.ofShared();
    MemorySegment segment = arena.allocate(4096);
    segment.set(ValueLayout.JAVA_BYTE, 4095, (byte) 42);
    Registration r = register(registry, segment, arena);
    assertTrue(r.tryLoan());
    TestProbe<Registry.UnregisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(r.regionId(), probe.getRef()));
    var failed =
        assertInstanceOf(
            Registry.UnregisterFailed.class, probe.receiveMessage(Duration.ofSeconds(5)));
    assertEquals(ErrorKind.UNQUIESCED, failed.kind());
    assertTrue(arena.scope().isAlive(), "never freed under a worker");
    assertEquals(42, segment.get(ValueLayout.JAVA_BYTE, 4095), "memory still mapped and readable");
    assertFalse(r.released());
  }

  @Test
  void registrationBudgetIsEnforcedAndReturned() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 2, Duration.ofSeconds(5)));
    Arena arena = Arena.ofShared();
    Registration first = register(registry, arena.allocate(64), null);
    register(registry, arena.allocate(64), null);
    TestProbe<Registry.RegisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Register(arena.allocate(64), Access.READ, null, probe.getRef()));
    var refused = assertInstanceOf(Registry.RegisterRefused.class, probe.receiveMessage());
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED, refused.kind());
    TestProbe<Registry.UnregisterReply> done = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(first.regionId(), done.getRef()));
    done.expectMessageClass(Registry.Unregistered.class);
    assertTrue(arena.scope().isAlive(), "caller-owned memory is never freed by the engine");
    register(registry, arena.allocate(64), null);
    arena.close();
  }

  private Registry.RegisterReply registerNamed(
      org.apache.pekko.actor.typed.ActorRef<Registry.Command> registry,
      MemorySegment segment,
      String name) {
    TestProbe<Registry.RegisterReply> probe = testKit.createTestProbe();
    registry.tell(
        new Registry.Register(segment, Access.READ_WRITE, null, null, name, probe.getRef()));
    return probe.receiveMessage();
  }

  @Test
  void aNameHeldByALiveRegistrationIsRefusedNamingItsHolderAndFreedByUnregister() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 8, Duration.ofSeconds(5)));
    Arena arena = Arena.ofShared();
    Registration first =
        assertInstanceOf(
                Registry.Registered.class, registerNamed(registry, arena.allocate(64), "kv-pool"))
            .memory();
    assertEquals(java.util.Optional.of("kv-pool"), first.name());
    Registration unnamed =
        assertInstanceOf(
                Registry.Registered.class, registerNamed(registry, arena.allocate(64), null))
            .memory();
    assertTrue(unnamed.name().isEmpty());

    var refused =
        assertInstanceOf(
            Registry.RegisterRefused.class, registerNamed(registry, arena.allocate(64), "kv-pool"));
    assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind());
    assertTrue(
        refused.detail().startsWith("region name 'kv-pool' is held by region " + first.regionId()),
        refused.detail());
    assertEquals(2, view.snapshot().size(), "the refused range was not published");

    TestProbe<Registry.UnregisterReply> done = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(first.regionId(), done.getRef()));
    done.expectMessageClass(Registry.Unregistered.class);
    Registration again =
        assertInstanceOf(
                Registry.Registered.class, registerNamed(registry, arena.allocate(64), "kv-pool"))
            .memory();
    assertEquals(java.util.Optional.of("kv-pool"), again.name());
    assertTrue(again.regionId() > unnamed.regionId(), "a fresh region id under the freed name");
    assertSame(again, view.lookup(again.regionId()));
    arena.close();
  }

  @Test
  void anAllowListIsPublishedWithItsRegistrationAndAdmitsOnlyProvenListedPeers() {
    RegistryView view = new RegistryView();
    var registry = testKit.spawn(Registry.create(view, 8, Duration.ofSeconds(5)));
    Arena arena = Arena.ofShared();
    TestProbe<Registry.RegisterReply> probe = testKit.createTestProbe();
    registry.tell(
        new Registry.Register(
            arena.allocate(64),
            Access.READ,
            null,
            null,
            "kv-pool",
            java.util.Set.of("decode-1"),
            probe.getRef()));
    Registration listed =
        assertInstanceOf(Registry.Registered.class, probe.receiveMessage()).memory();
    Registration published = view.lookup(listed.regionId());
    assertSame(listed, published);
    assertEquals(java.util.Set.of("decode-1"), published.allowedPeers());
    assertTrue(published.allows(new AuthenticatedPeer("decode-1", 1, true)));
    assertFalse(published.allows(new AuthenticatedPeer("decode-2", 1, true)));
    assertFalse(published.allows(null));
    Registration open = register(registry, arena.allocate(64), null);
    assertNull(open.allowedPeers(), "a Register without a list: every peer");
    assertTrue(open.allows(null));
    arena.close();
  }

  @Test
  void unregisterOfAnUnknownRegionNamesIt() {
    var registry = testKit.spawn(Registry.create(new RegistryView(), 2, Duration.ofSeconds(5)));
    TestProbe<Registry.UnregisterReply> probe = testKit.createTestProbe();
    registry.tell(new Registry.Unregister(99, probe.getRef()));
    var failed = assertInstanceOf(Registry.UnregisterFailed.class, probe.receiveMessage());
    assertEquals(ErrorKind.INVALID_ARGUMENT, failed.kind());
    assertTrue(failed.detail().contains("99"), failed.detail());
  }
}
