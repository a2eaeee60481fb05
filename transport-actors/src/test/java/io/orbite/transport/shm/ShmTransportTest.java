package io.orbite.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportCommand.OpenPeerReply;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedHost;
import io.orbite.nativebind.HostIdentity;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The SHM transport's supervisor ({@link ShmTransport}): what it answers in each state (serving,
 * its requester side closed, stopping), what it tells its endpoints, and what the owner view shows;
 * an endpoint is kept opening by holding the blocking-I/O executor.
 *
 * <p>It answers every open, a refused one included (C10: a clear error, never a timeout). A peer
 * that reports another host is refused by the proof at once, on the blocking-I/O executor; the
 * endpoint used to be spawned and then told the open, so a refusal that came first stopped the
 * endpoint before the open reached it, and the open waited out the SegmentTable's 30 s ask (seen as
 * a flaky {@code ShmOtherHostIT}); an open sent just after a refusal went to the stopped endpoint
 * the same way. An open just after a refusal could find the refused endpoint dropped but not yet
 * stopped, and its fresh endpoint's name still taken: the spawn threw and the transport stopped.
 * Each of many opens, two at a time and then one more, must be refused promptly.
 */
class ShmTransportTest {
  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());
  private static final ExecutorService blockingIo = Executors.newFixedThreadPool(2);
  private static final HostIdentity LOCAL =
      new HostIdentity("this-host", "00000000-0000-0000-0000-000000000001");

  /** Exports of a peer on another host: the proof refuses them at once, when it runs. */
  private static final SharedExports ELSEWHERE =
      new SharedExports(
          new SharedHost("another-host", "00000000-0000-0000-0000-000000000002", 4242, 7, 1),
          List.of());

  private static final Duration SHORT = Duration.ofMillis(300);

  private final OwnerBoard board = new OwnerBoard();
  private final HeldExecutor held = new HeldExecutor();
  private final TestProbe<Object> watcher = testKit.createTestProbe();

  @AfterEach
  void release() {
    held.release();
    held.shutdown();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
    blockingIo.shutdownNow();
  }

  @Test
  void everyOpenOfAPeerOnAnotherHostIsRefusedAtOnceNeverLeftUnanswered() {
    HostIdentity local = new HostIdentity("this-host", "00000000-0000-0000-0000-000000000001");
    TransportContext context =
        TestContexts.context(
            EngineConfig.defaults(),
            blockingIo,
            new EngineTally(),
            new OwnerBoard(),
            new QuarantineLedger(),
            FaultHooks.NONE);
    ActorRef<TransportCommand> shm = testKit.spawn(ShmTransport.create(context, local));
    SharedExports elsewhere =
        new SharedExports(
            new SharedHost("another-host", "00000000-0000-0000-0000-000000000002", 4242, 7, 1),
            List.of());
    TestProbe<TransportCommand.OpenPeerReply> replies = testKit.createTestProbe();
    for (int i = 1; i <= 300; i++) {
      SegmentDescriptor peer = new SegmentDescriptor("127.0.0.1", 4000, i);
      // Twice at once: the second may reach the endpoint after its refusal, or a fresh one.
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      expectRefusal(replies, i + ".1");
      expectRefusal(replies, i + ".2");
      // Once refused, at once again: the transport may still hold the refused endpoint, be closing
      // it, or have dropped it and spawn a fresh one while the old one is still stopping.
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      expectRefusal(replies, i + ".3");
    }
  }

  /** An SHM transport over the held executor, with {@code maxPeerSegments} of 1. */
  private ActorRef<TransportCommand> spawnHeld() {
    TransportContext context =
        TestContexts.context(
            EngineConfig.defaults().withBudgets(BudgetConfig.defaults().withMaxPeerSegments(1)),
            held,
            new EngineTally(),
            board,
            new QuarantineLedger(),
            FaultHooks.NONE);
    return testKit.spawn(ShmTransport.create(context, LOCAL));
  }

  private static SegmentDescriptor peer(long epoch) {
    return new SegmentDescriptor("127.0.0.1", 4100, epoch);
  }

  private static TransportCommand.OpenPeer open(
      SegmentDescriptor peer, SharedExports exports, TestProbe<OpenPeerReply> replyTo) {
    return new TransportCommand.OpenPeer(peer, described(peer, exports), replyTo.getRef());
  }

  /** An endpoint of {@code shm} kept opening: the open of {@code peer} waits in it. */
  private TestProbe<OpenPeerReply> opening(ActorRef<TransportCommand> shm, SegmentDescriptor peer) {
    held.hold();
    TestProbe<OpenPeerReply> waiting = testKit.createTestProbe();
    shm.tell(open(peer, ELSEWHERE, waiting));
    eventually(() -> assertEquals(1, held.waiting()));
    return waiting;
  }

  private OwnerView.Owner row(ActorRef<?> shm) {
    return board.row(shm);
  }

  private void awaitRow(ActorRef<?> shm, OwnerState state, long endpoints) {
    eventually(
        () -> {
          OwnerView.Owner r = row(shm);
          assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
          assertEquals("ShmTransport", r.kind());
          assertEquals(Map.of("endpoints", endpoints), r.charges());
        });
  }

  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  /** A connection handed over to SHM (which has none of its own); returns the client's end. */
  private SocketChannel handOver(ActorRef<TransportCommand> shm) throws IOException {
    try (ServerSocketChannel listener =
        ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
      SocketChannel client = SocketChannel.open(listener.getLocalAddress());
      client.socket().setSoTimeout(10_000);
      shm.tell(new TransportCommand.AdoptConnection(listener.accept(), ByteBuffer.allocate(56)));
      return client;
    }
  }

  private static void assertClosedByPeer(SocketChannel client) throws IOException {
    try (client) {
      assertEquals(-1, client.socket().getInputStream().read(), "the transport closed it");
    }
  }

  private static void expectRefusal(
      TestProbe<OpenPeerReply> replies, ErrorKind kind, String detail) {
    assertEquals(new TransportCommand.PeerOpenFailed(kind, detail), replies.receiveMessage());
  }

  @Test
  void anOpenOfAPeerThatExportsNothingIsRefusedWithoutSpawningAnEndpoint() {
    ActorRef<TransportCommand> shm = spawnHeld();
    TestProbe<OpenPeerReply> replies = testKit.createTestProbe();
    shm.tell(open(peer(1), null, replies));
    expectRefusal(replies, ErrorKind.UNAVAILABLE, "the peer exports no memory through SHM");
    assertEquals(0, held.waiting(), "no proof was started");
    awaitRow(shm, OwnerState.SERVING, 0);
  }

  @Test
  void opensBeyondMaxPeerSegmentsAreRefusedWhileOpensOfAKnownPeerWaitOnItsEndpoint() {
    ActorRef<TransportCommand> shm = spawnHeld();
    TestProbe<OpenPeerReply> first = opening(shm, peer(1));
    awaitRow(shm, OwnerState.SERVING, 1);

    TestProbe<OpenPeerReply> other = testKit.createTestProbe();
    shm.tell(open(peer(2), ELSEWHERE, other));
    expectRefusal(
        other, ErrorKind.RESOURCE_EXHAUSTED, "SHM endpoints: 1 peer incarnations are open");
    TestProbe<OpenPeerReply> same = testKit.createTestProbe();
    shm.tell(open(peer(1), ELSEWHERE, same));
    same.expectNoMessage(SHORT);
    assertEquals(1, held.waiting(), "one proof for the peer's endpoint");

    // The proof runs and refuses: both opens of that endpoint get its answer.
    held.release();
    expectRefusal(first);
    expectRefusal(same);
    awaitRow(shm, OwnerState.SERVING, 0);
  }

  private static void expectRefusal(TestProbe<OpenPeerReply> replies) {
    expectRefusal(replies, "");
  }

  @Test
  void closeSourceSideIsAnsweredAtOnceAndAHandedOverConnectionIsClosed() throws IOException {
    ActorRef<TransportCommand> shm = spawnHeld();
    opening(shm, peer(1));
    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    shm.tell(new TransportCommand.CloseSourceSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("SHM"), closed.receiveMessage());
    assertClosedByPeer(handOver(shm));
    awaitRow(shm, OwnerState.SERVING, 1);
  }

  @Test
  void closeRequesterSideIsAnsweredOnceEveryEndpointStoppedThenOpensAreRefused() {
    ActorRef<TransportCommand> shm = spawnHeld();
    TestProbe<OpenPeerReply> waiting = opening(shm, peer(1));
    TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
    shm.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    closed.expectNoMessage(SHORT);

    held.release();
    expectRefusal(waiting);
    assertEquals(new TransportCommand.SideClosed("SHM"), closed.receiveMessage());
    awaitRow(shm, OwnerState.SERVING, 0);
    TestProbe<OpenPeerReply> later = testKit.createTestProbe();
    shm.tell(open(peer(1), ELSEWHERE, later));
    expectRefusal(later, ErrorKind.UNAVAILABLE, "the requester side of this engine is closed");
    assertEquals(0, held.waiting(), "no endpoint was spawned");
  }

  @Test
  void shutdownWaitsForEveryEndpointAndAnswersEachMessageMeanwhile() throws IOException {
    ActorRef<TransportCommand> shm = spawnHeld();
    TestProbe<OpenPeerReply> waiting = opening(shm, peer(1));
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    shm.tell(new TransportCommand.Shutdown(done.getRef()));
    awaitRow(shm, OwnerState.STOPPING, 1);

    TestProbe<OpenPeerReply> refused = testKit.createTestProbe();
    shm.tell(open(peer(2), ELSEWHERE, refused));
    expectRefusal(refused, ErrorKind.UNAVAILABLE, "SHM transport is stopping");
    assertClosedByPeer(handOver(shm));
    TestProbe<TransportCommand.SideClosed> sourceClosed = testKit.createTestProbe();
    shm.tell(new TransportCommand.CloseSourceSide(sourceClosed.getRef()));
    assertEquals(new TransportCommand.SideClosed("SHM"), sourceClosed.receiveMessage());
    TestProbe<TransportCommand.SideClosed> requesterClosed = testKit.createTestProbe();
    shm.tell(new TransportCommand.CloseRequesterSide(requesterClosed.getRef()));
    TestProbe<TransportCommand.ShutdownDone> again = testKit.createTestProbe();
    shm.tell(new TransportCommand.Shutdown(again.getRef()));
    done.expectNoMessage(SHORT);
    requesterClosed.expectNoMessage(Duration.ZERO);
    again.expectNoMessage(Duration.ZERO);

    // The endpoint's proof refuses; it answers its open and its close, and stops.
    held.release();
    expectRefusal(waiting);
    assertEquals(new TransportCommand.ShutdownDone("SHM"), done.receiveMessage());
    assertEquals(new TransportCommand.ShutdownDone("SHM"), again.receiveMessage());
    assertEquals(new TransportCommand.SideClosed("SHM"), requesterClosed.receiveMessage());
    watcher.expectTerminated(shm, Duration.ofSeconds(10));
    assertEquals(null, row(shm));
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("ShmTransport") && r.lastState() == OwnerState.STOPPING),
        () -> board.snapshot().retired().toString());
  }

  @Test
  void shutdownWithNoEndpointIsAnsweredAtOnceAndStops() {
    ActorRef<TransportCommand> shm = spawnHeld();
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    shm.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(new TransportCommand.ShutdownDone("SHM"), done.receiveMessage());
    watcher.expectTerminated(shm, Duration.ofSeconds(10));
    assertEquals(null, row(shm));
  }

  private static Description described(SegmentDescriptor peer, SharedExports exports) {
    return new Description(peer.host(), peer.port(), peer.epoch(), List.of(), exports);
  }

  private static void expectRefusal(
      TestProbe<TransportCommand.OpenPeerReply> replies, String open) {
    TransportCommand.PeerOpenFailed refused =
        assertInstanceOf(
            TransportCommand.PeerOpenFailed.class,
            replies.receiveMessage(Duration.ofSeconds(3)),
            "open " + open);
    assertEquals(ErrorKind.UNAVAILABLE, refused.kind());
    assertTrue(refused.detail().contains("another host"), refused.detail());
  }
}
