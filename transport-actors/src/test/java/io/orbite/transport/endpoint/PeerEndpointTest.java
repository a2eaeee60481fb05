package io.orbite.transport.endpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand.OpenPeerReply;
import io.orbite.engine.spi.TransportCommand.PeerOpenFailed;
import io.orbite.engine.spi.TransportCommand.PeerOpened;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.testkit.GateChannel;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.transport.TestContexts;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The endpoint scaffold ({@link PeerEndpoint}) over a link the test drives: what each state answers
 * to every message (an Attach and a Close while opening, after a refused open, while active,
 * draining and quarantined), what the owner view shows in each, what the endpoint lists in the
 * {@link QuarantineLedger}, and its two timers, the drain window and the link's tick, on
 * ManualTime. The link opens when the test completes its future; it drains when the test completes
 * its drain.
 */
class PeerEndpointTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(PeerEndpointTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());

  private static final Duration WINDOW = Duration.ofSeconds(5);
  private static final Duration SHORT = Duration.ofMillis(200);
  private static final String KIND = "FakeEndpoint";
  private static final AtomicInteger PORTS = new AtomicInteger(5000);

  private final SegmentDescriptor peer =
      new SegmentDescriptor("127.0.0.1", PORTS.incrementAndGet(), 0x5e1fL);
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final ExecutorService blockingIo = Executors.newCachedThreadPool();
  private final TransportContext context =
      TestContexts.context(
          EngineConfig.defaults()
              .withTimeouts(
                  TimeoutConfig.defaults().withDestructionWindowMillis(WINDOW.toMillis())),
          blockingIo,
          new EngineTally(),
          board,
          quarantine,
          FaultHooks.NONE);

  /** What the opener returns (or throws) once the test completes it. */
  private final CompletableFuture<FakeLink> opened = new CompletableFuture<>();

  /** The callback the endpoint handed the opener: a fence of the channel. */
  private final CompletableFuture<Runnable> fencedCallback = new CompletableFuture<>();

  private final TestProbe<PeerEndpoint.Refused> refused = testKit.createTestProbe();

  @AfterEach
  void stop() {
    opened.completeExceptionally(new IOException("test over"));
    blockingIo.shutdownNow();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** A link whose drain, workers and ticks the test controls, recording what it was asked. */
  private static final class FakeLink implements EndpointLink {
    final GateChannel channel;
    final CompletableFuture<List<String>> drained = new CompletableFuture<>();
    final List<Object> attached = Collections.synchronizedList(new ArrayList<>());
    final List<String> closes = new CopyOnWriteArrayList<>();
    final AtomicInteger ticks = new AtomicInteger();
    volatile List<String> running = List.of("worker 0");
    volatile RuntimeException attachFails;
    final Duration tickEvery;

    FakeLink(SegmentDescriptor peer, Duration tickEvery) {
      this.channel = new GateChannel(peer, Transport.TCP);
      this.tickEvery = tickEvery;
    }

    @Override
    public PeerChannel channel() {
      return channel;
    }

    @Override
    public OpenPeerReply attach(Object detail) {
      if (attachFails != null) {
        throw attachFails;
      }
      attached.add(detail == null ? "none" : detail);
      return new PeerOpened(channel);
    }

    @Override
    public void close(String reason) {
      closes.add(reason);
    }

    @Override
    public CompletableFuture<List<String>> drained() {
      return drained;
    }

    @Override
    public List<String> running() {
      return running;
    }

    @Override
    public Map<String, Long> charges() {
      return Map.of("lanes", (long) running.size(), "ticks", (long) ticks.get());
    }

    @Override
    public Duration tickEvery() {
      return tickEvery;
    }

    @Override
    public void tick() {
      ticks.incrementAndGet();
    }
  }

  private ActorRef<PeerEndpoint.Command> spawn(PeerEndpoint.Attach first) {
    return testKit.spawn(
        PeerEndpoint.create(
            KIND,
            peer,
            context,
            fenced -> {
              fencedCallback.complete(fenced);
              try {
                return opened.get();
              } catch (ExecutionException e) {
                throw (Exception) e.getCause();
              }
            },
            first,
            refused.getRef()::tell));
  }

  private TestProbe<OpenPeerReply> replies() {
    return testKit.createTestProbe();
  }

  private TestProbe<PeerEndpoint.Closed> closers() {
    return testKit.createTestProbe();
  }

  /** Spawns an endpoint, opens its link and waits for its first attach to be answered. */
  private FakeLink active(ActorRef<PeerEndpoint.Command>[] endpoint, Duration tickEvery) {
    TestProbe<OpenPeerReply> first = replies();
    endpoint[0] = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    FakeLink link = new FakeLink(peer, tickEvery);
    opened.complete(link);
    assertSame(link.channel, assertInstanceOf(PeerOpened.class, first.receiveMessage()).channel());
    awaitState(endpoint[0], OwnerState.ACTIVE);
    return link;
  }

  @SuppressWarnings("unchecked")
  private static ActorRef<PeerEndpoint.Command>[] ref() {
    return new ActorRef[1];
  }

  private OwnerView.Owner row(ActorRef<?> endpoint) {
    return board.row(endpoint);
  }

  /** Waits until the owner view shows the endpoint in {@code state}. */
  private void awaitState(ActorRef<?> endpoint, OwnerState state) {
    refused.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          OwnerView.Owner row = row(endpoint);
          assertTrue(
              row != null && row.state() == state, () -> "want " + state + ": " + board.snapshot());
          return null;
        });
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(refused, check);
  }

  /** The endpoint stopped, and the owner view remembers it with {@code lastState}. */
  private void assertRetired(
      ActorRef<PeerEndpoint.Command> endpoint, TestProbe<?> probe, OwnerState lastState) {
    probe.expectTerminated(endpoint, Duration.ofSeconds(10));
    String key = board.key(endpoint);
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(r -> r.path().equals(key) && r.lastState() == lastState),
        () -> "want retired " + lastState + ": " + board.snapshot().retired());
  }

  private static PeerOpenFailed refusal(TestProbe<OpenPeerReply> replies) {
    return assertInstanceOf(PeerOpenFailed.class, replies.receiveMessage());
  }

  @Test
  void attachesAndClosesWhileOpeningWaitForTheLinkAndEveryAttachGetsItsChannel() {
    TestProbe<OpenPeerReply> first = replies();
    TestProbe<OpenPeerReply> second = replies();
    ActorRef<PeerEndpoint.Command> endpoint = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    endpoint.tell(new PeerEndpoint.Attach("exports", second.getRef()));
    awaitState(endpoint, OwnerState.OPENING);
    assertEquals(KIND, row(endpoint).kind());
    assertEquals("peer " + peer, row(endpoint).detail());
    first.expectNoMessage(SHORT);
    second.expectNoMessage(Duration.ZERO);

    FakeLink link = new FakeLink(peer, null);
    opened.complete(link);
    assertSame(link.channel, assertInstanceOf(PeerOpened.class, first.receiveMessage()).channel());
    assertSame(link.channel, assertInstanceOf(PeerOpened.class, second.receiveMessage()).channel());
    assertEquals(List.of("none", "exports"), link.attached, "each open's detail reaches the link");
    awaitState(endpoint, OwnerState.ACTIVE);
    assertEquals(Map.of("lanes", 1L, "ticks", 0L), row(endpoint).charges());
    refused.expectNoMessage(Duration.ZERO);

    // Active: a later attach is answered at once with the same channel.
    TestProbe<OpenPeerReply> third = replies();
    endpoint.tell(new PeerEndpoint.Attach(null, third.getRef()));
    assertSame(link.channel, assertInstanceOf(PeerOpened.class, third.receiveMessage()).channel());
  }

  @Test
  void aFailedOpenAnswersEveryWaiterWithItsKindTellsTheParentAndRefusesLaterAttachesAlike() {
    TestProbe<OpenPeerReply> first = replies();
    TestProbe<OpenPeerReply> second = replies();
    ActorRef<PeerEndpoint.Command> endpoint = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    endpoint.tell(new PeerEndpoint.Attach(null, second.getRef()));
    awaitState(endpoint, OwnerState.OPENING);

    opened.completeExceptionally(
        new TransferException(ErrorKind.EPOCH_MISMATCH, "the peer now runs epoch 99"));
    for (TestProbe<OpenPeerReply> waiter : List.of(first, second)) {
      PeerOpenFailed failed = refusal(waiter);
      assertEquals(ErrorKind.EPOCH_MISMATCH, failed.kind());
      assertEquals("the peer now runs epoch 99", failed.detail());
    }
    assertEquals(new PeerEndpoint.Refused(peer, endpoint), refused.receiveMessage());
    awaitState(endpoint, OwnerState.CLOSED);

    // Refused: every later attach gets the same answer, until the parent closes it.
    TestProbe<OpenPeerReply> later = replies();
    endpoint.tell(new PeerEndpoint.Attach(null, later.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.EPOCH_MISMATCH, "the peer now runs epoch 99"),
        later.receiveMessage());
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint.tell(new PeerEndpoint.Close("its open failed", closed.getRef()));
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    assertRetired(endpoint, closed, OwnerState.CLOSED);
    assertEquals(List.of(), quarantine.list());
  }

  @Test
  void anOpenFailingWithoutAKindIsRefusedUnavailableNamingTheCause() {
    TestProbe<OpenPeerReply> first = replies();
    spawn(new PeerEndpoint.Attach(null, first.getRef()));
    opened.completeExceptionally(new IOException("Connection refused"));
    PeerOpenFailed failed = refusal(first);
    assertEquals(ErrorKind.UNAVAILABLE, failed.kind());
    assertTrue(failed.detail().contains("Connection refused"), failed.detail());
  }

  @Test
  void aCloseWhileOpeningIsAnsweredWhenTheOpenFailsAndTheParentIsNotTold() {
    TestProbe<OpenPeerReply> first = replies();
    ActorRef<PeerEndpoint.Command> endpoint = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint.tell(new PeerEndpoint.Close("engine closing", closed.getRef()));
    closed.expectNoMessage(SHORT);

    opened.completeExceptionally(new TransferException(ErrorKind.TIMEOUT, "no answer"));
    assertEquals(new PeerOpenFailed(ErrorKind.TIMEOUT, "no answer"), first.receiveMessage());
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    closed.expectTerminated(endpoint, Duration.ofSeconds(10));
    refused.expectNoMessage(SHORT);
  }

  @Test
  void aCloseWhileOpeningIsHeldUntilTheLinkOpensThenDrainsItAfterAnsweringTheWaiters() {
    TestProbe<OpenPeerReply> first = replies();
    ActorRef<PeerEndpoint.Command> endpoint = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint.tell(new PeerEndpoint.Close("engine closing", closed.getRef()));
    FakeLink link = new FakeLink(peer, null);
    opened.complete(link);

    assertSame(link.channel, assertInstanceOf(PeerOpened.class, first.receiveMessage()).channel());
    awaitState(endpoint, OwnerState.DRAINING);
    assertEquals(List.of("engine closing"), link.closes);
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.LOCAL_CLOSE, "engine closing"),
        link.channel.gate().state());
    closed.expectNoMessage(SHORT);

    link.drained.complete(List.of());
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    assertRetired(endpoint, closed, OwnerState.DRAINING);
  }

  @Test
  void anActiveEndpointRefusesAnAttachWithTheKindOfItsChannelsState() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    link.channel.gate().fence(0x77, "a newer incarnation answers");

    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    assertEquals(
        new PeerOpenFailed(
            ErrorKind.EPOCH_MISMATCH,
            "the fake TCP channel to " + peer + " is fenced: a newer incarnation answers"),
        replies.receiveMessage());
    assertEquals(List.of("none"), link.attached, "a refused attach never reaches the link");
  }

  @Test
  void aFencedChannelDrainsTheEndpointShownFencedAndAttachesAreRefusedEpochMismatch() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    link.channel.fence(0x77, "a newer incarnation answers");
    fencedCallback.join().run();

    awaitState(endpoint[0], OwnerState.FENCED);
    assertEquals(List.of("fenced"), link.closes);
    assertTrue(
        row(endpoint[0]).detail().endsWith("is fenced: a newer incarnation answers"),
        row(endpoint[0]).detail());
    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    assertEquals(ErrorKind.EPOCH_MISMATCH, refusal(replies).kind());

    // A second fence while draining changes nothing.
    fencedCallback.join().run();
    link.drained.complete(List.of());
    assertRetired(endpoint[0], replies, OwnerState.FENCED);
    assertEquals(List.of("fenced"), link.closes);
    assertEquals(List.of(), quarantine.list());
  }

  @Test
  void workersThatAllEndByThemselvesCloseTheChannelPeerLostAndTheEndpointAnswersUntilDropped() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    link.running = List.of();
    link.drained.complete(List.of());

    // The parent is told, to drop it from its table; an open that reaches it meanwhile is
    // answered with the loss, never left waiting on a stopped actor.
    assertEquals(new PeerEndpoint.Refused(peer, endpoint[0]), refused.receiveMessage());
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.PEER_LOST, "every worker to " + peer + " ended"),
        link.channel.gate().state());
    assertEquals(ErrorKind.PEER_LOST, link.channel.gate().refusalKind());
    awaitState(endpoint[0], OwnerState.CLOSED);
    TestProbe<OpenPeerReply> late = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, late.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.PEER_LOST, link.channel.gate().refusal()),
        late.receiveMessage());
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint[0].tell(new PeerEndpoint.Close("dropped by its parent", closed.getRef()));
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    assertRetired(endpoint[0], closed, OwnerState.CLOSED);
    assertEquals(List.of(), link.closes, "nothing left to close");
    assertEquals(List.of(), quarantine.list());
  }

  @Test
  void aDrainingEndpointRefusesAttachesUnavailableAndAnswersEveryCloserOnceDrained() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    TestProbe<PeerEndpoint.Closed> first = closers();
    TestProbe<PeerEndpoint.Closed> second = closers();
    endpoint[0].tell(new PeerEndpoint.Close("the requester side was closed", first.getRef()));
    awaitState(endpoint[0], OwnerState.DRAINING);
    endpoint[0].tell(new PeerEndpoint.Close("the engine is closing", second.getRef()));

    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    assertEquals(
        new PeerOpenFailed(
            ErrorKind.UNAVAILABLE,
            "the fake TCP channel to " + peer + " is closed: the requester side was closed"),
        replies.receiveMessage());
    first.expectNoMessage(SHORT);
    assertEquals(List.of("the requester side was closed"), link.closes, "closed once");

    link.drained.complete(List.of());
    assertEquals(new PeerEndpoint.Closed(peer), first.receiveMessage());
    assertEquals(new PeerEndpoint.Closed(peer), second.receiveMessage());
    assertRetired(endpoint[0], first, OwnerState.DRAINING);
    manualTime.timePasses(WINDOW.multipliedBy(2));
    assertEquals(List.of(), quarantine.list(), "the window's timer was cancelled");
  }

  @Test
  void aDrainNotShownAWindowAfterTheCloseQuarantinesTheEndpointAndListsItsWorkers() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint[0].tell(new PeerEndpoint.Close("test", closed.getRef()));
    awaitState(endpoint[0], OwnerState.DRAINING);
    manualTime.expectNoMessageFor(WINDOW.minusMillis(1), closed);
    assertEquals(List.of(), quarantine.list(), "not before the window has passed");

    manualTime.timePasses(Duration.ofMillis(2));
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    awaitState(endpoint[0], OwnerState.QUARANTINED);
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals(KIND + " " + peer, q.owner());
    assertEquals(QuarantinedOwner.Kind.ENDPOINT, q.kind());
    assertEquals(
        "1 worker(s) still running 5000 ms after they were told to close: worker 0", q.reason());
    // The channel closed here now reads held: what it keeps outranks why it closed (C18).
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.HELD, "worker 0 did not end within the window"),
        link.channel.gate().state());

    // Quarantined: attaches refused UNQUIESCED, closers answered at once.
    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNQUIESCED, KIND + " to " + peer + " is quarantined"),
        replies.receiveMessage());
    TestProbe<PeerEndpoint.Closed> again = closers();
    endpoint[0].tell(new PeerEndpoint.Close("again", again.getRef()));
    assertEquals(new PeerEndpoint.Closed(peer), again.receiveMessage());
    manualTime.timePasses(WINDOW);
    assertEquals(1, quarantine.list().size(), "listed until its workers end");

    // The last worker ends: it leaves the list and stops.
    link.running = List.of();
    link.drained.complete(List.of());
    assertRetired(endpoint[0], closed, OwnerState.QUARANTINED);
    assertEquals(List.of(), quarantine.list());
  }

  @Test
  void aLinkThatKeepsSomethingAfterItsDrainIsQuarantinedForGood() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint[0].tell(new PeerEndpoint.Close("test", closed.getRef()));
    link.running = List.of();
    link.drained.complete(List.of("qp 3"));

    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
    awaitState(endpoint[0], OwnerState.QUARANTINED);
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals(KIND + " " + peer, q.owner());
    assertEquals(QuarantinedOwner.Kind.ENDPOINT, q.kind());
    assertEquals("could not release (never retried): [qp 3]", q.reason());
    assertEquals(ErrorKind.UNQUIESCED, link.channel.gate().refusalKind());
    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    assertEquals(ErrorKind.UNQUIESCED, refusal(replies).kind());

    // The window's timer was cancelled by the drain; nothing ends the quarantine.
    manualTime.timePasses(WINDOW.multipliedBy(2));
    closed.expectNoMessage(SHORT);
    assertEquals(1, quarantine.list().size());
    awaitState(endpoint[0], OwnerState.QUARANTINED);
  }

  @Test
  void theLinkTicksOnItsPeriodOnlyWhileActiveAndTheViewShowsWhatItReports() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, Duration.ofSeconds(1));
    assertEquals(0, link.ticks.get());
    manualTime.timePasses(Duration.ofMillis(999));
    assertEquals(0, link.ticks.get());
    manualTime.timePasses(Duration.ofMillis(1));
    eventually(() -> assertEquals(1, link.ticks.get()));
    manualTime.timePasses(Duration.ofSeconds(2));
    eventually(() -> assertEquals(3, link.ticks.get()));
    eventually(() -> assertEquals(3L, row(endpoint[0]).charges().get("ticks")));

    endpoint[0].tell(new PeerEndpoint.Close("test", closers().getRef()));
    awaitState(endpoint[0], OwnerState.DRAINING);
    manualTime.timePasses(Duration.ofSeconds(3));
    refused.expectNoMessage(SHORT);
    assertEquals(3, link.ticks.get(), "no tick once draining");
  }

  @Test
  void aFenceDuringTheOpenDrainsTheEndpointOnceItIsOpen() {
    TestProbe<OpenPeerReply> first = replies();
    ActorRef<PeerEndpoint.Command> endpoint = spawn(new PeerEndpoint.Attach(null, first.getRef()));
    FakeLink link = new FakeLink(peer, null);
    // The link's workers find the incarnation ended while the opener is still returning.
    link.channel.fence(0, "the incarnation has ended");
    fencedCallback.join().run();
    opened.complete(link);

    assertSame(link.channel, assertInstanceOf(PeerOpened.class, first.receiveMessage()).channel());
    awaitState(endpoint, OwnerState.FENCED);
    assertEquals(List.of("fenced"), link.closes);
    link.drained.complete(List.of());
    assertRetired(endpoint, first, OwnerState.FENCED);
  }

  @Test
  void aLinkThatThrowsQuarantinesTheEndpointUnderSupervisionAndLaterAttachesAreRefused() {
    ActorRef<PeerEndpoint.Command>[] endpoint = ref();
    FakeLink link = active(endpoint, null);
    link.attachFails = new IllegalStateException("broken link");

    TestProbe<OpenPeerReply> replies = replies();
    endpoint[0].tell(new PeerEndpoint.Attach(null, replies.getRef()));
    PeerOpenFailed failed = refusal(replies);
    assertEquals(ErrorKind.UNAVAILABLE, failed.kind());
    assertTrue(
        failed.detail().startsWith("the " + KIND + " " + peer + " of engine test-engine is"),
        failed.detail());
    assertTrue(failed.detail().contains("broken link"), failed.detail());
    awaitState(endpoint[0], OwnerState.QUARANTINED);
    QuarantinedOwner q = quarantine.list().getFirst();
    assertEquals(KIND + " " + peer, q.owner());
    assertEquals(QuarantinedOwner.Kind.OWNER, q.kind());

    TestProbe<PeerEndpoint.Closed> closed = closers();
    endpoint[0].tell(new PeerEndpoint.Close("test", closed.getRef()));
    assertEquals(new PeerEndpoint.Closed(peer), closed.receiveMessage());
  }
}
