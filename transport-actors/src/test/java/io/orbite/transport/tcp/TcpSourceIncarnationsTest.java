package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The source side of the TCP transport and its requesters' incarnations: a HELLO from a requester's
 * new incarnation (same identity, another epoch) closes the lanes of the old one, which drain and
 * return their loans before the new lane is answered; a HELLO of the same epoch, of another
 * identity, from another address or with no identity fences nothing; a lane that takes no data
 * request for {@code tcp.sourceIdleTimeoutMillis} closes, holding no loan. The requesters are raw
 * sockets of the test's own, handed over as the control service would; every transfer on a lane
 * checks the whole payload, and a WRITE the source's bytes on both sides of it.
 */
class TcpSourceIncarnationsTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(TcpSourceIncarnationsTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());

  /** A range an old lane holds a loan on: a READ of it whose answer the test never reads. */
  private static final long HELD = 3;

  private static final long HELD_BYTES = 16L << 20;

  /** A range the lanes read and write, filled with {@link #patternAt}. */
  private static final long DATA = 4;

  private static final long DATA_BYTES = 1L << 20;

  private static final EngineIdentity REQUESTER =
      new EngineIdentity("restarting-requester", "127.0.0.1", 41_000);

  private final Arena arena = Arena.ofShared();
  private final Registration held =
      new Registration(HELD, arena.allocate(HELD_BYTES, 4096), Access.READ, null);
  private final Registration data =
      new Registration(DATA, arena.allocate(DATA_BYTES, 4096), Access.READ_WRITE, null);
  private final EngineTally counters = new EngineTally();
  private final HeldExecutor blockingIo = new HeldExecutor();
  private final TestProbe<Object> watcher = testKit.createTestProbe();
  private final List<SocketChannel> clients = new CopyOnWriteArrayList<>();
  private ServerSocketChannel listener;
  private ActorRef<TransportCommand> tcp;

  private static byte patternAt(long i) {
    return (byte) (i * 29 + (i >>> 11));
  }

  private void start(long sourceIdleTimeoutMillis) throws IOException {
    for (long i = 0; i < DATA_BYTES; i++) {
      data.segment().set(ValueLayout.JAVA_BYTE, i, patternAt(i));
    }
    RegistryView registry = new RegistryView();
    registry.publish(Map.of(HELD, held, DATA, data));
    EngineConfig config =
        EngineConfig.defaults()
            .withTcp(TcpConfig.defaults().withSourceIdleTimeoutMillis(sourceIdleTimeoutMillis));
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    tcp =
        testKit.spawn(
            TcpTransport.create(
                TestContexts.context(
                    config,
                    registry,
                    TestContexts.SELF,
                    blockingIo,
                    counters,
                    new OwnerBoard(),
                    new QuarantineLedger(),
                    FaultHooks.NONE)));
  }

  @AfterEach
  void stop() throws IOException {
    for (SocketChannel c : clients) {
      c.close();
    }
    if (tcp != null) {
      TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
      tcp.tell(new TransportCommand.Shutdown(done.getRef()));
      done.receiveMessage(Duration.ofSeconds(20));
    }
    if (listener != null) {
      listener.close();
    }
    blockingIo.shutdown();
    arena.close(); // every lane has ended: nothing reads it any more
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * A lane of {@code requester}'s incarnation {@code epoch} (null: a HELLO without identity),
   * connected from {@code fromHost} and handed over as the control service would; the client's end,
   * its HELLO_ACK not read yet.
   */
  private SocketChannel lane(EngineIdentity requester, long epoch, int index, String fromHost)
      throws IOException {
    SocketChannel client = SocketChannel.open();
    // A small receive buffer: a READ the test does not read keeps the source's write blocked.
    client.setOption(StandardSocketOptions.SO_RCVBUF, 64 * 1024);
    client.bind(new InetSocketAddress(fromHost, 0));
    client.connect(listener.getLocalAddress());
    clients.add(client);
    client.socket().setSoTimeout(10_000);
    SocketChannel accepted = listener.accept();
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        hello,
        0,
        FrameType.HELLO,
        0,
        0,
        index + 1,
        TestContexts.EPOCH,
        epoch,
        index,
        Transport.TCP.code());
    tcp.tell(new TransportCommand.AdoptConnection(accepted, hello, requester));
    return client;
  }

  private SocketChannel lane(EngineIdentity requester, long epoch, int index) throws IOException {
    return lane(requester, epoch, index, "127.0.0.1");
  }

  /** Reads the HELLO_ACK; returns its status. */
  private static int helloAck(SocketChannel client) throws IOException {
    ByteBuffer a = ByteBuffer.wrap(readN(client, FrameCodec.HEADER_BYTES));
    assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
    assertEquals(TestContexts.EPOCH, FrameCodec.epoch(a, 0));
    return FrameCodec.status(a, 0);
  }

  private static byte[] readN(SocketChannel client, int n) throws IOException {
    byte[] b = new byte[n];
    new DataInputStream(client.socket().getInputStream()).readFully(b);
    return b;
  }

  private static void send(SocketChannel client, ByteBuffer frame) throws IOException {
    while (frame.hasRemaining()) {
      client.write(frame);
    }
  }

  private static ByteBuffer request(FrameType type, long id, long region, long offset, long count) {
    long payload = type == FrameType.WRITE_REQUEST ? count : 0;
    ByteBuffer b = ByteBuffer.allocate((int) (FrameCodec.HEADER_BYTES + payload));
    FrameCodec.encode(b, 0, type, 0, payload, id, TestContexts.EPOCH, region, offset, count);
    return b;
  }

  /** A READ of {@code count} bytes of DATA at {@code offset}: the whole answer checked. */
  private static void readChecked(SocketChannel client, long id, long offset, int count)
      throws IOException {
    send(client, request(FrameType.READ_REQUEST, id, DATA, offset, count));
    ByteBuffer h = ByteBuffer.wrap(readN(client, FrameCodec.HEADER_BYTES));
    assertEquals(FrameType.READ_RESPONSE, FrameCodec.type(h, 0));
    assertEquals(0, FrameCodec.status(h, 0));
    assertEquals(id, FrameCodec.requestId(h, 0));
    assertEquals(count, FrameCodec.payloadLength(h, 0));
    byte[] got = readN(client, count);
    byte[] want = new byte[count];
    for (int i = 0; i < count; i++) {
      want[i] = patternAt(offset + i);
    }
    assertArrayEquals(want, got, "the READ's payload is the source's bytes");
  }

  /**
   * A WRITE of {@code count} bytes (value {@code 0xA5 ^ i}) into DATA at {@code offset}: acked, the
   * range holds them, and the source's bytes on both sides of it (one page each) are untouched.
   */
  private void writeChecked(SocketChannel client, long id, long offset, int count)
      throws IOException {
    ByteBuffer frame = request(FrameType.WRITE_REQUEST, id, DATA, offset, count);
    for (int i = 0; i < count; i++) {
      frame.put(FrameCodec.HEADER_BYTES + i, (byte) (0xA5 ^ i));
    }
    send(client, frame);
    ByteBuffer h = ByteBuffer.wrap(readN(client, FrameCodec.HEADER_BYTES));
    assertEquals(FrameType.WRITE_ACK, FrameCodec.type(h, 0));
    assertEquals(0, FrameCodec.status(h, 0));
    assertEquals(id, FrameCodec.requestId(h, 0));
    MemorySegment m = data.segment();
    for (long i = offset - 4096; i < offset + count + 4096; i++) {
      byte want = i >= offset && i < offset + count ? (byte) (0xA5 ^ (i - offset)) : patternAt(i);
      assertEquals(want, m.get(ValueLayout.JAVA_BYTE, i), "the source's byte " + i);
    }
  }

  /** The lane's socket ends (what was in flight on it drained first). */
  private static void assertEnds(SocketChannel client) {
    try {
      InputStream in = client.socket().getInputStream();
      byte[] sink = new byte[64 * 1024];
      while (in.read(sink) >= 0) {
        // What the source wrote before it closed: discarded.
      }
    } catch (IOException reset) {
      // Closed with bytes unread on its side: ended too.
    }
  }

  /** Holds a loan on HELD on {@code client}'s lane: a READ whose answer is never read. */
  private void holdLoan(SocketChannel client) throws IOException {
    long before = held.loans();
    send(client, request(FrameType.READ_REQUEST, 99, HELD, 0, HELD_BYTES));
    Probes.eventually(watcher, () -> assertEquals(before + 1, held.loans()));
  }

  @Test
  void aNewIncarnationsHelloFencesTheOldLanesWhichReturnTheirLoansBeforeItIsAnswered()
      throws IOException {
    start(0);
    SocketChannel old0 = lane(REQUESTER, 0xe1, 0);
    SocketChannel old1 = lane(REQUESTER, 0xe1, 1);
    assertEquals(0, helloAck(old0));
    assertEquals(0, helloAck(old1));
    readChecked(old0, 1, 4096, 8192);
    holdLoan(old1); // its gathering write blocks: the loan stays until the lane ends

    SocketChannel fresh = lane(REQUESTER, 0xe2, 0);
    assertEquals(0, helloAck(fresh));
    // Answered only after the old lanes ended: their loans are back already.
    assertEquals(0, held.loans(), "the old incarnation's loan is back before the new is answered");
    assertEquals(0, data.loans());
    assertEquals(2, counters.sum(Count.SOURCE_INCARNATIONS_FENCED));
    assertEnds(old0);
    assertEnds(old1);

    readChecked(fresh, 2, 0, 65_536);
    writeChecked(fresh, 3, 200_000, 10_000);
    readChecked(fresh, 4, 300_000, 4096);
    // A READ's loan is returned just after its response is written: the reader may see the bytes
    // a moment before.
    Probes.eventually(
        watcher,
        () -> {
          assertEquals(0, held.loans());
          assertEquals(0, data.loans());
        });
  }

  @Test
  void aHelloOfTheSameEpochAnotherEndpointAnotherAddressOrNoIdentityFencesNothing()
      throws IOException {
    start(0);
    SocketChannel first = lane(REQUESTER, 0xe1, 0);
    assertEquals(0, helloAck(first));
    List<SocketChannel> others =
        List.of(
            lane(REQUESTER, 0xe1, 1), // the same incarnation's second lane
            lane(new EngineIdentity(REQUESTER.name(), "127.0.0.1", 41_001), 0xe2, 0),
            lane(new EngineIdentity("another-engine", "127.0.0.1", 41_000), 0xe3, 0),
            lane(REQUESTER, 0xe4, 0, "127.0.0.2"), // the same identity on another host
            lane(null, 0xe5, 0));
    for (SocketChannel c : others) {
      assertEquals(0, helloAck(c));
    }
    for (int i = 0; i < others.size(); i++) {
      readChecked(others.get(i), 10 + i, 10_000L * i, 4096);
    }
    readChecked(first, 20, 0, 4096);
    writeChecked(first, 21, 500_000, 4096);
    assertEquals(0, counters.sum(Count.SOURCE_INCARNATIONS_FENCED));
  }

  @Test
  void aHelloForAnotherIncarnationOfThisSourceFencesNothing() throws IOException {
    start(0);
    SocketChannel old = lane(REQUESTER, 0xe1, 0);
    assertEquals(0, helloAck(old));

    // The new incarnation's HELLO names an epoch this source does not run: refused, fences nothing.
    SocketChannel stale = SocketChannel.open(listener.getLocalAddress());
    clients.add(stale);
    stale.socket().setSoTimeout(10_000);
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        hello, 0, FrameType.HELLO, 0, 0, 1, TestContexts.EPOCH + 1, 0xe2, 0, Transport.TCP.code());
    tcp.tell(new TransportCommand.AdoptConnection(listener.accept(), hello, REQUESTER));
    assertEquals(
        io.orbite.engine.ErrorKind.EPOCH_MISMATCH.code(),
        FrameCodec.status(ByteBuffer.wrap(readN(stale, FrameCodec.HEADER_BYTES)), 0));

    readChecked(old, 1, 0, 4096);
    assertEquals(0, counters.sum(Count.SOURCE_INCARNATIONS_FENCED));
  }

  @Test
  void aLaneWithNoDataRequestForTheIdleTimeoutClosesHoldingNoLoan() throws IOException {
    start(1_000);
    SocketChannel idle = lane(REQUESTER, 0xe1, 0);
    assertEquals(0, helloAck(idle));
    readChecked(idle, 1, 0, 65_536);
    writeChecked(idle, 2, 100_000, 4096);

    assertEnds(idle);
    Probes.eventually(
        watcher, () -> assertEquals(1, counters.sum(Count.SOURCE_IDLE_CLOSES), "counted"));
    assertEquals(0, data.loans());
    assertEquals(0, counters.sum(Count.SOURCE_INCARNATIONS_FENCED));

    // The requester connects again: a fresh lane serves it.
    SocketChannel again = lane(REQUESTER, 0xe1, 0);
    assertEquals(0, helloAck(again));
    readChecked(again, 3, 600_000, 4096 * 3);
    Probes.eventually(watcher, () -> assertEquals(0, data.loans()));
  }
}
