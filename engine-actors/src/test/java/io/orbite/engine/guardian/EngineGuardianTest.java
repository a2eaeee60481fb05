package io.orbite.engine.guardian;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.guardian.EngineGuardian.Side;
import io.orbite.engine.guardian.EngineGuardian.SideClosed;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The engine's guardian over its real owners (Registry, Admission, SegmentTable, ControlService)
 * and two fake transports whose supervisors are test probes: what it tells its children and in
 * which order (seen through {@link FaultHooks#beforeOwnerMessage}, which every supervised owner
 * calls before a message), what it answers in running and while stopping, what the owner view and
 * the {@link EngineLifecycle} show, what it lists in the {@link QuarantineLedger} when a child
 * stops, and its timers (the asks of the listener's stop and the transports' closes, on
 * ManualTime).
 *
 * <p>Longer than 500 lines: it starts one guardian per test over the same real owners and probes;
 * split, each half would repeat that scaffold.
 */
class EngineGuardianTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(EngineGuardianTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());
  private static final Duration SHORT = Duration.ofMillis(300);

  /** A message a fake transport's supervisor takes as its cue to stop. */
  private record StopYourself() implements TransportCommand {}

  /** A transport whose supervisor forwards every message to {@code probe}. */
  private record FakeProvider(Transport kind, PeerRole peerRole, TestProbe<TransportCommand> probe)
      implements TransportProvider {
    @Override
    public Behavior<TransportCommand> create(TransportContext context) {
      return Behaviors.receiveMessage(
          m -> {
            probe.getRef().tell(m);
            return m instanceof StopYourself ? Behaviors.stopped() : Behaviors.same();
          });
    }
  }

  private final EngineConfig config = EngineConfig.defaults().withName("guardian-test");
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final TestProbe<TransportCommand> tcp = testKit.createTestProbe();
  private final TestProbe<TransportCommand> file = testKit.createTestProbe();
  private final TestProbe<Object> watcher = testKit.createTestProbe();

  /** Every message a supervised owner took, as {@code owner:Message}, in order. */
  private final List<String> seen = new CopyOnWriteArrayList<>();

  /** What an owner throws on its next message of a kind: {@code owner:Message} to the throwable. */
  private final Map<String, Throwable> failures = new ConcurrentHashMap<>();

  private final FaultHooks hooks =
      new FaultHooks() {
        @Override
        public void beforeOwnerMessage(String owner, Object message) {
          String what = owner + ":" + message.getClass().getSimpleName();
          seen.add(what);
          Throwable t = failures.remove(what);
          if (t instanceof RuntimeException e) {
            throw e;
          }
          if (t instanceof Error e) {
            throw e;
          }
        }
      };

  private ServerSocketChannel listener;
  private SegmentDescriptor self;
  private ActorRef<EngineGuardian.Command> guardian;
  private EngineGuardian.Handles handles;

  @BeforeEach
  void start() throws Exception {
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    self = new SegmentDescriptor("127.0.0.1", listener.socket().getLocalPort(), 0x5e1fL);
    CompletableFuture<EngineGuardian.Handles> started = new CompletableFuture<>();
    guardian =
        testKit.spawn(
            EngineGuardian.create(
                new EngineGuardian.Parts(
                    config,
                    listener,
                    self,
                    new RegistryView(),
                    new EngineTally(),
                    board,
                    quarantine,
                    hooks,
                    List.of(
                        new FakeProvider(Transport.TCP, TransportProvider.PeerRole.BASE, tcp),
                        new FakeProvider(Transport.FILE, TransportProvider.PeerRole.NONE, file)),
                    new PeerEventHub(Runnable::run),
                    new io.orbite.engine.notify.NotifyReceiver(
                        config.notifications(), self, new EngineTally(), 4),
                    io.orbite.engine.security.PeerAuth.none(config.name(), self.epoch())),
                started));
    handles = started.get(10, TimeUnit.SECONDS);
  }

  @AfterEach
  void stop() throws IOException {
    listener.close();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  private OwnerView.Owner row(String path) {
    return board.snapshot().owners().stream()
        .filter(o -> o.path().equals(path))
        .findFirst()
        .orElse(null);
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  private void awaitState(String path, OwnerState state) {
    eventually(
        () -> {
          OwnerView.Owner r = row(path);
          assertTrue(
              r != null && r.state() == state,
              () -> "want " + path + " " + state + ": " + board.snapshot().owners());
        });
  }

  private TestProbe<SideClosed> sideCloser() {
    return testKit.createTestProbe();
  }

  /** Answers the side close both fake transports were asked for. */
  private <T extends TransportCommand> void answerSide(Class<T> close) {
    for (TestProbe<TransportCommand> t : List.of(tcp, file)) {
      TransportCommand m = t.expectMessageClass(close);
      ActorRef<TransportCommand.SideClosed> replyTo =
          m instanceof TransportCommand.CloseRequesterSide r
              ? r.replyTo()
              : ((TransportCommand.CloseSourceSide) m).replyTo();
      replyTo.tell(new TransportCommand.SideClosed(t == tcp ? "TCP" : "FILE"));
    }
  }

  private static void assertListenerClosed(SegmentDescriptor self) {
    assertThrows(
        ConnectException.class,
        () -> SocketChannel.open(new InetSocketAddress("127.0.0.1", self.port())).close());
  }

  /** The classic path to the guardian's child {@code name}, as a typed reference. */
  private <T> ActorRef<T> child(String name) throws Exception {
    return Adapter.toTyped(
        Adapter.toClassic(testKit.system())
            .actorSelection(guardian.path().child(name))
            .resolveOne(Duration.ofSeconds(5))
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS));
  }

  @Test
  void itStartsEveryOwnerAndTransportAndShowsItselfRunning() {
    assertEquals(Set.of(Transport.TCP, Transport.FILE), handles.transports().keySet());
    assertEquals(self, handles.self());
    assertEquals(EngineOwed.Phase.RUNNING, handles.lifecycle().phase());
    assertEquals("guardian-test@" + self, handles.lifecycle().identity());
    awaitState("engine", OwnerState.RUNNING);
    OwnerView.Owner me = row("engine");
    assertEquals("EngineGuardian", me.kind());
    assertEquals(Map.of("batchesSpawned", 0L), me.charges());
    assertEquals("guardian-test@" + self, me.detail());
    awaitState("engine/registry", OwnerState.ACTIVE);
    awaitState("engine/admission", OwnerState.OPEN);
    awaitState("engine/segment-table", OwnerState.ACTIVE);
    awaitState("engine/control-service", OwnerState.SERVING);
    assertEquals(List.of(), quarantine.list());
  }

  @Test
  void aSpawnedBatchIsWatchedAndQuarantinedIfItsOwnerStopsUnretired() throws Exception {
    TestProbe<EngineGuardian.SpawnBatchReply> reply = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.SpawnBatch(8, reply.getRef()));
    BatchCore core =
        assertInstanceOf(EngineGuardian.BatchSpawned.class, reply.receiveMessage()).core();
    assertEquals("batch-1", core.name());
    assertEquals(8, core.capacity());
    eventually(() -> assertEquals(Map.of("batchesSpawned", 1L), row("engine").charges()));
    core.lease();

    // Its owner stops although the batch was not retired: it may have kept what it held.
    ActorRef<BatchActor.Command> owner = child("batch-1");
    owner.tell(BatchActor.Retire.INSTANCE);
    eventually(() -> assertEquals(1, quarantine.list().size()));
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals("batch-1", q.owner());
    assertEquals(QuarantinedOwner.Kind.OWNER, q.kind());
    assertTrue(q.reason().contains("stopped unexpectedly"), q::toString);
    assertNotNull(handles.supervision().unavailable("batch-1"));

    // A retired batch's stop is expected: nothing more is listed.
    guardian.tell(new EngineGuardian.SpawnBatch(8, reply.getRef()));
    BatchCore second =
        assertInstanceOf(EngineGuardian.BatchSpawned.class, reply.receiveMessage()).core();
    assertEquals("batch-2", second.name());
    second.lease();
    ActorRef<BatchActor.Command> secondOwner = child("batch-2");
    second.retire();
    watcher.expectTerminated(secondOwner, Duration.ofSeconds(10));
    assertEquals(List.of("batch-1"), quarantine.list().stream().map(o -> o.owner()).toList());
  }

  @Test
  void closeRequesterFencesTheGateAndTheTableWaitsForAdmittedWorkThenClosesTheLanes() {
    assertTrue(handles.gate().tryTasks(1, 4096).granted(), "a task in flight");
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(
        new EngineGuardian.CloseRequester(System.nanoTime() + 60_000_000_000L, closed.getRef()));

    // At once: the gate refuses new work, the table new opens.
    eventually(
        () ->
            assertEquals(
                new Admission.Decision.Unavailable(
                    "engine is not accepting requester work: the requester side is closed"),
                handles.gate().tryBatch()));
    awaitState("engine/segment-table", OwnerState.FENCED);
    assertTrue(seen.contains("SegmentTable:Fence"), seen::toString);
    // Admission shows its gate fenced at its next refresh (the gate is fenced without a message).
    manualTime.timePasses(Duration.ofSeconds(1));
    awaitState("engine/admission", OwnerState.FENCED);
    assertEquals("the requester side is closed", row("engine/admission").detail());

    // The admitted task is still in flight: the lanes are left to finish it.
    tcp.expectNoMessage(SHORT);
    handles.gate().releaseTasks(1, 4096);
    answerSide(TransportCommand.CloseRequesterSide.class);
    assertEquals(new SideClosed(Side.REQUESTER, 0), closed.receiveMessage());
    awaitState("engine", OwnerState.RUNNING);
    assertEquals(EngineOwed.Phase.RUNNING, handles.lifecycle().phase());
    assertFalse(seen.contains("Registry:FenceShared"), "the source side is untouched");
  }

  @Test
  void closeRequesterClosesTheLanesAtTheCallersDeadlineThoughWorkIsStillAdmitted() {
    assertTrue(handles.gate().tryTasks(1, 4096).granted());
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(
        new EngineGuardian.CloseRequester(System.nanoTime() + 300_000_000L, closed.getRef()));
    answerSide(TransportCommand.CloseRequesterSide.class);
    // The lanes are closed, but the task's last receipt has not been applied: wait for it.
    closed.expectNoMessage(SHORT);
    handles.gate().releaseTasks(1, 4096);
    assertEquals(new SideClosed(Side.REQUESTER, 0), closed.receiveMessage());
  }

  @Test
  void aTransportThatDoesNotAnswerASideCloseHoldsItOnlyUntilItsAskTimesOut() {
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(new EngineGuardian.CloseRequester(System.nanoTime(), closed.getRef()));
    TransportCommand.CloseRequesterSide asked =
        tcp.expectMessageClass(TransportCommand.CloseRequesterSide.class);
    asked.replyTo().tell(new TransportCommand.SideClosed("TCP"));
    file.expectMessageClass(TransportCommand.CloseRequesterSide.class); // never answered

    manualTime.expectNoMessageFor(GuardianChildren.TRANSPORT_TIMEOUT.minusMillis(1), closed);
    manualTime.timePasses(Duration.ofMillis(2));
    assertEquals(new SideClosed(Side.REQUESTER, 0), closed.receiveMessage());
  }

  @Test
  void closeSourceStopsTheListenerThenClosesTheSourceLanesThenFencesTheSharedRanges() {
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(new EngineGuardian.CloseSource(closed.getRef()));
    awaitState("engine/control-service", OwnerState.STOPPED);
    assertListenerClosed(self);
    TransportCommand.CloseSourceSide asked =
        tcp.expectMessageClass(TransportCommand.CloseSourceSide.class);
    assertFalse(seen.contains("Registry:FenceShared"), "not before the lanes have closed");
    asked.replyTo().tell(new TransportCommand.SideClosed("TCP"));
    file.expectMessageClass(TransportCommand.CloseSourceSide.class)
        .replyTo()
        .tell(new TransportCommand.SideClosed("FILE"));

    assertEquals(new SideClosed(Side.SOURCE, 0), closed.receiveMessage());
    assertEquals(
        List.of("ControlService:Stop", "transport-tcp:CloseSourceSide", "Registry:FenceShared"),
        seen.stream()
            .filter(
                s ->
                    s.equals("ControlService:Stop")
                        || s.equals("transport-tcp:CloseSourceSide")
                        || s.equals("Registry:FenceShared"))
            .toList());
    assertFalse(seen.contains("SegmentTable:Fence"), "the requester side is untouched");
    assertTrue(handles.gate().tryBatch().granted(), "the requester side still admits");
  }

  @Test
  void aControlServiceThatDoesNotAnswerItsStopHoldsTheSourceCloseOnlyUntilTheAskTimesOut() {
    failures.put("ControlService:Stop", new IllegalStateException("stuck listener"));
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(new EngineGuardian.CloseSource(closed.getRef()));
    awaitState("engine/control-service", OwnerState.QUARANTINED);
    tcp.expectNoMessage(SHORT);

    manualTime.timePasses(GuardianChildren.STOP_CONTROL_TIMEOUT);
    answerSide(TransportCommand.CloseSourceSide.class);
    assertEquals(new SideClosed(Side.SOURCE, 0), closed.receiveMessage());

    // Quarantined: a later close does not wait for it (no scheduler time passes here).
    guardian.tell(new EngineGuardian.CloseSource(closed.getRef()));
    answerSide(TransportCommand.CloseSourceSide.class);
    assertEquals(new SideClosed(Side.SOURCE, 0), closed.receiveMessage());
  }

  @Test
  void aQuarantinedRegistryMakesTheSourceCloseSayItCouldNotFenceTheSharedRanges() {
    failures.put("Registry:FenceShared", new IllegalStateException("broken registry"));
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(new EngineGuardian.CloseSource(closed.getRef()));
    answerSide(TransportCommand.CloseSourceSide.class);
    assertEquals(new SideClosed(Side.SOURCE, -1), closed.receiveMessage());
    awaitState("engine/registry", OwnerState.QUARANTINED);
    assertEquals("Registry", quarantine.list().getFirst().owner());
  }

  @Test
  void shutdownStopsTheListenerThenTheTransportsThenTheOwnersAndConfirmsOnceTheRegistryEnded()
      throws Exception {
    ActorRef<Registry.Command> registry = handles.registry();
    TestProbe<EngineGuardian.ShutdownDone> done = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.Shutdown(done.getRef()));
    awaitState("engine", OwnerState.STOPPING);
    assertEquals(EngineOwed.Phase.CLOSING, handles.lifecycle().phase());
    assertEquals(
        new Admission.Decision.Unavailable(
            "engine is not accepting requester work: engine is closing"),
        handles.gate().tryBatch());
    awaitState("engine/control-service", OwnerState.STOPPED);
    TransportCommand.Shutdown tcpShutdown = tcp.expectMessageClass(TransportCommand.Shutdown.class);
    TransportCommand.Shutdown fileShutdown =
        file.expectMessageClass(TransportCommand.Shutdown.class);
    assertTrue(
        seen.indexOf("ControlService:Stop") < seen.indexOf("transport-tcp:Shutdown"),
        () -> "the listener stops first: " + seen);

    // Stopping: every request is answered at once; a second shutdown waits with the first.
    TestProbe<EngineGuardian.SpawnBatchReply> batch = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.SpawnBatch(8, batch.getRef()));
    assertEquals(
        new EngineGuardian.BatchRefused(new Admission.Decision.Unavailable("engine is closing")),
        batch.receiveMessage());
    TestProbe<SideClosed> sides = sideCloser();
    guardian.tell(new EngineGuardian.CloseRequester(System.nanoTime(), sides.getRef()));
    assertEquals(new SideClosed(Side.REQUESTER, 0), sides.receiveMessage());
    guardian.tell(new EngineGuardian.CloseSource(sides.getRef()));
    assertEquals(new SideClosed(Side.SOURCE, 0), sides.receiveMessage());
    TestProbe<EngineGuardian.ShutdownDone> again = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.Shutdown(again.getRef()));
    tcp.expectNoMessage(SHORT);
    file.expectNoMessage(Duration.ZERO);
    done.expectNoMessage(Duration.ZERO);
    assertNotNull(row("engine/registry"), "the owners run until the transports are down");

    tcpShutdown.replyTo().tell(new TransportCommand.ShutdownDone("TCP"));
    done.expectNoMessage(SHORT);
    fileShutdown.replyTo().tell(new TransportCommand.ShutdownDone("FILE"));
    done.expectMessage(new EngineGuardian.ShutdownDone());
    again.expectMessage(new EngineGuardian.ShutdownDone());
    watcher.expectTerminated(registry, Duration.ofSeconds(10));
    watcher.expectTerminated(guardian, Duration.ofSeconds(10));
    assertEquals(EngineOwed.Phase.CLOSED, handles.lifecycle().phase());
    assertNull(row("engine"));
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(r -> r.path().equals("engine") && r.lastState() == OwnerState.STOPPING),
        () -> board.snapshot().retired().toString());
    assertEquals(List.of(), quarantine.list(), "an orderly close quarantines nothing");
  }

  @Test
  void aShutdownAnswersEverySideCloseStillUnderWay() {
    assertTrue(handles.gate().tryTasks(1, 4096).granted(), "holds the requester close");
    TestProbe<SideClosed> closed = sideCloser();
    guardian.tell(
        new EngineGuardian.CloseRequester(System.nanoTime() + 60_000_000_000L, closed.getRef()));
    closed.expectNoMessage(SHORT);
    guardian.tell(
        new EngineGuardian.Shutdown(
            testKit.<EngineGuardian.ShutdownDone>createTestProbe().getRef()));
    assertEquals(new SideClosed(Side.REQUESTER, 0), closed.receiveMessage());
  }

  @Test
  void aTransportThatDoesNotAnswerTheShutdownHoldsTheCloseOnlyUntilItsAskTimesOut() {
    TestProbe<EngineGuardian.ShutdownDone> done = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.Shutdown(done.getRef()));
    tcp.expectMessageClass(TransportCommand.Shutdown.class)
        .replyTo()
        .tell(new TransportCommand.ShutdownDone("TCP"));
    file.expectMessageClass(TransportCommand.Shutdown.class); // never answered

    manualTime.expectNoMessageFor(GuardianChildren.TRANSPORT_TIMEOUT.minusMillis(1), done);
    manualTime.timePasses(Duration.ofMillis(2));
    done.expectMessage(new EngineGuardian.ShutdownDone());
    watcher.expectTerminated(guardian, Duration.ofSeconds(10));
  }

  @Test
  void anOwnerThatStopsWhileRunningIsQuarantinedAndTheCloseDoesNotWaitForIt() {
    failures.put("Registry:Unregister", new AssertionError("the Registry fails"));
    TestProbe<Registry.UnregisterReply> unregistered = testKit.createTestProbe();
    handles.registry().tell(new Registry.Unregister(1, unregistered.getRef()));
    watcher.expectTerminated(handles.registry(), Duration.ofSeconds(10));
    eventually(() -> assertEquals(1, quarantine.list().size()));
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals("Registry", q.owner());
    assertTrue(q.reason().startsWith("its actor "), q::toString);
    assertTrue(q.reason().contains("stopped unexpectedly"), q::toString);
    assertNotNull(handles.supervision().unavailable(EngineGuardian.REGISTRY));
    awaitState("engine", OwnerState.RUNNING);

    TestProbe<EngineGuardian.ShutdownDone> done = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.Shutdown(done.getRef()));
    tcp.expectMessageClass(TransportCommand.Shutdown.class)
        .replyTo()
        .tell(new TransportCommand.ShutdownDone("TCP"));
    file.expectMessageClass(TransportCommand.Shutdown.class)
        .replyTo()
        .tell(new TransportCommand.ShutdownDone("FILE"));
    done.expectMessage(new EngineGuardian.ShutdownDone());
    assertEquals(EngineOwed.Phase.CLOSED, handles.lifecycle().phase());
  }

  @Test
  void aTransportSupervisorThatStopsWhileRunningIsQuarantinedAndTheCloseDoesNotWaitForIt() {
    ActorRef<TransportCommand> fileTransport = handles.transports().get(Transport.FILE);
    fileTransport.tell(new StopYourself());
    watcher.expectTerminated(fileTransport, Duration.ofSeconds(10));
    eventually(() -> assertEquals(1, quarantine.list().size()));
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals("transport-file", q.owner());
    assertEquals(QuarantinedOwner.Kind.OWNER, q.kind());
    assertEquals(OwnerState.RUNNING, row("engine").state());

    // Its shutdown is never answered: the close goes on when that ask times out.
    TestProbe<EngineGuardian.ShutdownDone> done = testKit.createTestProbe();
    guardian.tell(new EngineGuardian.Shutdown(done.getRef()));
    tcp.expectMessageClass(TransportCommand.Shutdown.class)
        .replyTo()
        .tell(new TransportCommand.ShutdownDone("TCP"));
    manualTime.timePasses(GuardianChildren.TRANSPORT_TIMEOUT);
    done.expectMessage(new EngineGuardian.ShutdownDone());
  }
}
