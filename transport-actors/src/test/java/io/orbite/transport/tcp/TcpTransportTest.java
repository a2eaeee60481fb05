package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportCommand.OpenPeerReply;
import io.orbite.engine.spi.TransportCommand.PeerOpenFailed;
import io.orbite.engine.spi.TransportCommand.PeerOpened;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The TCP transport's supervisor ({@link TcpTransport}): one endpoint per peer incarnation (shared
 * by its opens, dropped when its open failed or when it stopped), source lanes for handed-over
 * connections up to {@code budgets.maxEndpoints x tcp.lanes}, the side closes (C8) and the
 * shutdown, with what it answers in each state and what the owner view shows. The peers are
 * loopback sockets of the test's own; an endpoint is kept opening by holding the blocking-I/O
 * executor.
 */
class TcpTransportTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(TcpTransportTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());
  private static final Duration SHORT = Duration.ofMillis(300);
  private static final long PEER_EPOCH = 0x5e1fL;

  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final HeldExecutor blockingIo = new HeldExecutor();
  private final EngineConfig config =
      EngineConfig.defaults()
          .withTcp(TcpConfig.defaults().withLanes(1))
          .withBudgets(BudgetConfig.defaults().withMaxEndpoints(1));
  private final TestProbe<Object> watcher = testKit.createTestProbe();
  private FakePeer peer;
  private ServerSocketChannel listener;
  private final List<SocketChannel> clients = new CopyOnWriteArrayList<>();
  private ActorRef<TransportCommand> tcp;

  @BeforeEach
  void start() throws IOException {
    peer = new FakePeer();
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    tcp =
        testKit.spawn(
            TcpTransport.create(
                TestContexts.context(
                    config, blockingIo, new EngineTally(), board, quarantine, FaultHooks.NONE)));
  }

  @AfterEach
  void stop() throws IOException {
    blockingIo.release();
    for (SocketChannel c : clients) {
      c.close();
    }
    listener.close();
    peer.close();
    blockingIo.shutdown();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * The source end of requester lanes: answers each HELLO with a HELLO_ACK (of the status next in
   * {@link #refusals}, else accepted) and then reads until its lane closes.
   */
  private static final class FakePeer implements AutoCloseable {
    final Queue<ErrorKind> refusals = new ConcurrentLinkedQueue<>();
    final List<Socket> lanes = new CopyOnWriteArrayList<>();
    final LoopbackSource source;

    FakePeer() throws IOException {
      source = new LoopbackSource(this::serve);
    }

    SegmentDescriptor incarnation(long epoch) {
      return source.incarnation(epoch);
    }

    private void serve(Socket s, DataInputStream in, OutputStream out, ByteBuffer hello)
        throws IOException {
      ErrorKind refusal = refusals.poll();
      if (refusal == null) {
        lanes.add(s); // before the answer: the requester counts it once its open is answered
      }
      ByteBuffer ack = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(
          ack,
          0,
          FrameType.HELLO_ACK,
          refusal == null ? 0 : refusal.code(),
          0,
          FrameCodec.requestId(hello, 0),
          FrameCodec.epoch(hello, 0),
          0,
          0,
          0);
      out.write(ack.array());
      if (refusal != null) {
        return;
      }
      while (in.read() >= 0) {
        // A requester lane sends nothing here unless asked; read until it closes.
      }
    }

    /** The peer goes away: every lane's socket closes from this end. */
    void dropLanes() throws IOException {
      for (Socket s : lanes) {
        s.close();
      }
    }

    @Override
    public void close() throws IOException {
      source.close();
      dropLanes();
    }
  }

  private static Description described(SegmentDescriptor p) {
    return new Description(p.host(), p.port(), p.epoch(), List.of(), null);
  }

  private OpenPeerReply open(SegmentDescriptor p) {
    TestProbe<OpenPeerReply> reply = testKit.createTestProbe();
    tcp.tell(new TransportCommand.OpenPeer(p, described(p), reply.getRef()));
    return reply.receiveMessage(Duration.ofSeconds(10));
  }

  private PeerChannel opened(SegmentDescriptor p) {
    return assertInstanceOf(PeerOpened.class, open(p)).channel();
  }

  private OwnerView.Owner row() {
    return board.row(tcp);
  }

  private List<OwnerView.Owner> endpointRows() {
    return board.snapshot().owners().stream().filter(o -> o.kind().equals("TcpEndpoint")).toList();
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  private void awaitRow(OwnerState state, Map<String, Long> charges) {
    eventually(
        () -> {
          OwnerView.Owner r = row();
          assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
          assertEquals(charges, r.charges());
          assertEquals("TcpTransport", r.kind());
        });
  }

  private static Map<String, Long> charges(long endpoints, long sourceLanes) {
    return Map.of("endpoints", endpoints, "sourceLanes", sourceLanes, "sourceLanesLimit", 1L);
  }

  private TestProbe<TransportCommand.SideClosed> sideCloser() {
    return testKit.createTestProbe();
  }

  /** A connection whose HELLO named this engine, handed over as the control service would. */
  private SocketChannel adopt() throws IOException {
    SocketChannel client = SocketChannel.open(listener.getLocalAddress());
    clients.add(client);
    client.socket().setSoTimeout(10_000);
    SocketChannel accepted = listener.accept();
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        hello, 0, FrameType.HELLO, 0, 0, 1, TestContexts.EPOCH, 0xabcL, 0, Transport.TCP.code());
    tcp.tell(new TransportCommand.AdoptConnection(accepted, hello));
    return client;
  }

  /** The HELLO_ACK's status the client read, or -1 when the connection ended first. */
  private static int helloAck(SocketChannel client) throws IOException {
    byte[] ack = new byte[FrameCodec.HEADER_BYTES];
    try {
      new DataInputStream(client.socket().getInputStream()).readFully(ack);
    } catch (java.io.EOFException e) {
      return -1;
    }
    ByteBuffer a = ByteBuffer.wrap(ack);
    assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
    assertEquals(TestContexts.EPOCH, FrameCodec.epoch(a, 0));
    return FrameCodec.status(a, 0);
  }

  private static void assertEnded(SocketChannel client) throws IOException {
    InputStream in = client.socket().getInputStream();
    assertEquals(-1, in.read(), "the transport closed the connection");
  }

  @Test
  void opensOfOneIncarnationShareItsEndpointAndAnotherIncarnationGetsItsOwn() {
    awaitRow(OwnerState.SERVING, charges(0, 0));
    PeerChannel first = opened(peer.incarnation(PEER_EPOCH));
    assertSame(first, opened(peer.incarnation(PEER_EPOCH)), "one endpoint per incarnation");
    assertEquals(1, peer.lanes.size(), "its lane connected once");
    awaitRow(OwnerState.SERVING, charges(1, 0));

    PeerChannel restarted = opened(peer.incarnation(PEER_EPOCH + 1));
    assertNotSame(first, restarted);
    assertEquals(peer.incarnation(PEER_EPOCH + 1), restarted.peer());
    awaitRow(OwnerState.SERVING, charges(2, 0));
    eventually(
        () -> {
          List<OwnerView.Owner> endpoints = endpointRows();
          assertEquals(2, endpoints.size(), endpoints::toString);
          assertTrue(endpoints.stream().allMatch(e -> e.path().startsWith("engine/endpoint-")));
          assertTrue(endpoints.stream().allMatch(e -> e.state() == OwnerState.ACTIVE));
        });
  }

  @Test
  void aRefusedOpenDropsItsEndpointSoTheNextOpenOfThatPeerTriesAFreshOne() {
    peer.refusals.add(ErrorKind.EPOCH_MISMATCH);
    PeerOpenFailed refused = assertInstanceOf(PeerOpenFailed.class, open(peer.incarnation(1)));
    assertEquals(ErrorKind.EPOCH_MISMATCH, refused.kind());
    assertTrue(refused.detail().startsWith("lane 0 to " + peer.incarnation(1)), refused.detail());
    eventually(() -> assertEquals(List.of(), endpointRows(), "the refused endpoint stopped"));
    awaitRow(OwnerState.SERVING, charges(0, 0));

    // The peer accepts now: a fresh endpoint opens, not the refused one answering again.
    PeerChannel channel = opened(peer.incarnation(1));
    assertTrue(channel.gate().active());
    awaitRow(OwnerState.SERVING, charges(1, 0));
  }

  @Test
  void aLaneWhoseConnectionBrokeReconnectsToTheSameIncarnationAndTheEndpointStays()
      throws IOException {
    PeerChannel channel = opened(peer.incarnation(PEER_EPOCH));
    peer.dropLanes();
    eventually(
        () -> {
          assertEquals(2, peer.lanes.size(), "the lane said HELLO again");
          assertTrue(channel.gate().working(), channel.gate().refusal());
        });
    awaitRow(OwnerState.SERVING, charges(1, 0));
    assertSame(channel, opened(peer.incarnation(PEER_EPOCH)), "the same endpoint still serves");
  }

  @Test
  void aReconnectingLaneRefusedByAnotherEpochFencesTheChannelAndTheEndpointLeaves()
      throws IOException {
    PeerChannel replaced = opened(peer.incarnation(PEER_EPOCH));
    peer.refusals.add(ErrorKind.EPOCH_MISMATCH);
    peer.dropLanes();
    eventually(() -> assertEquals(ErrorKind.EPOCH_MISMATCH, replaced.gate().refusalKind()));
    assertInstanceOf(ChannelGate.Fenced.class, replaced.gate().state());
    awaitRow(OwnerState.SERVING, charges(0, 0));

    PeerChannel fresh = opened(peer.incarnation(PEER_EPOCH + 1));
    assertNotSame(replaced, fresh);
    assertTrue(fresh.gate().active());
  }

  @Test
  void closeRequesterSideClosesEveryEndpointAnswersOnceItsLanesEndedThenRefusesOpens() {
    PeerChannel channel = opened(peer.incarnation(PEER_EPOCH));
    TestProbe<TransportCommand.SideClosed> closed = sideCloser();
    tcp.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));

    assertEquals(new TransportCommand.SideClosed("TCP"), closed.receiveMessage());
    eventually(() -> assertEquals(1, peer.source.ended.size(), "the lane's socket was closed"));
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.LOCAL_CLOSE, "the requester side was closed"),
        channel.gate().state());
    eventually(
        () -> {
          assertEquals(List.of(), endpointRows());
          assertTrue(
              board.snapshot().retired().stream()
                  .anyMatch(
                      r -> r.kind().equals("TcpEndpoint") && r.lastState() == OwnerState.DRAINING),
              () -> board.snapshot().retired().toString());
        });

    // The side stays closed: opens refused, still shown serving; a second close answered at once.
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "the requester side of this engine is closed"),
        open(peer.incarnation(PEER_EPOCH)));
    awaitRow(OwnerState.SERVING, charges(0, 0));
    tcp.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
    assertEquals(new TransportCommand.SideClosed("TCP"), closed.receiveMessage());
    assertEquals(1, peer.lanes.size(), "no lane was connected after the close");
  }

  @Test
  void handedOverConnectionsGetSourceLanesUpToTheBudgetAndTheRestAreRefusedExhausted()
      throws IOException {
    SocketChannel first = adopt();
    assertEquals(0, helloAck(first), "accepted");
    awaitRow(OwnerState.SERVING, charges(0, 1));

    SocketChannel second = adopt();
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED.code(), helloAck(second), "over the budget");
    assertEnded(second);
    awaitRow(OwnerState.SERVING, charges(0, 1));
  }

  @Test
  void closeSourceSideEndsEverySourceLaneAnswersOnceTheyEndedThenClosesNewConnections()
      throws IOException {
    SocketChannel served = adopt();
    assertEquals(0, helloAck(served));
    TestProbe<TransportCommand.SideClosed> closed = sideCloser();
    tcp.tell(new TransportCommand.CloseSourceSide(closed.getRef()));

    assertEquals(new TransportCommand.SideClosed("TCP"), closed.receiveMessage());
    assertEnded(served);
    awaitRow(OwnerState.SERVING, charges(0, 0));

    // The side stays closed: a handed-over connection is closed unanswered.
    SocketChannel late = adopt();
    assertEquals(-1, helloAck(late));
    // The requester side still serves.
    assertTrue(opened(peer.incarnation(PEER_EPOCH)).gate().active());
  }

  @Test
  void shutdownWaitsForEveryEndpointAndLaneAndAnswersEachMessageMeanwhile() throws IOException {
    SocketChannel served = adopt();
    assertEquals(0, helloAck(served));
    // An endpoint kept opening: its connect has not started.
    blockingIo.hold();
    TestProbe<OpenPeerReply> waiting = testKit.createTestProbe();
    SegmentDescriptor unreachable = new SegmentDescriptor("127.0.0.1", closedPort(), PEER_EPOCH);
    tcp.tell(new TransportCommand.OpenPeer(unreachable, described(unreachable), waiting.getRef()));
    eventually(() -> assertEquals(1, blockingIo.waiting()));

    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    tcp.tell(new TransportCommand.Shutdown(done.getRef()));
    awaitRow(OwnerState.STOPPING, charges(1, 0));
    assertEnded(served);

    // Stopping: opens refused, connections closed, side closes and shutdowns wait.
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "TCP transport is stopping"),
        open(peer.incarnation(PEER_EPOCH)));
    assertEquals(-1, helloAck(adopt()));
    TestProbe<TransportCommand.SideClosed> sourceClosed = sideCloser();
    tcp.tell(new TransportCommand.CloseSourceSide(sourceClosed.getRef()));
    assertEquals(new TransportCommand.SideClosed("TCP"), sourceClosed.receiveMessage());
    TestProbe<TransportCommand.SideClosed> requesterClosed = sideCloser();
    tcp.tell(new TransportCommand.CloseRequesterSide(requesterClosed.getRef()));
    TestProbe<TransportCommand.ShutdownDone> again = testKit.createTestProbe();
    tcp.tell(new TransportCommand.Shutdown(again.getRef()));
    done.expectNoMessage(SHORT);
    requesterClosed.expectNoMessage(Duration.ZERO);
    again.expectNoMessage(Duration.ZERO);

    // The endpoint's open fails; it answers its waiter and its closer, and stops.
    blockingIo.release();
    assertEquals(
        ErrorKind.UNAVAILABLE,
        assertInstanceOf(PeerOpenFailed.class, waiting.receiveMessage(Duration.ofSeconds(10)))
            .kind());
    assertEquals(new TransportCommand.ShutdownDone("TCP"), done.receiveMessage());
    assertEquals(new TransportCommand.ShutdownDone("TCP"), again.receiveMessage());
    assertEquals(new TransportCommand.SideClosed("TCP"), requesterClosed.receiveMessage());
    watcher.expectTerminated(tcp, Duration.ofSeconds(10));
    assertEquals(null, row());
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("TcpTransport") && r.lastState() == OwnerState.STOPPING),
        () -> board.snapshot().retired().toString());
  }

  @Test
  void shutdownWithNothingOpenIsAnsweredAtOnceAndStops() {
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    tcp.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(new TransportCommand.ShutdownDone("TCP"), done.receiveMessage());
    watcher.expectTerminated(tcp, Duration.ofSeconds(10));
    assertEquals(null, row());
  }

  /** A loopback port nothing listens on: a connect is refused at once. */
  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }
}
