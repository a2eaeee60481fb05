package io.orbite.engine.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.testkit.GateChannel;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.DescribeCodec;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.testkit.typed.annotations.JUnit5TestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.JUnit5TestKitBuilder;
import org.apache.pekko.actor.testkit.typed.javadsl.TestKitJUnit5Extension;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The segment table's entries (C3 epoch fencing, C9 bounded endpoints): a newer epoch at an
 * endpoint fences the replaced incarnation's TCP and SHM channels, the entry stays (FENCED, with
 * its endpoint charges) while a RemoteSegment refers to it, and it is reclaimed, each charge
 * returned to Admission, once no reference is left and its channels are fenced or closed; an SHM
 * channel that ended is shown CLOSED and replaced, with its charge, by the next open; an open by
 * the descriptor of a restarted peer is checked against what Describe answers now, never against
 * the epoch the table remembers from the dead incarnation. Describe is answered by a loopback
 * server of the test's own; Admission and the transports are TestProbes.
 */
@ExtendWith(TestKitJUnit5Extension.class)
class SegmentTableTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(SegmentTableTest.class);
  }

  @JUnit5TestKit
  public ActorTestKit testKit =
      new JUnit5TestKitBuilder().withCustomConfig(ConfigFactory.load()).build();

  private static final long REGION = 3;
  private static final long OLD_EPOCH = 0x1111L;
  private static final long NEW_EPOCH = 0x2222L;
  private static final SharedExports EXPORTS =
      new SharedExports(
          new SharedHost("this-host", "boot-1", 4242, 7, 77),
          List.of(new SharedRegion(REGION, 9, 99, 0, 4096, Access.READ_WRITE)));

  private final ExecutorService blockingIo = Executors.newCachedThreadPool();
  private DescribeServer server;
  private TestProbe<Admission.Command> admission;
  private TestProbe<TransportCommand> tcp;
  private TestProbe<TransportCommand> shm;
  private TestProbe<SegmentTable.OpenReply> replies;
  private TestProbe<List<PeerEntry>> peers;
  private ActorRef<SegmentTable.Command> table;

  private PeerEventHub events;

  @BeforeEach
  void start() throws IOException {
    server = new DescribeServer();
    admission = testKit.createTestProbe();
    tcp = testKit.createTestProbe();
    shm = testKit.createTestProbe();
    replies = testKit.createTestProbe();
    peers = testKit.createTestProbe();
    events = new PeerEventHub(Runnable::run);
    table =
        testKit.spawn(
            SegmentTable.create(
                admission.getRef(),
                new PeerTransport(Transport.TCP, tcp.getRef(), false, d -> null),
                List.of(
                    new PeerTransport(
                        Transport.SHM,
                        shm.getRef(),
                        true,
                        d -> d.shared() == null ? "the peer exports no memory through SHM" : null)),
                blockingIo,
                events,
                new EngineTally(),
                Duration.ofSeconds(5),
                8,
                new OwnerBoard(),
                io.orbite.engine.security.PeerAuth.none("segment-table-test", 1)));
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    blockingIo.shutdownNow();
  }

  /** Answers every DESCRIBE_REQUEST with {@link #answer}, one connection at a time. */
  private static final class DescribeServer implements AutoCloseable {
    final ServerSocket socket = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
    final AtomicReference<Description> answer = new AtomicReference<>();

    /** Describe requests served, counted before each answer is written. */
    final AtomicInteger served = new AtomicInteger();

    DescribeServer() throws IOException {
      Thread.ofPlatform().daemon().name("test-describe-server").start(this::serve);
    }

    int port() {
      return socket.getLocalPort();
    }

    String endpoint() {
      return "127.0.0.1:" + port();
    }

    void describe(long epoch, SharedExports shared) {
      answer.set(
          new Description(
              "127.0.0.1",
              port(),
              epoch,
              List.of(new RemoteRegion(REGION, 4096, Access.READ_WRITE)),
              shared));
    }

    private void serve() {
      while (!socket.isClosed()) {
        try (Socket s = socket.accept()) {
          new DataInputStream(s.getInputStream()).readFully(new byte[FrameCodec.HEADER_BYTES]);
          served.incrementAndGet();
          Description d = answer.get();
          ByteBuffer payload = DescribeCodec.encode(d);
          ByteBuffer frame = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.remaining());
          FrameCodec.encode(
              frame, 0, FrameType.DESCRIBE_RESPONSE, 0, payload.remaining(), 1, d.epoch(), 0, 0, 0);
          frame.put(FrameCodec.HEADER_BYTES, payload, 0, payload.remaining());
          OutputStream out = s.getOutputStream();
          out.write(frame.array());
          out.flush();
        } catch (IOException e) {
          // Closed by the test, or a connection that went away: serve the next one.
        }
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  private SegmentDescriptor descriptor(long epoch) {
    return new SegmentDescriptor("127.0.0.1", server.port(), epoch);
  }

  private void grantEndpoint() {
    admission
        .expectMessageClass(Admission.AcquireEndpoint.class)
        .replyTo()
        .tell(new Admission.Decision.Granted());
  }

  /** Answers the TCP transport's OpenPeer for {@code epoch} with a fresh channel. */
  private GateChannel openTcp(long epoch) {
    TransportCommand.OpenPeer open = tcp.expectMessageClass(TransportCommand.OpenPeer.class);
    assertEquals(descriptor(epoch), open.peer());
    GateChannel channel = new GateChannel(open.peer(), Transport.TCP);
    open.replyTo().tell(new TransportCommand.PeerOpened(channel));
    return channel;
  }

  /** Answers the SHM transport's OpenPeer for {@code epoch} with a fresh channel. */
  private GateChannel openShm(long epoch) {
    TransportCommand.OpenPeer open = shm.expectMessageClass(TransportCommand.OpenPeer.class);
    assertEquals(descriptor(epoch), open.peer());
    assertEquals(EXPORTS, open.description().shared());
    GateChannel channel = new GateChannel(open.peer(), Transport.SHM);
    open.replyTo().tell(new TransportCommand.PeerOpened(channel, new long[] {REGION}));
    return channel;
  }

  private PeerSegment opened() {
    return assertInstanceOf(
        PeerSegment.class,
        assertInstanceOf(SegmentTable.Opened.class, replies.receiveMessage()).segment());
  }

  private void open() {
    table.tell(new SegmentTable.OpenSegment(server.endpoint(), replies.getRef()));
  }

  private List<PeerEntry> peerList() {
    table.tell(new SegmentTable.GetPeers(peers.getRef()));
    return peers.receiveMessage();
  }

  /**
   * No endpoint charge changed hands. Deterministic, not a guess at timing: the table sent the
   * answer to the GetPeers just before this after everything it had done until then, and a charge
   * it sent meanwhile would already be queued here.
   */
  private void noChargeMoved() {
    admission.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void aNewEpochFencesTheOldIncarnationsChannelsWhichKeepTheirChargesUntilUnreferenced() {
    server.describe(OLD_EPOCH, EXPORTS);
    open();
    grantEndpoint();
    GateChannel oldTcp = openTcp(OLD_EPOCH);
    grantEndpoint();
    GateChannel oldShm = openShm(OLD_EPOCH);
    PeerSegment old = opened();
    assertEquals(descriptor(OLD_EPOCH), old.descriptor());
    assertSame(
        oldShm, old.route(Transport.UNSPEC, REGION).channel(), "an exported region goes by SHM");
    assertSame(oldTcp, old.route(Transport.TCP, REGION).channel());
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(OLD_EPOCH), PeerEntry.State.ACTIVE, 1, PeerEntry.Shared.ACTIVE, "")),
        peerList());

    // The peer restarted: the next open learns the new epoch and fences both old channels.
    server.describe(NEW_EPOCH, null);
    open();
    grantEndpoint();
    GateChannel newTcp = openTcp(NEW_EPOCH);
    PeerSegment fresh = opened();
    assertEquals(descriptor(NEW_EPOCH), fresh.descriptor());
    String reason = "the peer at " + server.endpoint() + " now runs epoch 2222";
    assertEquals(reason, oldTcp.fencedBecause());
    assertEquals(reason, oldShm.fencedBecause(), "the SHM channel is fenced with its entry");
    assertNull(newTcp.fencedBecause());
    shm.expectNoMessage(Duration.ofMillis(50));

    // Still referenced: listed FENCED, both endpoint charges held.
    List<PeerEntry> listed = peerList();
    assertEquals(2, listed.size(), listed::toString);
    assertTrue(
        listed.contains(
            new PeerEntry(
                descriptor(OLD_EPOCH), PeerEntry.State.FENCED, 1, PeerEntry.Shared.FENCED, reason)),
        listed::toString);
    assertTrue(
        listed.contains(
            new PeerEntry(
                descriptor(NEW_EPOCH), PeerEntry.State.ACTIVE, 1, PeerEntry.Shared.NONE, "")),
        listed::toString);
    noChargeMoved();

    // The old incarnation is refused without a Describe (C3).
    table.tell(new SegmentTable.OpenSegment(server.endpoint(), OLD_EPOCH, replies.getRef()));
    SegmentTable.OpenFailed stale =
        assertInstanceOf(SegmentTable.OpenFailed.class, replies.receiveMessage());
    assertEquals(ErrorKind.EPOCH_MISMATCH, stale.kind());

    // Its last reference closed: reclaimed, returning the TCP and the SHM charge.
    old.close();
    admission.expectMessageClass(Admission.ReleaseEndpoint.class);
    admission.expectMessageClass(Admission.ReleaseEndpoint.class);
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(NEW_EPOCH), PeerEntry.State.ACTIVE, 1, PeerEntry.Shared.NONE, "")),
        peerList());
    noChargeMoved();
  }

  @Test
  void anEntryIsReclaimedOnlyOnceEveryReferenceClosedAndItsLanesEnded() {
    server.describe(OLD_EPOCH, null);
    open();
    grantEndpoint();
    GateChannel channel = openTcp(OLD_EPOCH);
    PeerSegment first = opened();

    // Unreferenced but live: kept, charge held, reused by the next opens without a new charge.
    first.close();
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(OLD_EPOCH), PeerEntry.State.ACTIVE, 0, PeerEntry.Shared.NONE, "")),
        peerList());
    noChargeMoved();
    open();
    PeerSegment second = opened();
    open();
    PeerSegment third = opened();
    assertSame(channel, second.channel());
    assertSame(channel, third.channel());
    tcp.expectNoMessage(Duration.ofMillis(50));
    noChargeMoved();

    // Every lane ended: CLOSED, still held by its two references.
    channel.gate().close(ChannelGate.Why.PEER_LOST, "every lane to it ended");
    second.close();
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(OLD_EPOCH),
                PeerEntry.State.CLOSED,
                1,
                PeerEntry.Shared.NONE,
                "every lane to it ended")),
        peerList());
    noChargeMoved();

    third.close();
    admission.expectMessageClass(Admission.ReleaseEndpoint.class);
    assertEquals(List.of(), peerList());
    noChargeMoved();
  }

  @Test
  void anEndedShmChannelIsShownClosedAndReplacedWithItsChargeByTheNextOpen() {
    server.describe(OLD_EPOCH, EXPORTS);
    open();
    grantEndpoint();
    GateChannel tcpChannel = openTcp(OLD_EPOCH);
    grantEndpoint();
    GateChannel ended = openShm(OLD_EPOCH);
    PeerSegment first = opened();

    ended.gate().close(ChannelGate.Why.PEER_LOST, "every lane to it ended");
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(OLD_EPOCH), PeerEntry.State.ACTIVE, 1, PeerEntry.Shared.CLOSED, "")),
        peerList());
    noChargeMoved();

    // The next open drops the ended channel and its charge, charges anew and opens a fresh one.
    open();
    admission.expectMessageClass(Admission.ReleaseEndpoint.class);
    grantEndpoint();
    GateChannel fresh = openShm(OLD_EPOCH);
    PeerSegment second = opened();
    assertSame(fresh, second.route(Transport.UNSPEC, REGION).channel());
    assertSame(tcpChannel, second.channel(), "the same entry, over the same TCP channel");
    tcp.expectNoMessage(Duration.ofMillis(50));
    assertEquals(
        List.of(
            new PeerEntry(
                descriptor(OLD_EPOCH), PeerEntry.State.ACTIVE, 2, PeerEntry.Shared.ACTIVE, "")),
        peerList());
    noChargeMoved();
    first.close();
    second.close();
  }

  /**
   * The peer died and restarted; the table still remembers the dead incarnation's epoch as the
   * newest at the endpoint. An open by the replacement's descriptor asks Describe and opens it (the
   * bug: it was refused EPOCH_MISMATCH naming the dead epoch, without asking). Then: the replaced
   * epoch is refused without a Describe, an epoch the table never saw is described (and refused,
   * naming the epoch that answered), and a Describe answer naming a replaced epoch is stale and
   * fences nothing.
   */
  @Test
  void anOpenByTheReplacementsDescriptorAsksDescribeInsteadOfTheRememberedDeadEpoch() {
    server.describe(OLD_EPOCH, null);
    open();
    grantEndpoint();
    GateChannel oldTcp = openTcp(OLD_EPOCH);
    PeerSegment old = opened();
    assertEquals(1, server.served.get());

    // SIGKILL: the lanes end; the replacement listens at the same endpoint.
    oldTcp.gate().close(ChannelGate.Why.PEER_LOST, "every lane to it ended");
    server.describe(NEW_EPOCH, null);
    table.tell(new SegmentTable.OpenSegment(server.endpoint(), NEW_EPOCH, replies.getRef()));
    grantEndpoint();
    GateChannel newTcp = openTcp(NEW_EPOCH);
    PeerSegment fresh = opened();
    assertEquals(descriptor(NEW_EPOCH), fresh.descriptor());
    assertSame(newTcp, fresh.channel());
    assertEquals(2, server.served.get(), "the replacement's epoch was checked by Describe");
    assertEquals(
        "the peer at " + server.endpoint() + " now runs epoch 2222", oldTcp.fencedBecause());

    // The dead epoch is known to be replaced: refused without touching the network (C3).
    table.tell(new SegmentTable.OpenSegment(server.endpoint(), OLD_EPOCH, replies.getRef()));
    SegmentTable.OpenFailed stale =
        assertInstanceOf(SegmentTable.OpenFailed.class, replies.receiveMessage());
    assertEquals(ErrorKind.EPOCH_MISMATCH, stale.kind());
    assertTrue(stale.detail().endsWith("the peer now runs epoch 2222"), stale.detail());
    assertEquals(2, server.served.get(), "no Describe for a replaced epoch");

    // An epoch never seen here may be a newer incarnation: described, and refused by the answer.
    long unseen = 0x3333L;
    table.tell(new SegmentTable.OpenSegment(server.endpoint(), unseen, replies.getRef()));
    SegmentTable.OpenFailed unknown =
        assertInstanceOf(SegmentTable.OpenFailed.class, replies.receiveMessage());
    assertEquals(ErrorKind.EPOCH_MISMATCH, unknown.kind());
    assertTrue(unknown.detail().endsWith("the peer now runs epoch 2222"), unknown.detail());
    assertEquals(3, server.served.get(), "an unseen epoch is described");

    // A Describe answer naming the replaced epoch is stale: the live entry is not fenced by it.
    server.describe(OLD_EPOCH, null);
    open();
    SegmentTable.OpenFailed late =
        assertInstanceOf(SegmentTable.OpenFailed.class, replies.receiveMessage());
    assertEquals(ErrorKind.UNAVAILABLE, late.kind(), late.detail());
    assertNull(newTcp.fencedBecause(), "a stale answer fences nothing");
    tcp.expectNoMessage(Duration.ofMillis(50));
    noChargeMoved();
    old.close();
    admission.expectMessageClass(Admission.ReleaseEndpoint.class);
    fresh.close();
  }
}
