package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A source lane checks a range's allow-list against the peer its connection's handshake proved (the
 * peer the control service hands over with the connection): a peer that proved no listed name (none
 * at all, another one, or a listed name it did not prove) is refused PERMISSION_DENIED on every
 * READ and WRITE of the range, and not a byte of it is read or written; the lane goes on serving
 * ranges without a list; a peer that proved a listed name reads and writes it exactly. The
 * requesters are raw sockets of the test's own; every check covers the whole range.
 */
class TcpSourceAllowListTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(TcpSourceAllowListTest.class);
  }

  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());

  /** The range only {@code decode-1} may reach, filled with {@link #patternAt}. */
  private static final long LISTED = 4;

  private static final int LISTED_BYTES = 64 * 1024;

  /** A range without an allow-list, filled with {@link #openPatternAt}. */
  private static final long OPEN = 5;

  private static final int OPEN_BYTES = 16 * 1024;

  private static final int WRITE_AT = 4096;
  private static final int WRITE_BYTES = 8192;

  private final Arena arena = Arena.ofShared();
  private final Registration listed =
      new Registration(
          LISTED,
          arena.allocate(LISTED_BYTES, 4096),
          Access.READ_WRITE,
          null,
          null,
          "kv",
          Set.of("decode-1"));
  private final Registration open =
      new Registration(OPEN, arena.allocate(OPEN_BYTES, 4096), Access.READ_WRITE, null);
  private final HeldExecutor blockingIo = new HeldExecutor();
  private final List<SocketChannel> clients = new CopyOnWriteArrayList<>();
  private ServerSocketChannel listener;
  private ActorRef<TransportCommand> tcp;

  private static byte patternAt(long i) {
    return (byte) (i * 29 + (i >>> 11));
  }

  private static byte openPatternAt(long i) {
    return (byte) (i * 13 + 0x5A);
  }

  private static byte writtenAt(long i) {
    return (byte) (0xA5 ^ i);
  }

  @BeforeEach
  void start() throws IOException {
    for (long i = 0; i < LISTED_BYTES; i++) {
      listed.segment().set(ValueLayout.JAVA_BYTE, i, patternAt(i));
    }
    for (long i = 0; i < OPEN_BYTES; i++) {
      open.segment().set(ValueLayout.JAVA_BYTE, i, openPatternAt(i));
    }
    RegistryView registry = new RegistryView();
    registry.publish(Map.of(LISTED, listed, OPEN, open));
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    tcp =
        testKit.spawn(
            TcpTransport.create(
                TestContexts.context(
                    EngineConfig.defaults(),
                    registry,
                    TestContexts.SELF,
                    blockingIo,
                    new EngineTally(),
                    new OwnerBoard(),
                    new QuarantineLedger(),
                    FaultHooks.NONE)));
  }

  @AfterEach
  void stop() throws IOException {
    for (SocketChannel c : clients) {
      c.close();
    }
    TestProbe<TransportCommand.ShutdownDone> done = testKit.createTestProbe();
    tcp.tell(new TransportCommand.Shutdown(done.getRef()));
    done.receiveMessage(Duration.ofSeconds(20));
    listener.close();
    blockingIo.shutdown();
    arena.close(); // every lane has ended: nothing reads it any more
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * A lane of {@code requester}, handed over with the peer its handshake proved, as the control
   * service hands it; its HELLO_ACK already read and accepted.
   */
  private SocketChannel lane(EngineIdentity requester, long epoch, AuthenticatedPeer peer)
      throws IOException {
    SocketChannel client = SocketChannel.open(listener.getLocalAddress());
    clients.add(client);
    client.socket().setSoTimeout(10_000);
    SocketChannel accepted = listener.accept();
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        hello, 0, FrameType.HELLO, 0, 0, 1, TestContexts.EPOCH, epoch, 0, Transport.TCP.code());
    tcp.tell(new TransportCommand.AdoptConnection(Conduit.plain(accepted), hello, requester, peer));
    ByteBuffer ack = ByteBuffer.wrap(readN(client, FrameCodec.HEADER_BYTES));
    assertEquals(FrameType.HELLO_ACK, FrameCodec.type(ack, 0));
    assertEquals(0, FrameCodec.status(ack, 0), "the lane is accepted: only ranges are checked");
    return client;
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

  private static void sendRead(SocketChannel client, long id, long region, long offset, int count)
      throws IOException {
    ByteBuffer b = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        b, 0, FrameType.READ_REQUEST, 0, 0, id, TestContexts.EPOCH, region, offset, count);
    send(client, b);
  }

  /**
   * A WRITE of {@link #WRITE_BYTES} of {@link #writtenAt} at {@link #WRITE_AT} of {@code region}.
   */
  private static void sendWrite(SocketChannel client, long id, long region) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + WRITE_BYTES);
    FrameCodec.encode(
        b,
        0,
        FrameType.WRITE_REQUEST,
        0,
        WRITE_BYTES,
        id,
        TestContexts.EPOCH,
        region,
        WRITE_AT,
        WRITE_BYTES);
    for (int i = 0; i < WRITE_BYTES; i++) {
      b.put(FrameCodec.HEADER_BYTES + i, writtenAt(i));
    }
    send(client, b);
  }

  /** Reads one answer header, checking it is of {@code type} and answers request {@code id}. */
  private static ByteBuffer answer(SocketChannel client, FrameType type, long id)
      throws IOException {
    ByteBuffer h = ByteBuffer.wrap(readN(client, FrameCodec.HEADER_BYTES));
    assertEquals(type, FrameCodec.type(h, 0));
    assertEquals(id, FrameCodec.requestId(h, 0));
    assertEquals(TestContexts.EPOCH, FrameCodec.epoch(h, 0));
    return h;
  }

  /** The whole range OPEN, read on {@code client} and compared with its pattern. */
  private static void readOpenExactly(SocketChannel client, long id) throws IOException {
    sendRead(client, id, OPEN, 0, OPEN_BYTES);
    ByteBuffer h = answer(client, FrameType.READ_RESPONSE, id);
    assertEquals(0, FrameCodec.status(h, 0));
    assertEquals(OPEN_BYTES, FrameCodec.payloadLength(h, 0));
    byte[] want = new byte[OPEN_BYTES];
    for (int i = 0; i < OPEN_BYTES; i++) {
      want[i] = openPatternAt(i);
    }
    assertArrayEquals(want, readN(client, OPEN_BYTES), "the range without a list is served");
  }

  /** Every byte of LISTED, against the pattern, or the WRITE where {@code written}. */
  private void assertListedHolds(boolean written, String why) {
    MemorySegment m = listed.segment();
    for (long i = 0; i < LISTED_BYTES; i++) {
      boolean inWrite = written && i >= WRITE_AT && i < WRITE_AT + WRITE_BYTES;
      byte want = inWrite ? writtenAt(i - WRITE_AT) : patternAt(i);
      byte got = m.get(ValueLayout.JAVA_BYTE, i);
      if (got != want) {
        assertEquals(want, got, why + ": byte " + i + " of the listed range");
      }
    }
  }

  @Test
  void aPeerThatProvedNoListedNameIsRefusedEveryByteOfTheRangeAndTheLaneServesOn()
      throws IOException {
    Object[][] refused = {
      {"no proof at all", new EngineIdentity("anonymous", "127.0.0.1", 41_001), null},
      {
        "a proven name not listed",
        new EngineIdentity("decode-2", "127.0.0.1", 41_002),
        new AuthenticatedPeer("decode-2", 0xd2, true)
      },
      {
        "a listed name not proven",
        new EngineIdentity("decode-1", "127.0.0.1", 41_003),
        new AuthenticatedPeer("decode-1", 0xd1, false)
      },
    };
    int denied = ErrorKind.PERMISSION_DENIED.code();
    long id = 1;
    for (Object[] row : refused) {
      String who = (String) row[0];
      AuthenticatedPeer peer = (AuthenticatedPeer) row[2];
      SocketChannel client =
          lane((EngineIdentity) row[1], peer == null ? 0xa0 : peer.epoch(), peer);

      sendRead(client, id, LISTED, 0, LISTED_BYTES);
      ByteBuffer read = answer(client, FrameType.READ_RESPONSE, id++);
      assertEquals(denied, FrameCodec.status(read, 0), who + ": READ");
      assertEquals(0, FrameCodec.payloadLength(read, 0), who + ": no byte of the range is sent");

      sendWrite(client, id, LISTED);
      ByteBuffer write = answer(client, FrameType.WRITE_ACK, id++);
      assertEquals(denied, FrameCodec.status(write, 0), who + ": WRITE");
      // The refused WRITE's payload was read past, not applied: the next frame is served in step.
      readOpenExactly(client, id++);
      assertListedHolds(false, who);
      assertEquals(0, listed.loans(), who + ": no loan was taken");
    }
  }

  @Test
  void aPeerThatProvedAListedNameReadsAndWritesTheRangeExactly() throws IOException {
    SocketChannel client =
        lane(
            new EngineIdentity("decode-1", "127.0.0.1", 41_004),
            0xd1,
            new AuthenticatedPeer("decode-1", 0xd1, true));
    sendRead(client, 1, LISTED, 0, LISTED_BYTES);
    ByteBuffer read = answer(client, FrameType.READ_RESPONSE, 1);
    assertEquals(0, FrameCodec.status(read, 0));
    assertEquals(LISTED_BYTES, FrameCodec.payloadLength(read, 0));
    byte[] want = new byte[LISTED_BYTES];
    for (int i = 0; i < LISTED_BYTES; i++) {
      want[i] = patternAt(i);
    }
    assertArrayEquals(want, readN(client, LISTED_BYTES), "the READ is the range's bytes");

    sendWrite(client, 2, LISTED);
    assertEquals(0, FrameCodec.status(answer(client, FrameType.WRITE_ACK, 2), 0));
    assertListedHolds(true, "the WRITE landed in its range, and nowhere else");
  }
}
