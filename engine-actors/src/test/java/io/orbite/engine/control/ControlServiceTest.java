package io.orbite.engine.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.engine.wire.TransferLimits;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.BehaviorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestInbox;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The control service (the owner of the engine's listener): while serving it hands a connection
 * whose first frame is a HELLO to the transport the HELLO names, with the requester identity its
 * payload carries (a malformed one is refused PROTOCOL, never handed over), answers Describe
 * without the ranges (and their shared-memory exports) the asking peer may not reach, and closes
 * connections beyond its bound of unclaimed ones (C9); a Stop closes the listener and every
 * unclaimed connection and is answered once the acceptor thread has ended (stopping), and later
 * Stops at once (stopped); the owner view shows each. The stopping state is held open with a {@link
 * BehaviorTestKit}, which keeps the acceptor's last message in its inbox until the test runs it.
 */
class ControlServiceTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(ControlServiceTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());

  /** Longer than any wait here: no connection is closed for its silence during a test. */
  private static final int FIRST_FRAME_TIMEOUT_MILLIS = 60_000;

  /** What this service's Describe answers advertise: an odd frame limit, to be recognised. */
  private static final TransferLimits LIMITS = new TransferLimits(12_288, 300_000);

  private final OwnerBoard board = new OwnerBoard();
  private final EngineTally counters = new EngineTally();
  private final TestProbe<TransportCommand> tcp = testKit.createTestProbe();
  private final List<SocketChannel> clients = new ArrayList<>();
  private final RegistryView registry = new RegistryView();
  private ServerSocketChannel listener;
  private SegmentDescriptor self;

  @BeforeEach
  void bind() throws IOException {
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    self = new SegmentDescriptor("127.0.0.1", listener.socket().getLocalPort(), 0x5e1fL);
  }

  @AfterEach
  void close() throws IOException {
    for (SocketChannel c : clients) {
      c.close();
    }
    listener.close();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  private org.apache.pekko.actor.typed.Behavior<ControlService.Command> service(int maxUnclaimed) {
    return service(maxUnclaimed, FIRST_FRAME_TIMEOUT_MILLIS);
  }

  private org.apache.pekko.actor.typed.Behavior<ControlService.Command> service(
      int maxUnclaimed, int firstFrameTimeoutMillis) {
    return ControlService.create(
        listener,
        self,
        registry,
        LIMITS,
        Map.of(Transport.TCP, tcp.getRef()),
        counters,
        board,
        firstFrameTimeoutMillis,
        maxUnclaimed,
        new io.orbite.engine.notify.NotifyReceiver(
            io.orbite.config.NotificationConfig.defaults(), self, counters, maxUnclaimed),
        io.orbite.engine.security.PeerAuth.none("control-test", self.epoch()));
  }

  private SocketChannel connect() throws IOException {
    SocketChannel c = SocketChannel.open(new InetSocketAddress("127.0.0.1", self.port()));
    // Well inside the first-frame timeout: a connection the service did not close times out here.
    c.socket().setSoTimeout(5_000);
    clients.add(c);
    return c;
  }

  private static void assertClosedByService(SocketChannel c) throws IOException {
    assertEquals(-1, c.socket().getInputStream().read(), "the service closed it");
  }

  private OwnerView.Owner row(ActorRef<?> service) {
    return board.row(service);
  }

  private void awaitState(ActorRef<?> service, OwnerState state) {
    tcp.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          OwnerView.Owner r = row(service);
          assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
          assertEquals("ControlService", r.kind());
          // A loopback-only engine without credentials says nothing more about security.
          assertEquals("listening on " + self.endpoint(), r.detail());
          return null;
        });
  }

  @Test
  void aConnectionWhoseFirstFrameIsAHelloIsHandedToTheTransportItNames() throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(4));
    awaitState(service, OwnerState.SERVING);
    SocketChannel client = connect();
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        hello, 0, FrameType.HELLO, 0, 0, 7, self.epoch(), 0xabcL, 2, Transport.TCP.code());
    client.write(hello);

    TransportCommand.AdoptConnection adopted =
        assertInstanceOf(TransportCommand.AdoptConnection.class, tcp.receiveMessage());
    assertEquals(7, FrameCodec.requestId(adopted.hello(), 0));
    assertEquals(2, FrameCodec.offset(adopted.hello(), 0));
    assertEquals(client.getLocalAddress(), adopted.channel().getRemoteAddress());
    adopted.channel().close();
  }

  @Test
  void aDescribeAnswerAdvertisesTheLimitsTheServiceWasGiven() {
    testKit.spawn(service(4));
    Description d =
        DescribeClient.describe(
            InetSocketAddress.createUnresolved("127.0.0.1", self.port()), 5_000);
    assertEquals(self.epoch(), d.epoch());
    assertEquals(LIMITS, d.limits());
  }

  @Test
  void aDescribeAnswerCarriesTheEngineNameTheRegionNamesAndWhetherItIsReady() {
    java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
    registry.publishEngineName("prefill-3");
    registry.publish(
        Map.of(
            4L,
            new io.orbite.engine.spi.Registration(
                4, arena.allocate(4096), io.orbite.engine.Access.READ, null, null, "kv-pool"),
            5L,
            new io.orbite.engine.spi.Registration(
                5, arena.allocate(64), io.orbite.engine.Access.WRITE, null)));
    registry.startReady(false);
    testKit.spawn(service(4));
    InetSocketAddress at = InetSocketAddress.createUnresolved("127.0.0.1", self.port());
    Description notReady = DescribeClient.describe(at, 5_000);
    assertEquals(false, notReady.ready());
    assertEquals("prefill-3", notReady.engineName());
    registry.markReady();
    Description ready = DescribeClient.describe(at, 5_000);
    assertTrue(ready.ready());
    assertEquals(
        java.util.Set.of(
            new io.orbite.engine.RemoteRegion(4, 4096, io.orbite.engine.Access.READ, "kv-pool"),
            new io.orbite.engine.RemoteRegion(5, 64, io.orbite.engine.Access.WRITE)),
        java.util.Set.copyOf(ready.regions()));
    arena.close();
  }

  /** A memfd export as the SHM provider would describe it; never fenced here. */
  private record FakeBacking(int fd, long inode, long offset)
      implements io.orbite.engine.spi.SharedBacking {
    @Override
    public boolean tryFence() {
      return true;
    }
  }

  @Test
  void aDescribeAnswerLeavesOutOfItsRegionsAndSharedExportsEveryRangeThePeerMayNotReach() {
    java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
    io.orbite.engine.wire.SharedHost host =
        new io.orbite.engine.wire.SharedHost("this-host", "boot-1", 4242, 9, 99);
    registry.publishSharedHost(host);
    registry.publish(
        Map.of(
            4L,
            new io.orbite.engine.spi.Registration(
                4,
                arena.allocate(4096),
                io.orbite.engine.Access.READ,
                arena,
                new FakeBacking(40, 400, 0),
                "kv-pool",
                null),
            5L,
            new io.orbite.engine.spi.Registration(
                5,
                arena.allocate(8192),
                io.orbite.engine.Access.READ_WRITE,
                arena,
                new FakeBacking(50, 500, 4096),
                "kv-private",
                java.util.Set.of("decode-1")),
            6L,
            new io.orbite.engine.spi.Registration(
                6,
                arena.allocate(64),
                io.orbite.engine.Access.WRITE,
                null,
                null,
                null,
                java.util.Set.of())));
    testKit.spawn(service(4));
    // This engine does not authenticate: its peers prove no name, so no allow-list admits them.
    Description d =
        DescribeClient.describe(
            InetSocketAddress.createUnresolved("127.0.0.1", self.port()), 5_000);
    assertEquals(
        List.of(
            new io.orbite.engine.RemoteRegion(4, 4096, io.orbite.engine.Access.READ, "kv-pool")),
        d.regions());
    assertEquals(
        new io.orbite.engine.wire.SharedExports(
            host,
            List.of(
                new io.orbite.engine.wire.SharedRegion(
                    4, 40, 400, 0, 4096, io.orbite.engine.Access.READ))),
        d.shared());
    arena.close();
  }

  @Test
  void describeWhenReadyAsksAgainUntilTheServiceIsMarkedReadyOrTheTimeIsSpent() throws Exception {
    registry.publishEngineName("slow-start");
    registry.startReady(false);
    testKit.spawn(service(4));
    InetSocketAddress at = InetSocketAddress.createUnresolved("127.0.0.1", self.port());
    java.util.concurrent.ExecutorService io = java.util.concurrent.Executors.newFixedThreadPool(2);
    try {
      long started = System.nanoTime();
      java.util.concurrent.ExecutionException spent =
          assertThrows(
              java.util.concurrent.ExecutionException.class,
              () ->
                  DescribeClient.describeWhenReady(at, 300, io)
                      .get(10, java.util.concurrent.TimeUnit.SECONDS));
      long tookMillis = (System.nanoTime() - started) / 1_000_000;
      io.orbite.engine.TransferException e =
          assertInstanceOf(io.orbite.engine.TransferException.class, spent.getCause());
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(
          e.getMessage()
              .startsWith(
                  "UNAVAILABLE: describe 127.0.0.1:"
                      + self.port()
                      + ": engine 'slow-start' (epoch 5e1f) is not marked ready"),
          e::getMessage);
      assertTrue(tookMillis >= 290, "spent the time: " + tookMillis + " ms");
      // Asked again after 10, 20, 40, ... ms (the first Describe also loads classes: at least 3).
      long asked = counters.sum(Count.CONNECTIONS_ACCEPTED);
      assertTrue(asked >= 3, "asked again: " + asked + " Describes");

      long before = counters.sum(Count.CONNECTIONS_ACCEPTED);
      java.util.concurrent.CompletableFuture<Description> waiting =
          DescribeClient.describeWhenReady(at, 10_000, io);
      tcp.awaitAssert(
          Duration.ofSeconds(5),
          () -> {
            assertTrue(counters.sum(Count.CONNECTIONS_ACCEPTED) - before >= 3);
            return null;
          });
      assertEquals(false, waiting.isDone(), "still waiting while not ready");
      registry.markReady();
      Description d = waiting.get(10, java.util.concurrent.TimeUnit.SECONDS);
      assertTrue(d.ready());
      assertEquals("slow-start", d.engineName());
    } finally {
      io.shutdownNow();
    }
  }

  /** A HELLO for the TCP transport whose payload is {@code payload}. */
  private static ByteBuffer helloWith(ByteBuffer payload, long epoch) {
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.remaining());
    FrameCodec.encode(
        hello,
        0,
        FrameType.HELLO,
        0,
        payload.remaining(),
        3,
        epoch,
        0xabcL,
        1,
        Transport.TCP.code());
    hello.put(FrameCodec.HEADER_BYTES, payload, payload.position(), payload.remaining());
    return hello;
  }

  @Test
  void aHellosIdentityIsReadAndHandedOverWithItsConnection() throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(4));
    awaitState(service, OwnerState.SERVING);
    SocketChannel client = connect();
    EngineIdentity identity = new EngineIdentity("requester-7", "10.1.2.3", 4711);
    client.write(helloWith(identity.encode(), self.epoch()));

    TransportCommand.AdoptConnection adopted =
        assertInstanceOf(TransportCommand.AdoptConnection.class, tcp.receiveMessage());
    assertEquals(identity, adopted.requester());
    assertEquals(3, FrameCodec.requestId(adopted.hello(), 0));
    assertEquals(0xabcL, FrameCodec.regionId(adopted.hello(), 0));
    // The transport reads the connection from the first byte after the HELLO.
    client.write(ByteBuffer.wrap(new byte[] {42}));
    ByteBuffer next = ByteBuffer.allocate(1);
    adopted.channel().read(next);
    assertEquals(42, next.get(0));
    adopted.channel().close();
  }

  @Test
  void aHelloWhoseIdentityIsMalformedIsRefusedProtocolAndNeverHandedOver() throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(4));
    awaitState(service, OwnerState.SERVING);
    ByteBuffer bad = new EngineIdentity("requester-7", "127.0.0.1", 4711).encode();
    bad.put(2, (byte) ' '); // the name's first character: no longer a valid engine name
    SocketChannel client = connect();
    client.write(helloWith(bad, self.epoch()));

    byte[] ack = new byte[FrameCodec.HEADER_BYTES];
    new java.io.DataInputStream(client.socket().getInputStream()).readFully(ack);
    ByteBuffer a = ByteBuffer.wrap(ack);
    assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
    assertEquals(ErrorKind.PROTOCOL.code(), FrameCodec.status(a, 0));
    assertEquals(3, FrameCodec.requestId(a, 0));
    assertEquals(self.epoch(), FrameCodec.epoch(a, 0));
    assertClosedByService(client);
    assertEquals(1, counters.sum(Count.FRAMES_REJECTED));
    tcp.expectNoMessage(Duration.ofMillis(100));
  }

  @Test
  void aHelloWithAnIdentityLongerThanAnyIsClosedBeforeItsPayloadIsRead() throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(4));
    awaitState(service, OwnerState.SERVING);
    SocketChannel client = connect();
    client.write(helloWith(ByteBuffer.allocate(EngineIdentity.MAX_BYTES + 1), self.epoch()));
    try {
      assertClosedByService(client);
    } catch (java.net.SocketException reset) {
      // Closed with the payload unread: a reset is a close too.
    }
    assertEquals(1, counters.sum(Count.FRAMES_REJECTED));
    tcp.expectNoMessage(Duration.ofMillis(100));
  }

  @Test
  void connectionsBeyondTheBoundOfUnclaimedOnesAreClosedAtOnce() throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(1));
    awaitState(service, OwnerState.SERVING);
    connect(); // says nothing: it stays unclaimed
    SocketChannel second = connect();
    assertClosedByService(second);
    assertEquals(2, counters.sum(Count.CONNECTIONS_ACCEPTED));
    assertEquals(1, counters.sum(Count.CONNECTIONS_REFUSED));
    tcp.expectNoMessage(Duration.ofMillis(100));
  }

  @Test
  void stopClosesTheListenerAndEveryUnclaimedConnectionThenLaterStopsAreAnsweredAtOnce()
      throws IOException {
    ActorRef<ControlService.Command> service = testKit.spawn(service(4));
    awaitState(service, OwnerState.SERVING);
    SocketChannel waiting = connect();
    tcp.awaitAssert(
        () -> {
          assertEquals(1, counters.sum(Count.CONNECTIONS_ACCEPTED));
          return null;
        });

    TestProbe<ControlService.Stopped> stopped = testKit.createTestProbe();
    service.tell(new ControlService.Stop(stopped.getRef()));
    stopped.expectMessage(new ControlService.Stopped());
    assertClosedByService(waiting);
    assertThrows(ConnectException.class, this::connect, "the listener is closed");
    awaitState(service, OwnerState.STOPPED);

    // Stopped: it stays (its guardian stops it), answering every later Stop at once.
    service.tell(new ControlService.Stop(stopped.getRef()));
    stopped.expectMessage(new ControlService.Stopped());
    awaitState(service, OwnerState.STOPPED);
  }

  /** Waits until the acceptor thread's last message has reached the BehaviorTestKit's inbox. */
  private static void awaitAcceptorEnded(BehaviorTestKit<ControlService.Command> kit) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!kit.selfInbox().hasMessages()) {
      assertTrue(System.nanoTime() < deadline, "the acceptor thread did not end");
      Thread.onSpinWait();
    }
  }

  @Test
  void stopsWhileTheAcceptorEndsAreAllAnsweredOnceItHasEnded() {
    BehaviorTestKit<ControlService.Command> kit = BehaviorTestKit.create(service(4));
    assertEquals(OwnerState.SERVING, board.declaredState(kit.getRef()));
    TestInbox<ControlService.Stopped> first = TestInbox.create();
    TestInbox<ControlService.Stopped> second = TestInbox.create();

    kit.run(new ControlService.Stop(first.getRef()));
    assertEquals(OwnerState.STOPPING, row(kit.getRef()).state());
    kit.run(new ControlService.Stop(second.getRef()));
    assertEquals(List.of(), first.getAllReceived(), "not before the acceptor has ended");
    assertEquals(List.of(), second.getAllReceived());

    awaitAcceptorEnded(kit);
    kit.runOne();
    assertEquals(List.of(new ControlService.Stopped()), first.getAllReceived());
    assertEquals(List.of(new ControlService.Stopped()), second.getAllReceived());
    assertEquals(OwnerState.STOPPED, row(kit.getRef()).state());
  }

  @Test
  void aStopAfterTheAcceptorEndedByItselfIsAnsweredAtOnce() throws IOException {
    BehaviorTestKit<ControlService.Command> kit = BehaviorTestKit.create(service(4));
    // The listener fails under the acceptor while serving (closed here, as a failure would).
    listener.close();
    awaitAcceptorEnded(kit);
    kit.runOne();
    assertEquals(OwnerState.SERVING, row(kit.getRef()).state(), "still shown serving");

    TestInbox<ControlService.Stopped> stopped = TestInbox.create();
    kit.run(new ControlService.Stop(stopped.getRef()));
    assertEquals(
        List.of(new ControlService.Stopped()),
        stopped.getAllReceived(),
        "no acceptor is left to wait for");
    assertEquals(OwnerState.STOPPED, row(kit.getRef()).state());
  }

  @Test
  void theRowSaysHowPeersAreAuthenticatedAndWarnsWhenTheyAreNot() {
    assertEquals("", ControlService.securityLine(io.orbite.engine.security.PeerAuth.none("x", 1)));
    var open =
        new io.orbite.engine.security.PeerAuth(
            io.orbite.engine.security.Credentials.load(
                io.orbite.config.SecurityConfig.defaults().withMode("open"), "x", k -> null),
            "x",
            1);
    assertEquals(
        "; WARNING: security.mode \"open\": peers are not authenticated",
        ControlService.securityLine(open));
    var secret =
        new io.orbite.engine.security.PeerAuth(
            io.orbite.engine.security.Credentials.load(
                io.orbite.config.SecurityConfig.defaults(),
                "x",
                java.util.Map.of("ORBITE_SECRET", "0123456789abcdef")::get),
            "x",
            1);
    assertEquals(
        "; peers authenticated: secret from $ORBITE_SECRET (16 bytes)",
        ControlService.securityLine(secret));
  }

  @Test
  void aHeaderTrickledOneByteAtATimeIsCutAtTheFirstFrameDeadlineNotAnswered() throws Exception {
    // 400 ms for the whole first frame; the peer sends a valid DESCRIBE_REQUEST header one byte
    // every 50 ms (2.8 s for 56 bytes). Were each read given the whole timeout again, the header
    // would complete and be answered; the deadline closes the connection first.
    testKit.spawn(service(4, 400));
    SocketChannel client = connect();
    ByteBuffer header = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(header, 0, FrameType.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0);
    byte[] bytes = header.array();
    java.util.concurrent.atomic.AtomicInteger sent =
        new java.util.concurrent.atomic.AtomicInteger();
    var pacer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    try {
      pacer.scheduleAtFixedRate(
          () -> {
            int i = sent.get();
            if (i < bytes.length) {
              try {
                client.write(ByteBuffer.wrap(bytes, i, 1));
                sent.incrementAndGet();
              } catch (IOException closed) {
                throw new java.io.UncheckedIOException(closed); // ends the schedule
              }
            }
          },
          0,
          50,
          java.util.concurrent.TimeUnit.MILLISECONDS);
      int first;
      try {
        first = client.socket().getInputStream().read();
      } catch (java.net.SocketException reset) {
        first = -1;
      }
      assertEquals(-1, first, "closed, never answered");
      assertTrue(sent.get() < bytes.length, "cut before the header was whole: " + sent.get());
    } finally {
      pacer.shutdownNow();
    }
  }
}
