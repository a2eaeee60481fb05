package io.orbite.transport.rdma;

import static io.orbite.transport.ReceiptProbes.readSucceeded;
import static io.orbite.transport.ReceiptProbes.sink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.Priority;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportCommand.OpenPeerReply;
import io.orbite.engine.spi.TransportCommand.PeerOpenFailed;
import io.orbite.engine.spi.TransportCommand.PeerOpened;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.transport.HeldExecutor;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The RDMA transport's supervisor ({@link RdmaTransport}) over the software provider: refusing
 * (rdma.enabled false: shown off; no rail opened: shown fenced; every open refused UNAVAILABLE
 * naming why, every connection answered and closed), starting (its rails open on the blocking-I/O
 * executor, shown opening, messages waiting) → serving (one endpoint per peer incarnation, up to
 * {@code rdma.maxEndpoints}; a source session per connection, over the bound refused
 * RESOURCE_EXHAUSTED; the side closes, answered once their endpoints or sessions are gone, opens
 * then refused UNAVAILABLE) → stopping on Shutdown (endpoints and sessions, then the contexts) →
 * stopped; its row's figures re-published at each refresh. Two transports of this JVM talk to each
 * other, each with its own provider; a control service of the test's own hands each accepted
 * connection to its transport, with the peer its handshake proved: a source session refuses a range
 * whose allow-list does not name that peer. A transfer checks the whole destination, payload and
 * guard bytes, and that the source's region is untouched.
 *
 * <p>Longer than 500 lines: every state of one supervisor, each test on the same two software
 * devices and transport pair; split, the halves would share that whole scaffold.
 */
class RdmaTransportTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(RdmaTransportTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());
  private static final AtomicInteger NAMES = new AtomicInteger();
  private static final Duration SHORT = Duration.ofMillis(300);
  private static final long REGION = 7;
  private static final long REGION_BYTES = 1 << 20;
  private static final long TASK = 100_000; // one slice
  private static final byte GUARD = 0x5A;

  private final TestProbe<Object> watcher = testKit.createTestProbe();
  private final List<Side> sides = new ArrayList<>();

  @AfterEach
  void stop() throws IOException {
    for (Side side : sides) {
      side.close();
    }
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * One engine's RDMA transport with what an engine gives it (its board, registry with one region,
   * held blocking-I/O executor, hooks), and a control service of the test's own: each connection it
   * accepts has its HELLO read and is handed over (AdoptConnection).
   */
  private final class Side {
    final long epoch;
    final OwnerBoard board = new OwnerBoard();
    final QuarantineLedger quarantine = new QuarantineLedger();
    final EngineTally tally = new EngineTally();
    final HeldExecutor blockingIo = new HeldExecutor();
    final RegistryView registry = new RegistryView();
    final MemorySegment memory = Arena.ofAuto().allocate(REGION_BYTES, 4096);
    final Gate posts = new Gate();

    /** Its software provider's fault table: none armed, its destroys counted. */
    final SoftFaults faults = SoftFaults.create();

    final ServerSocketChannel listener;
    final ActorRef<TransportCommand> rdma;
    boolean stopped;

    /** Who each connection's handshake proved its requester to be, as handed over; null: none. */
    volatile AuthenticatedPeer handshakePeer;

    Side(String json, long epoch) throws IOException {
      this(json, epoch, false);
    }

    /** With {@code holdStart}, its rails' open waits on the held executor: it stays starting. */
    Side(String json, long epoch, boolean holdStart) throws IOException {
      this(json, epoch, holdStart, null, 0);
    }

    /**
     * An engine named {@code engineName} that says it listens at {@code selfPort}: two sides made
     * with the same are two incarnations of one requester (null and 0: a name of its own, and its
     * listener's port).
     */
    Side(String json, long epoch, boolean holdStart, String engineName, int selfPort)
        throws IOException {
      this.epoch = epoch;
      if (holdStart) {
        blockingIo.hold();
      }
      registry.publish(Map.of(REGION, new Registration(REGION, memory, Access.READ_WRITE, null)));
      FaultHooks hooks =
          new FaultHooks() {
            @Override
            public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
              posts.pass();
            }

            @Override
            public Object rdmaFaults() {
              return faults;
            }
          };
      int n = NAMES.incrementAndGet();
      String name = engineName != null ? engineName : "rdma-test-" + n;
      listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
      TransportContext context =
          new TransportContext(
              EngineConfig.fromJson(json).withName(name),
              registry,
              epoch,
              blockingIo,
              tally,
              board,
              quarantine,
              hooks,
              new OwnerSupervision(name, quarantine, tally, board, hooks),
              new PeerEventHub(Runnable::run),
              new SegmentDescriptor(
                  "127.0.0.1",
                  selfPort != 0
                      ? selfPort
                      : ((InetSocketAddress) listener.getLocalAddress()).getPort(),
                  epoch));
      rdma = testKit.spawn(RdmaTransport.create(context), "transport-rdma-" + n);
      Thread.ofPlatform().daemon().name("test-control-service-" + name).start(this::accept);
      sides.add(this);
    }

    /** Hands each accepted connection over with its HELLO, as the control service does. */
    private void accept() {
      while (listener.isOpen()) {
        try {
          SocketChannel accepted = listener.accept();
          ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
          readFully(accepted, hello);
          // The requester's identity follows the header.
          ByteBuffer identity = ByteBuffer.allocate((int) FrameCodec.payloadLength(hello, 0));
          readFully(accepted, identity);
          rdma.tell(
              new TransportCommand.AdoptConnection(
                  Conduit.plain(accepted),
                  hello,
                  EngineIdentity.decode(identity.flip()),
                  handshakePeer));
        } catch (IOException | FrameRejectedException e) {
          // Closed by the test.
        }
      }
    }

    private static void readFully(SocketChannel channel, ByteBuffer into) throws IOException {
      while (into.hasRemaining()) {
        if (channel.read(into) < 0) {
          throw new IOException("closed within the HELLO");
        }
      }
    }

    SegmentDescriptor incarnation() {
      return incarnation(epoch);
    }

    SegmentDescriptor incarnation(long anEpoch) {
      try {
        return new SegmentDescriptor(
            "127.0.0.1", ((InetSocketAddress) listener.getLocalAddress()).getPort(), anEpoch);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    OpenPeerReply open(SegmentDescriptor peer) {
      TestProbe<OpenPeerReply> reply = testKit.createTestProbe();
      rdma.tell(
          new TransportCommand.OpenPeer(
              peer,
              new Description(peer.host(), peer.port(), peer.epoch(), List.of(), null),
              reply.getRef()));
      return reply.receiveMessage(Duration.ofSeconds(20));
    }

    PeerChannel opened(SegmentDescriptor peer) {
      return assertInstanceOf(PeerOpened.class, open(peer)).channel();
    }

    OwnerView.Owner row() {
      String key = board.key(rdma);
      return board.snapshot().owners().stream()
          .filter(o -> o.path().equals(key))
          .findFirst()
          .orElse(null);
    }

    List<OwnerView.Owner> rows(String kind) {
      return board.snapshot().owners().stream().filter(o -> o.kind().equals(kind)).toList();
    }

    /** Waits until its row is in {@code state} with {@code figures} among its charges. */
    OwnerView.Owner awaitRow(OwnerState state, Map<String, Long> figures) {
      return watcher.awaitAssert(
          Duration.ofSeconds(10),
          () -> {
            OwnerView.Owner r = row();
            assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
            assertEquals("RdmaTransport", r.kind());
            figures.forEach((k, v) -> assertEquals(v, r.charges().get(k), () -> k + ": " + r));
            return r;
          });
    }

    TransportCommand.SideClosed closeRequesterSide() {
      TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
      rdma.tell(new TransportCommand.CloseRequesterSide(closed.getRef()));
      return closed.receiveMessage(Duration.ofSeconds(20));
    }

    TransportCommand.SideClosed closeSourceSide() {
      TestProbe<TransportCommand.SideClosed> closed = testKit.createTestProbe();
      rdma.tell(new TransportCommand.CloseSourceSide(closed.getRef()));
      return closed.receiveMessage(Duration.ofSeconds(20));
    }

    void close() throws IOException {
      posts.release();
      blockingIo.release();
      if (!stopped) {
        TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
        rdma.tell(new TransportCommand.Shutdown(done.getRef()));
        done.receiveMessage(Duration.ofSeconds(30));
        done.expectTerminated(rdma, Duration.ofSeconds(10));
      }
      listener.close();
      blockingIo.shutdown();
    }
  }

  private static final String ENABLED =
      "{\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1}}";

  private static final String ONE_ENDPOINT =
      "{\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1,\"maxEndpoints\":1}}";

  private Side side(long epoch) throws IOException {
    return new Side(ENABLED, epoch);
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  /**
   * A connection handed to {@code side}'s transport by this thread, as its control service would
   * hand it over, its HELLO naming {@code epoch}; returns the client's end.
   */
  private static SocketChannel hello(Side side, long epoch) throws IOException {
    try (ServerSocketChannel service =
        ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
      SocketChannel client = SocketChannel.open(service.getLocalAddress());
      client.socket().setSoTimeout(10_000);
      ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(
          hello, 0, FrameType.HELLO, 0, 0, 1, epoch, 0xabcL, 0, Transport.RDMA.code());
      side.rdma.tell(new TransportCommand.AdoptConnection(service.accept(), hello));
      return client;
    }
  }

  /** The HELLO_ACK's status {@code client} read (its epoch must be {@code side}'s), or -1. */
  private static int helloAck(SocketChannel client, Side side) throws IOException {
    byte[] ack = new byte[FrameCodec.HEADER_BYTES];
    try {
      new DataInputStream(client.socket().getInputStream()).readFully(ack);
    } catch (EOFException e) {
      return -1;
    }
    ByteBuffer a = ByteBuffer.wrap(ack);
    assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
    assertEquals(side.epoch, FrameCodec.epoch(a, 0));
    return FrameCodec.status(a, 0);
  }

  private static void assertEnded(SocketChannel client) throws IOException {
    InputStream in = client.socket().getInputStream();
    assertEquals(-1, in.read(), "the transport closed the connection");
    client.close();
  }

  /** Starts a READ of {@link #TASK} bytes of the peer's region at 4096 into local at 64. */
  private TestProbe<Receipt> read(Side requester, Side source, PeerChannel channel) {
    for (long i = 0; i < REGION_BYTES; i++) {
      source.memory.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + (i >>> 10)));
    }
    requester.memory.fill(GUARD);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    assertEquals(
        1,
        channel.dispatch(
            new TaskWork(
                sink(receipts),
                0,
                Op.READ,
                requester.memory,
                64,
                REGION,
                4096,
                TASK,
                System.nanoTime() + Duration.ofSeconds(60).toNanos(),
                Priority.MEDIUM)));
    channel.flush();
    return receipts;
  }

  /** The READ succeeded: the whole local region is the peer's bytes at 64 and guards elsewhere. */
  private static void assertReadLanded(TestProbe<Receipt> receipts, Side requester, Side source) {
    readSucceeded(receipts, TASK);
    for (long i = 0; i < REGION_BYTES; i++) {
      byte want =
          i >= 64 && i < 64 + TASK
              ? (byte) ((4096 + i - 64) * 31 + ((4096 + i - 64) >>> 10))
              : GUARD;
      assertEquals(want, requester.memory.get(ValueLayout.JAVA_BYTE, i), "local byte " + i);
    }
    for (long i = 0; i < REGION_BYTES; i++) {
      assertEquals(
          (byte) (i * 31 + (i >>> 10)),
          source.memory.get(ValueLayout.JAVA_BYTE, i),
          "the source's byte " + i + " is untouched");
    }
  }

  @Test
  void withRdmaDisabledItIsShownOffAndRefusesEveryOpenAndConnectionNamingWhy() throws IOException {
    Side off = new Side("{}", 0x0ffL);
    String why = "RDMA is not enabled here (rdma.enabled is false)";
    OwnerView.Owner row = off.awaitRow(OwnerState.OFF, Map.of("rails", 0L, "endpoints", 0L));
    assertEquals(OwnerView.StateClass.OFF, row.stateClass(), "off by configuration, not fenced");
    assertEquals(why, row.detail());
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, why),
        off.open(new SegmentDescriptor("127.0.0.1", 4000, 5)));
    SocketChannel client = hello(off, off.epoch);
    assertEquals(ErrorKind.UNAVAILABLE.code(), helloAck(client, off));
    assertEnded(client);
    assertEquals(new TransportCommand.SideClosed("RDMA"), off.closeRequesterSide());
    assertEquals(new TransportCommand.SideClosed("RDMA"), off.closeSourceSide());
    off.awaitRow(OwnerState.OFF, Map.of("rails", 0L, "endpoints", 0L));

    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    off.rdma.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(new TransportCommand.ShutdownDone("RDMA"), done.receiveMessage());
    watcher.expectTerminated(off.rdma, Duration.ofSeconds(10));
    off.stopped = true;
    assertNull(off.row());
    assertTrue(
        off.board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("RdmaTransport") && r.lastState() == OwnerState.OFF));
  }

  @Test
  void railsThatCannotBeOpenedLeaveItFencedAndWhatWaitedForTheStartIsAnsweredWithWhy()
      throws IOException {
    Side fenced = new Side("{\"rdma\":{\"enabled\":true,\"devices\":[\"mlx5_9\"]}}", 0xfe1L, true);
    fenced.awaitRow(OwnerState.OPENING, Map.of("rails", 0L, "endpoints", 0L));
    assertEquals(1, fenced.blockingIo.waiting(), "the rails' open waits for the executor");

    // Starting: what comes waits for the start's outcome.
    TestProbe<OpenPeerReply> waiting = testKit.createTestProbe();
    SegmentDescriptor somewhere = new SegmentDescriptor("127.0.0.1", 4000, 5);
    fenced.rdma.tell(
        new TransportCommand.OpenPeer(
            somewhere, new Description("127.0.0.1", 4000, 5, List.of(), null), waiting.getRef()));
    TestProbe<TransportCommand.SideClosed> sourceClosed = testKit.createTestProbe();
    fenced.rdma.tell(new TransportCommand.CloseSourceSide(sourceClosed.getRef()));
    SocketChannel early = hello(fenced, fenced.epoch);
    waiting.expectNoMessage(SHORT);
    sourceClosed.expectNoMessage(Duration.ZERO);
    fenced.awaitRow(OwnerState.OPENING, Map.of("rails", 0L));

    // The provider does not list the device: refusing, shown fenced, each waiting one answered.
    fenced.blockingIo.release();
    String why =
        "no RDMA rail: rdma.devices names mlx5_9, which soft does not list"
            + " (it lists [soft0, soft1])";
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, why),
        waiting.receiveMessage(Duration.ofSeconds(10)));
    assertEquals(new TransportCommand.SideClosed("RDMA"), sourceClosed.receiveMessage());
    assertEquals(ErrorKind.UNAVAILABLE.code(), helloAck(early, fenced));
    assertEnded(early);
    assertEquals(why, fenced.awaitRow(OwnerState.FENCED, Map.of("rails", 0L)).detail());
    assertEquals(new PeerOpenFailed(ErrorKind.UNAVAILABLE, why), fenced.open(somewhere));
    assertEquals(new TransportCommand.SideClosed("RDMA"), fenced.closeRequesterSide());
  }

  @Test
  void opensPastWhatTheStartHoldsAreRefusedAtOnceAndTheOthersServedOnceItServes()
      throws IOException {
    Side source = side(0x50cL);
    Side requester = new Side(ENABLED, 0x7e9L, true);
    requester.awaitRow(OwnerState.OPENING, Map.of("rails", 0L));
    TestProbe<OpenPeerReply> replies = testKit.createTestProbe();
    SegmentDescriptor peer = source.incarnation();
    int past = 60;
    for (int i = 0; i < RdmaTransport.START_OPENS + past; i++) {
      requester.rdma.tell(
          new TransportCommand.OpenPeer(
              peer,
              new Description(peer.host(), peer.port(), peer.epoch(), List.of(), null),
              replies.getRef()));
    }
    SocketChannel connection = hello(requester, requester.epoch);
    TestProbe<TransportCommand.SideClosed> sourceClosed = testKit.createTestProbe();
    requester.rdma.tell(new TransportCommand.CloseSourceSide(sourceClosed.getRef()));
    for (int i = 0; i < past; i++) {
      assertEquals(
          new PeerOpenFailed(
              ErrorKind.UNAVAILABLE, "RDMA transport is starting: its rails are opening"),
          replies.receiveMessage(Duration.ofSeconds(10)));
    }
    replies.expectNoMessage(SHORT);
    sourceClosed.expectNoMessage(Duration.ZERO);
    assertEquals(
        2,
        requester.blockingIo.waiting(),
        "the start, and the refusal of the connection past what it holds, wait for the executor");

    // The start ends: the opens it held are served (one endpoint), the close is answered, and
    // the connection past what it holds is answered UNAVAILABLE and closed.
    requester.blockingIo.release();
    PeerChannel channel = null;
    for (int i = 0; i < RdmaTransport.START_OPENS; i++) {
      PeerChannel c =
          assertInstanceOf(PeerOpened.class, replies.receiveMessage(Duration.ofSeconds(20)))
              .channel();
      assertTrue(channel == null || channel == c, "one endpoint for the incarnation");
      channel = c;
    }
    assertEquals(new TransportCommand.SideClosed("RDMA"), sourceClosed.receiveMessage());
    assertEquals(ErrorKind.UNAVAILABLE.code(), helloAck(connection, requester));
    assertEnded(connection);
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 1L));
    replies.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void whileItsRailsOpenAnOpenWaitsAndIsServedOnceItServesAndAReadMovesExactlyItsBytes()
      throws IOException {
    Side source = side(0x50cL);
    Side requester = new Side(ENABLED, 0x7e9L, true);
    requester.awaitRow(OwnerState.OPENING, Map.of("rails", 0L));
    TestProbe<OpenPeerReply> waiting = testKit.createTestProbe();
    SegmentDescriptor peer = source.incarnation();
    requester.rdma.tell(
        new TransportCommand.OpenPeer(
            peer,
            new Description(peer.host(), peer.port(), peer.epoch(), List.of(), null),
            waiting.getRef()));
    waiting.expectNoMessage(SHORT);

    requester.blockingIo.release();
    PeerChannel channel =
        assertInstanceOf(PeerOpened.class, waiting.receiveMessage(Duration.ofSeconds(20)))
            .channel();
    assertTrue(channel.gate().active());
    assertEquals(peer, channel.peer());
    assertEquals(Transport.RDMA, channel.transport());
    requester.awaitRow(OwnerState.SERVING, Map.of("rails", 1L, "endpoints", 1L));
    source.awaitRow(OwnerState.SERVING, Map.of("rails", 1L, "sourceSessions", 1L));
    eventually(
        () -> {
          List<OwnerView.Owner> endpoints = requester.rows("RdmaEndpoint");
          assertEquals(1, endpoints.size(), endpoints::toString);
          assertEquals(OwnerState.ACTIVE, endpoints.getFirst().state());
          assertEquals(1, source.rows("RdmaSourceSession").size());
          assertEquals(1, requester.rows("RdmaContext").size());
        });

    // A READ whose payload post is held: its parent is reserved at the source, which only the
    // refresh re-publishes (it moves on the session's thread, not in a message).
    requester.posts.hold();
    TestProbe<Receipt> receipts = read(requester, source, channel);
    eventually(() -> assertEquals(1, requester.posts.reached.get()));
    source.awaitRow(
        OwnerState.SERVING, Map.of("grants", 1L, "directBytes", TASK, "grantsBound", 1L));
    requester.awaitRow(OwnerState.SERVING, Map.of("parentsReserved", 1L));
    requester.posts.release();
    assertReadLanded(receipts, requester, source);
    source.awaitRow(OwnerState.SERVING, Map.of("grants", 0L, "directBytes", 0L));
    requester.awaitRow(OwnerState.SERVING, Map.of("parentsReserved", 0L, "directBytes", 0L));
  }

  @Test
  void opensOfOneIncarnationShareItsEndpointAndMaxEndpointsBoundsEndpointsAndSessions()
      throws IOException {
    Side source = new Side(ONE_ENDPOINT, 0x50cL);
    Side requester = new Side(ONE_ENDPOINT, 0x7e9L);
    PeerChannel first = requester.opened(source.incarnation());
    assertSame(first, requester.opened(source.incarnation()), "one endpoint per incarnation");
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 1L));

    // Another incarnation of the peer would be a second endpoint: refused before any is made.
    assertEquals(
        new PeerOpenFailed(
            ErrorKind.RESOURCE_EXHAUSTED, "rdma.maxEndpoints: 1 RDMA endpoints are open"),
        requester.open(source.incarnation(source.epoch + 1)));
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 1L));
    assertEquals(1, requester.rows("RdmaEndpoint").size());

    // A second connection to the source would be a second session: refused RESOURCE_EXHAUSTED.
    SocketChannel second = hello(source, source.epoch);
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED.code(), helloAck(second, source));
    assertEnded(second);
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 1L));
    assertTrue(first.gate().active());
  }

  @Test
  void aRefusedOpenDropsItsEndpointAndTheNextOpenOfThatIncarnationGetsAFreshOne()
      throws IOException {
    Side source = new Side(ONE_ENDPOINT, 0x50cL);
    Side requester = side(0x7e9L);
    Side other = side(0x07eL);
    // An incarnation the source does not run: its session refuses it before any QP is made.
    PeerOpenFailed stale =
        assertInstanceOf(PeerOpenFailed.class, requester.open(source.incarnation(0x50dL)));
    assertEquals(ErrorKind.EPOCH_MISMATCH, stale.kind(), stale::toString);
    assertTrue(stale.detail().contains("the peer now runs epoch 50c"), stale::detail);
    eventually(() -> assertEquals(List.of(), requester.rows("RdmaEndpoint")));
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 0L));

    // The source serves another requester, and so refuses a second session: the open fails.
    assertTrue(other.opened(source.incarnation()).gate().active());
    PeerOpenFailed busy =
        assertInstanceOf(PeerOpenFailed.class, requester.open(source.incarnation()));
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED, busy.kind(), busy::toString);
    eventually(() -> assertEquals(List.of(), requester.rows("RdmaEndpoint")));
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 0L));

    // Once the other requester left, the same incarnation opens: a fresh endpoint, not the
    // refused one answering again.
    assertEquals(new TransportCommand.SideClosed("RDMA"), other.closeRequesterSide());
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 0L));
    PeerChannel channel = requester.opened(source.incarnation());
    assertTrue(channel.gate().active());
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 1L));
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 1L));
  }

  @Test
  void closeRequesterSideAnswersOnceEveryEndpointClosedAndThenRefusesOpensUnavailable()
      throws IOException {
    Side source = side(0x50cL);
    Side requester = side(0x7e9L);
    PeerChannel channel = requester.opened(source.incarnation());

    assertEquals(new TransportCommand.SideClosed("RDMA"), requester.closeRequesterSide());
    eventually(() -> assertEquals(List.of(), requester.rows("RdmaEndpoint")));
    assertEquals(
        new ChannelGate.Closed(
            ChannelGate.Why.LOCAL_CLOSE, "the requester side of this engine closed"),
        channel.gate().state());
    requester.awaitRow(OwnerState.SERVING, Map.of("endpoints", 0L));
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 0L));

    // The side stays closed: opens refused, a second close answered at once.
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "the requester side of this engine is closed"),
        requester.open(source.incarnation()));
    assertEquals(new TransportCommand.SideClosed("RDMA"), requester.closeRequesterSide());
    assertEquals(List.of(), requester.rows("RdmaEndpoint"));
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 0L));
  }

  @Test
  void closeSourceSideAnswersOnceEverySessionEndedAndThenRefusesConnectionsUnavailable()
      throws IOException {
    Side source = side(0x50cL);
    Side requester = side(0x7e9L);
    PeerChannel channel = requester.opened(source.incarnation());

    assertEquals(new TransportCommand.SideClosed("RDMA"), source.closeSourceSide());
    eventually(() -> assertEquals(List.of(), source.rows("RdmaSourceSession")));
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 0L));
    eventually(() -> assertEquals(ErrorKind.PEER_LOST, channel.gate().refusalKind()));

    // The side stays closed: a connection is answered UNAVAILABLE and closed.
    SocketChannel late = hello(source, source.epoch);
    assertEquals(ErrorKind.UNAVAILABLE.code(), helloAck(late, source));
    assertEnded(late);
    assertEquals(
        ErrorKind.UNAVAILABLE,
        assertInstanceOf(PeerOpenFailed.class, requester.open(source.incarnation())).kind());
    assertEquals(new TransportCommand.SideClosed("RDMA"), source.closeSourceSide());
    source.awaitRow(OwnerState.SERVING, Map.of("sourceSessions", 0L));
  }

  @Test
  void shutdownClosesEndpointsAndSessionsThenItsContextsAndAnswersEachMessageMeanwhile()
      throws IOException {
    Side a = side(0x0a1L);
    Side b = side(0x0b1L);
    PeerChannel aToB = a.opened(b.incarnation());
    PeerChannel bToA = b.opened(a.incarnation());
    a.awaitRow(OwnerState.SERVING, Map.of("endpoints", 1L, "sourceSessions", 1L));
    // An endpoint of A kept opening: its connect has not started.
    a.blockingIo.hold();
    TestProbe<OpenPeerReply> waiting = testKit.createTestProbe();
    SegmentDescriptor unreachable = new SegmentDescriptor("127.0.0.1", closedPort(), 0x0c1L);
    a.rdma.tell(
        new TransportCommand.OpenPeer(
            unreachable,
            new Description("127.0.0.1", unreachable.port(), 0x0c1L, List.of(), null),
            waiting.getRef()));
    eventually(() -> assertTrue(a.blockingIo.waiting() >= 1));
    waiting.expectNoMessage(SHORT);

    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    a.rdma.tell(new TransportCommand.Shutdown(done.getRef()));
    a.awaitRow(OwnerState.STOPPING, Map.of("sourceSessions", 0L));
    assertEquals(
        new ChannelGate.Closed(ChannelGate.Why.LOCAL_CLOSE, "the engine is shutting down"),
        aToB.gate().state());
    eventually(() -> assertEquals(ErrorKind.PEER_LOST, bToA.gate().refusalKind()));

    // Stopping: opens refused, connections answered and closed, side closes and shutdowns wait.
    assertEquals(
        new PeerOpenFailed(ErrorKind.UNAVAILABLE, "RDMA transport is stopping"),
        a.open(b.incarnation()));
    SocketChannel late = hello(a, a.epoch); // answered on the executor, once released
    assertEquals(new TransportCommand.SideClosed("RDMA"), a.closeSourceSide());
    TestProbe<TransportCommand.SideClosed> requesterClosed = testKit.createTestProbe();
    a.rdma.tell(new TransportCommand.CloseRequesterSide(requesterClosed.getRef()));
    TestProbe<TransportCommand.ShutdownDone> again = testKit.createTestProbe();
    a.rdma.tell(new TransportCommand.Shutdown(again.getRef()));
    done.expectNoMessage(SHORT);
    requesterClosed.expectNoMessage(Duration.ZERO);
    again.expectNoMessage(Duration.ZERO);
    assertEquals(1, a.rows("RdmaContext").size(), "the contexts wait for the endpoints");
    assertEquals(0, a.faults.destroyCalls(SoftFaults.Kind.CONTEXT), "its rail is still open");

    // The endpoint's open fails; then the contexts close, and every waiter is answered.
    a.blockingIo.release();
    assertEquals(
        ErrorKind.UNAVAILABLE,
        assertInstanceOf(PeerOpenFailed.class, waiting.receiveMessage(Duration.ofSeconds(20)))
            .kind());
    assertEquals(
        new TransportCommand.SideClosed("RDMA"),
        requesterClosed.receiveMessage(Duration.ofSeconds(20)));
    assertEquals(
        new TransportCommand.ShutdownDone("RDMA"), done.receiveMessage(Duration.ofSeconds(20)));
    assertEquals(new TransportCommand.ShutdownDone("RDMA"), again.receiveMessage());
    assertEquals(1, a.faults.destroyCalls(SoftFaults.Kind.CONTEXT), "its rail was released");
    assertEquals(ErrorKind.UNAVAILABLE.code(), helloAck(late, a));
    assertEnded(late);
    watcher.expectTerminated(a.rdma, Duration.ofSeconds(10));
    a.stopped = true;
    assertNull(a.row());
    assertEquals(List.of(), a.rows("RdmaContext"));
    assertEquals(List.of(), a.rows("CqLane"));
    assertTrue(
        a.board.snapshot().retired().stream()
            .anyMatch(
                r -> r.kind().equals("RdmaTransport") && r.lastState() == OwnerState.STOPPING),
        () -> a.board.snapshot().retired().toString());
    assertTrue(
        a.board.snapshot().retired().stream().anyMatch(r -> r.kind().equals("RdmaContext")),
        () -> a.board.snapshot().retired().toString());
    assertEquals(List.of(), a.quarantine.list());
  }

  @Test
  void aRequestersNewIncarnationFencesItsOldSessionWhichReturnsItsLoanBeforeTheNewIsAnswered()
      throws IOException {
    Side source = side(0x50cL);
    Side old = new Side(ENABLED, 0x7e9L, false, "restarting-requester", 41_000);
    Side restarted = new Side(ENABLED, 0x7eaL, false, "restarting-requester", 41_000);
    PeerChannel oldChannel = old.opened(source.incarnation());
    // The old incarnation's READ, held before its payload post: its parent is reserved at the
    // source, with one loan on the region.
    old.posts.hold();
    TestProbe<Receipt> oldReceipts = read(old, source, oldChannel);
    eventually(() -> assertEquals(1, old.posts.reached.get()));
    source.awaitRow(OwnerState.SERVING, Map.of("grants", 1L, "sourceSessions", 1L));
    Registration region = source.registry.lookup(REGION);
    assertEquals(1, region.loans() - region.pins(), "the reservation's loan");

    PeerChannel fresh = restarted.opened(source.incarnation());
    // Its HELLO was answered only once the old session had ended: the loan was back by then.
    assertEquals(0, region.loans() - region.pins(), "the old incarnation's loan is back");
    assertEquals(1, source.tally.sum(EngineTally.Count.SOURCE_INCARNATIONS_FENCED));
    source.awaitRow(OwnerState.SERVING, Map.of("grants", 0L, "sourceSessions", 1L));
    eventually(() -> assertEquals(ErrorKind.PEER_LOST, oldChannel.gate().refusalKind()));
    old.posts.release();
    assertNotNull(oldReceipts.receiveMessage(Duration.ofSeconds(20)).error(), "drained, failed");

    assertReadLanded(read(restarted, source, fresh), restarted, source);
    assertEquals(0, region.loans() - region.pins());
    assertEquals(0, restarted.tally.sum(EngineTally.Count.SOURCE_INCARNATIONS_FENCED));
  }

  @Test
  void aReadOfARangeTheSessionsPeerMayNotReachIsRefusedWithoutAGrantAndAListedPeerReadsIt()
      throws IOException {
    Side source = side(0x50cL);
    Registration listed =
        new Registration(
            REGION, source.memory, Access.READ_WRITE, null, null, "kv", Set.of("decode-1"));
    source.registry.publish(Map.of(REGION, listed));
    source.handshakePeer = new AuthenticatedPeer("decode-2", 0x7e9L, true);
    Side unlisted = side(0x7e9L);
    TestProbe<Receipt> refused = read(unlisted, source, unlisted.opened(source.incarnation()));
    Receipt r = refused.receiveMessage(Duration.ofSeconds(20));
    assertEquals(ErrorKind.PERMISSION_DENIED, r.error(), r::toString);
    assertEquals(0, r.bytes());
    for (long i = 0; i < REGION_BYTES; i++) {
      assertEquals(GUARD, unlisted.memory.get(ValueLayout.JAVA_BYTE, i), "local byte " + i);
      assertEquals(
          (byte) (i * 31 + (i >>> 10)),
          source.memory.get(ValueLayout.JAVA_BYTE, i),
          "the source's byte " + i + " is untouched");
    }
    assertEquals(0, listed.loans() - listed.pins(), "the refusal took no loan");

    source.handshakePeer = new AuthenticatedPeer("decode-1", 0x7eaL, true);
    Side allowed = side(0x7eaL);
    assertReadLanded(read(allowed, source, allowed.opened(source.incarnation())), allowed, source);
  }

  @Test
  void shutdownWithNothingOpenClosesItsContextsAndStops() throws IOException {
    Side idle = side(0x1d1L);
    idle.awaitRow(OwnerState.SERVING, Map.of("rails", 1L));
    eventually(() -> assertEquals(1, idle.rows("RdmaContext").size()));
    assertEquals(0, idle.faults.destroyCalls(SoftFaults.Kind.CONTEXT));
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    idle.rdma.tell(new TransportCommand.Shutdown(done.getRef()));
    assertEquals(
        new TransportCommand.ShutdownDone("RDMA"), done.receiveMessage(Duration.ofSeconds(20)));
    // Answered once its context released the rail: its PD deallocated and its device closed.
    assertEquals(1, idle.faults.destroyCalls(SoftFaults.Kind.PD));
    assertEquals(1, idle.faults.destroyCalls(SoftFaults.Kind.CONTEXT));
    watcher.expectTerminated(idle.rdma, Duration.ofSeconds(10));
    idle.stopped = true;
    assertNull(idle.row());
    assertEquals(List.of(), idle.rows("RdmaContext"));
    assertEquals(List.of(), idle.quarantine.list());
  }

  /** A loopback port nothing listens on: a connect is refused at once. */
  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }
}
