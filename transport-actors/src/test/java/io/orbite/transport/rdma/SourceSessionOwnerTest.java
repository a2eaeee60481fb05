package io.orbite.transport.rdma;

import static io.orbite.transport.ReceiptProbes.readSucceeded;
import static io.orbite.transport.ReceiptProbes.sink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.Priority;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.testkit.Probes;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The owner of one RDMA source session ({@link SourceSessionOwner}), over a real session: the
 * source's rails and the requester's are the software provider's, the requester's end an endpoint
 * link ({@link RdmaLink}) and the session the one the transport would make for its control
 * connection. Its tick (every 200 ms, on ManualTime) promotes a reservation held for a second and
 * gives it a grant's owner, which gives the task's loan back once the task ended; its states are
 * serving (shown closing once its session is closing), settling while a grant that can still end is
 * alive after the session's thread ended, keeping a grant that never ends (terminal), and
 * quarantined by its supervision after an unexpected exception. Each test checks the transport is
 * told the session ended exactly once, the loans on the source's region, the rows and the
 * quarantine; a transfer checks the whole destination, payload and guard bytes.
 */
class SourceSessionOwnerTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(SourceSessionOwnerTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());
  private static final ExecutorService blockingIo = Executors.newCachedThreadPool();

  private static final long SOURCE_EPOCH = 0x50cL;
  private static final long REQUESTER_EPOCH = 0x7e9L;
  private static final long REMOTE_REGION = 7;
  private static final long LOCAL_REGION = 3;
  private static final long REGION_BYTES = 1 << 20;
  private static final long TASK = 100_000; // one slice
  private static final byte GUARD = 0x5A;
  private static final String SESSION = "rdma source session 1";
  private static final String OWNER = "RdmaSourceSession " + SESSION;
  private static final Duration TICK = RdmaTransport.VIEW_REFRESH;

  /** What the owner tells its transport once the session ended (the transport's own message). */
  private record SessionEnded() implements TransportCommand {}

  private static final TransportCommand ENDED = new SessionEnded();

  private final Gate posts = new Gate();
  private final Gate acks = new Gate();
  private final AtomicBoolean ownerFails = new AtomicBoolean();
  private final SoftFaults sourceFaults = SoftFaults.create();

  private final FaultHooks requesterHooks =
      new FaultHooks() {
        @Override
        public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
          posts.pass();
        }
      };

  private final FaultHooks sourceHooks =
      new FaultHooks() {
        @Override
        public void beforeRdmaAck(String lane, long sliceId) {
          acks.pass();
        }

        @Override
        public void beforeOwnerMessage(String owner, Object message) {
          if (owner.equals(OWNER) && ownerFails.compareAndSet(true, false)) {
            throw new IllegalStateException("test: a bug in the owner");
          }
        }

        @Override
        public Object rdmaFaults() {
          return sourceFaults;
        }
      };

  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final EngineTally tally = new EngineTally();
  private final TestProbe<TransportCommand> transport = testKit.createTestProbe();
  private final TestProbe<Object> watcher = testKit.createTestProbe();
  private final Arena arena = Arena.ofShared();
  private final MemorySegment remote = arena.allocate(REGION_BYTES, 4096);
  private final MemorySegment local = arena.allocate(REGION_BYTES, 4096);
  private final Registration remoteRegion =
      new Registration(REMOTE_REGION, remote, Access.READ_WRITE, null);
  private final List<AutoCloseable> closers = new ArrayList<>();

  private SoftRails source;
  private SoftRails requester;
  private ServerSocketChannel listener;
  private SourceSession session;
  private ActorRef<SourceSessionOwner.Command> owner;
  private RdmaLink link;

  private static EngineConfig config(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(1).withLanes(1));
  }

  @BeforeEach
  void open() throws IOException {
    RegistryView sourceRegistry = new RegistryView();
    sourceRegistry.publish(Map.of(REMOTE_REGION, remoteRegion));
    TransportContext sourceContext =
        new TransportContext(
            config("source"),
            sourceRegistry,
            SOURCE_EPOCH,
            blockingIo,
            tally,
            board,
            quarantine,
            sourceHooks,
            new OwnerSupervision("source", quarantine, tally, board, sourceHooks),
            new PeerEventHub(Runnable::run),
            new SegmentDescriptor("127.0.0.1", 1, SOURCE_EPOCH));
    RegistryView requesterRegistry = new RegistryView();
    requesterRegistry.publish(
        Map.of(LOCAL_REGION, new Registration(LOCAL_REGION, local, Access.READ_WRITE, null)));
    OwnerBoard requesterBoard = new OwnerBoard();
    QuarantineLedger requesterQuarantine = new QuarantineLedger();
    EngineTally requesterTally = new EngineTally();
    TransportContext requesterContext =
        new TransportContext(
            config("requester"),
            requesterRegistry,
            REQUESTER_EPOCH,
            blockingIo,
            requesterTally,
            requesterBoard,
            requesterQuarantine,
            requesterHooks,
            new OwnerSupervision(
                "requester", requesterQuarantine, requesterTally, requesterBoard, requesterHooks),
            new PeerEventHub(Runnable::run),
            new SegmentDescriptor("127.0.0.1", 2, REQUESTER_EPOCH));
    source = SoftRails.open(sourceContext);
    requester = SoftRails.open(requesterContext);
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    for (long i = 0; i < REGION_BYTES; i++) {
      remote.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + (i >>> 9)));
    }
  }

  @AfterEach
  void close() throws Exception {
    posts.release();
    acks.release();
    if (link != null) {
      link.close("the test ended");
      link.drained().toCompletableFuture().get(20, TimeUnit.SECONDS);
    }
    if (session != null) {
      session.close("the test ended");
      watcher.awaitAssert(
          Duration.ofSeconds(20),
          () -> {
            assertTrue(session.finished(), "the session's thread ended");
            return null;
          });
    }
    if (owner != null) {
      testKit.stop(owner);
    }
    requester.close();
    source.close();
    listener.close();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
    blockingIo.shutdownNow();
  }

  private static void readFully(SocketChannel channel, ByteBuffer into) throws IOException {
    while (into.hasRemaining()) {
      if (channel.read(into) < 0) {
        throw new IOException("the requester closed before its HELLO");
      }
    }
  }

  /**
   * Connects the requester to the source: the session made for the accepted control connection, its
   * owner spawned (the transport's probe told when it ended) and its thread started, as the
   * transport does on AdoptConnection; then the requester's link, once its handshake completed.
   */
  private void connect() throws Exception {
    SegmentDescriptor peer =
        new SegmentDescriptor(
            "127.0.0.1", ((InetSocketAddress) listener.getLocalAddress()).getPort(), SOURCE_EPOCH);
    CompletableFuture<RdmaLink> opening =
        CompletableFuture.supplyAsync(() -> requester.connect(peer), blockingIo);
    SocketChannel accepted = listener.accept();
    ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    readFully(accepted, hello);
    // The requester's identity follows: read past it, the session reads what comes after.
    readFully(accepted, ByteBuffer.allocate((int) FrameCodec.payloadLength(hello, 0)));
    session = source.session(SESSION, accepted, hello);
    owner =
        testKit.spawn(
            SourceSessionOwner.create(session, source.context, transport.getRef(), ENDED),
            "source-session-1");
    session.owner(owner);
    LaneRuntime.startBlocking("orbite-test-rdma-source-session-1", session);
    link = opening.get(20, TimeUnit.SECONDS);
    awaitOwnerRow(OwnerState.SERVING, 0, 0, 0, 0);
  }

  /** Starts a READ of {@link #TASK} bytes of the source's region at 4096 into local at 64. */
  private TestProbe<Receipt> read() {
    local.fill(GUARD);
    TestProbe<Receipt> receipts = testKit.createTestProbe();
    assertEquals(
        1,
        link.channel()
            .dispatch(
                new TaskWork(
                    sink(receipts),
                    0,
                    Op.READ,
                    local,
                    64,
                    REMOTE_REGION,
                    4096,
                    TASK,
                    System.nanoTime() + Duration.ofSeconds(60).toNanos(),
                    Priority.MEDIUM)));
    link.channel().flush();
    return receipts;
  }

  /** The READ succeeded: local holds the source's bytes at 64, the guard everywhere else. */
  private void assertReadLanded(TestProbe<Receipt> receipts) {
    readSucceeded(receipts, TASK);
    for (long i = 0; i < REGION_BYTES; i++) {
      byte want =
          i >= 64 && i < 64 + TASK ? remote.get(ValueLayout.JAVA_BYTE, 4096 + i - 64) : GUARD;
      assertEquals(want, local.get(ValueLayout.JAVA_BYTE, i), "local byte " + i);
    }
  }

  /** Waits (at most 10 s) until {@code check} passes. */
  private void eventually(Runnable check) {
    Probes.eventually(watcher, check);
  }

  private OwnerView.Owner ownerRow() {
    String key = board.key(owner);
    return board.snapshot().owners().stream()
        .filter(o -> o.path().equals(key))
        .findFirst()
        .orElse(null);
  }

  private List<OwnerView.Owner> grantRows() {
    return board.snapshot().owners().stream().filter(o -> o.kind().equals("RdmaGrant")).toList();
  }

  private void awaitOwnerRow(
      OwnerState state, long grants, long reservations, long grantOwners, long grantsKept) {
    eventually(
        () -> {
          OwnerView.Owner r = ownerRow();
          assertTrue(r != null && r.state() == state, () -> "want " + state + ": " + r);
          assertEquals("RdmaSourceSession", r.kind());
          assertEquals(SESSION, r.detail());
          assertEquals(
              Map.of(
                  "grants",
                  grants,
                  "reservations",
                  reservations,
                  "grantOwners",
                  grantOwners,
                  "grantsKept",
                  grantsKept),
              r.charges());
        });
  }

  /** Waits until exactly one grant's row is shown, in {@code state} with {@code windows} open. */
  private OwnerView.Owner awaitGrantRow(OwnerState state, long windows) {
    return watcher.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          List<OwnerView.Owner> rows = grantRows();
          assertEquals(1, rows.size(), rows::toString);
          OwnerView.Owner g = rows.getFirst();
          assertEquals(state, g.state(), g::toString);
          assertEquals(windows, g.charges().get("windows"), g::toString);
          assertTrue(g.path().startsWith("engine/grant-"), g::path);
          return g;
        });
  }

  /** The loans tasks hold on the source's region (its MR's device pin, also a loan, left out). */
  private long taskLoans() {
    return remoteRegion.loans() - remoteRegion.pins();
  }

  private Reservation onlyReservation() {
    Collection<Reservation> now = session.reservationsNow();
    assertEquals(1, now.size(), now::toString);
    return now.iterator().next();
  }

  /** A reservation of the source's region held outside the session, promoted, one window open. */
  private Reservation promotedWithAWindow(long parent) {
    assertTrue(remoteRegion.tryLoan(), "the reservation's loan");
    Reservation r =
        Reservation.reserved(
            new RdmaWire.Reserve(parent, Op.READ.ordinal(), REMOTE_REGION, 0, 4096, 1),
            Op.READ,
            remoteRegion);
    assertNull(r.admit(Op.READ, 0, 4096));
    assertTrue(r.promote());
    return r;
  }

  @Test
  void aReservationHeldForASecondIsPromotedAtTheTickAndItsOwnerGivesTheLoanBackWhenItEnds()
      throws Exception {
    connect();
    // A task that ends within a second ends as a record: no grant's owner, its loan back.
    assertReadLanded(read());
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.SERVING, 0, 0, 0, 0);
    assertEquals(0, taskLoans());
    assertEquals(List.of(), grantRows());
    assertTrue(
        board.snapshot().retired().stream().noneMatch(r -> r.kind().equals("RdmaGrant")),
        "no grant's owner was ever spawned");

    // A task whose payload post is held: its window stays bound at the source.
    posts.reached.set(0);
    acks.reached.set(0);
    posts.hold();
    acks.hold();
    TestProbe<Receipt> receipts = read();
    eventually(() -> assertEquals(1, posts.reached.get()));
    Reservation held = onlyReservation();
    assertEquals(1, taskLoans());

    // The tick before it was held a second: counted, not promoted.
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.SERVING, 1, 1, 0, 0);
    assertEquals(GrantState.RESERVED, held.state());
    assertNull(held.owner());
    assertEquals(List.of(), grantRows());

    // The first tick after a second: promoted, its owner spawned, holding the loan.
    eventually(
        () ->
            assertTrue(
                System.nanoTime() - held.reservedAtNanos
                    > SourceSessionOwner.PROMOTE_AFTER.toNanos()));
    manualTime.timePasses(TICK);
    OwnerView.Owner grant = awaitGrantRow(OwnerState.ACTIVE, 1);
    assertEquals(
        Map.of("bytes", TASK, "regionId", REMOTE_REGION, "offset", 4096L, "windows", 1L),
        grant.charges());
    awaitOwnerRow(OwnerState.SERVING, 1, 1, 1, 0);
    assertEquals(GrantState.PROMOTED, held.state());
    assertNotNull(held.owner());
    assertEquals(1, taskLoans());

    // The payload moves and the window is released at the source (its ACK held): the rows move
    // at the next tick, the grant's among them.
    posts.release();
    eventually(() -> assertEquals(1, acks.reached.get()));
    eventually(() -> assertEquals(GrantState.PROMOTED_SETTLED, held.state()));
    manualTime.timePasses(TICK);
    awaitGrantRow(OwnerState.ACTIVE, 0);
    awaitOwnerRow(OwnerState.SERVING, 0, 1, 1, 0);
    assertEquals(1, taskLoans(), "the grant's owner holds the loan until the task ends");

    // The ACK goes, the requester's DONE ends the task: its owner gives the loan back and stops.
    acks.release();
    assertReadLanded(receipts);
    eventually(
        () -> {
          assertEquals(GrantState.ENDED, held.state());
          assertEquals(0, taskLoans());
          assertEquals(List.of(), grantRows());
        });
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.SERVING, 0, 0, 0, 0);
    assertEquals(0, source.grantsHeld.get());
    transport.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void aSessionClosingBehindABusyLaneIsShownClosingWhileItsOwnerStillServes() throws Exception {
    connect();
    acks.hold();
    TestProbe<Receipt> receipts = read();
    eventually(() -> assertEquals(1, acks.reached.get()));

    // The source side closes the session; its QP's close waits behind the held lane.
    session.close("the source side of this engine closed");
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.CLOSING, 0, 1, 0, 0);
    assertEquals(OwnerState.SERVING, board.declaredState(owner), "its behaviour still serves");
    transport.expectNoMessage(Duration.ofMillis(100));

    // The lane goes on: the QP is destroyed, the task ends with no DONE, the thread ends.
    acks.release();
    assertEquals(ENDED, transport.receiveMessage(Duration.ofSeconds(20)));
    watcher.expectTerminated(owner, Duration.ofSeconds(10));
    assertEquals(0, taskLoans());
    assertEquals(0, source.grantsHeld.get());
    assertTrue(session.finished());
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(
                r -> r.kind().equals("RdmaSourceSession") && r.lastState() == OwnerState.CLOSING),
        () -> board.snapshot().retired().toString());
    Receipt r = receipts.receiveMessage(Duration.ofSeconds(20));
    assertEquals(ErrorKind.PEER_LOST, r.error(), r::toString);
    transport.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void whenTheSessionEndsWithAGrantStillDrainingItSettlesUntilThatGrantEndsThenStops()
      throws Exception {
    connect();
    // DONE came for a promoted task while a window of it is open: its owner drains.
    Reservation draining = promotedWithAWindow(41);
    assertEquals(false, draining.done().ended());
    owner.tell(new SourceSessionOwner.ToGrant(draining, GrantOwner.Draining.INSTANCE));
    awaitGrantRow(OwnerState.DRAINING, 1);
    assertEquals(1, taskLoans());

    // The requester goes away: the session's thread ends, the grant is still alive.
    link.close("the requester closed");
    link.drained().toCompletableFuture().get(20, TimeUnit.SECONDS);
    link = null;
    eventually(() -> assertTrue(session.finished()));
    awaitOwnerRow(OwnerState.CLOSING, 0, 0, 1, 0);
    transport.expectNoMessage(Duration.ofMillis(100));

    // Settling: a second word that the thread ended changes nothing, the tick re-publishes.
    owner.tell(SourceSessionOwner.Ended.INSTANCE);
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.CLOSING, 0, 0, 1, 0);
    awaitGrantRow(OwnerState.DRAINING, 1);
    transport.expectNoMessage(Duration.ofMillis(100));

    // Its last window is released: the task ends, the loan goes back, the transport is told.
    assertTrue(draining.windowClosed(true, 4096).ended());
    draining.owner().tell(GrantOwner.Ended.INSTANCE);
    assertEquals(ENDED, transport.receiveMessage(Duration.ofSeconds(10)));
    watcher.expectTerminated(owner, Duration.ofSeconds(10));
    assertEquals(0, taskLoans());
    assertEquals(List.of(), grantRows());
    assertEquals(List.of(), quarantine.list());
    transport.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void aWindowThatCouldNotBeReleasedKeepsItsGrantForGoodAndTheTransportIsToldTheSessionEnded()
      throws Exception {
    connect();
    posts.hold();
    read();
    eventually(() -> assertEquals(1, posts.reached.get()));
    Reservation held = onlyReservation();
    // Its QP cannot be destroyed: the window bound on it may still authorise access.
    sourceFaults.failNextDestroy(SoftFaults.Kind.QP, 16, true);
    session.close("the source side of this engine closed");

    assertEquals(ENDED, transport.receiveMessage(Duration.ofSeconds(20)));
    awaitOwnerRow(OwnerState.CLOSED, 0, 1, 1, 1);
    awaitGrantRow(OwnerState.QUARANTINED, 1);
    assertTrue(session.finished());
    assertEquals(1, session.retained());
    assertEquals(GrantState.KEPT_DONE, held.state());
    assertEquals(1, taskLoans(), "the kept grant keeps the task's loan");
    List<QuarantinedOwner> listed = quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals(QuarantinedOwner.Kind.GRANT, listed.getFirst().kind());
    assertEquals(
        "RdmaGrant " + SESSION + " parent " + held.id, listed.getFirst().owner(), listed::toString);
    assertTrue(
        listed.getFirst().reason().contains("could not be destroyed"), listed.getFirst()::reason);

    // Keeping, terminal: the owner stays, the tick re-publishes, nothing is told twice.
    owner.tell(SourceSessionOwner.Ended.INSTANCE);
    manualTime.timePasses(TICK);
    awaitOwnerRow(OwnerState.CLOSED, 0, 1, 1, 1);
    awaitGrantRow(OwnerState.QUARANTINED, 1);
    assertEquals(OwnerState.CLOSED, board.declaredState(owner));
    transport.expectNoMessage(Duration.ofMillis(100));
    assertEquals(1, taskLoans());
    posts.release();
    session = null; // it ended; its QP is kept
  }

  @Test
  void anUnexpectedExceptionQuarantinesTheOwnerWhichClosesItsSessionAndTellsTheTransportOnce()
      throws Exception {
    connect();
    Reservation withOwner = promotedWithAWindow(51);
    assertEquals(false, withOwner.done().ended());
    owner.tell(new SourceSessionOwner.ToGrant(withOwner, GrantOwner.Draining.INSTANCE));
    awaitGrantRow(OwnerState.DRAINING, 1);
    awaitOwnerRow(OwnerState.SERVING, 0, 0, 1, 0);

    // A bug in the owner, at its tick.
    ownerFails.set(true);
    manualTime.timePasses(TICK);
    eventually(
        () -> {
          List<QuarantinedOwner> listed = quarantine.list();
          assertEquals(1, listed.size(), listed::toString);
          QuarantinedOwner q = listed.getFirst();
          assertEquals(OWNER, q.owner());
          assertEquals(QuarantinedOwner.Kind.OWNER, q.kind());
          assertEquals(
              "unexpected java.lang.IllegalStateException: test: a bug in the owner while it"
                  + " handled Refresh; it keeps what it held: {grantOwners=1, grants=0,"
                  + " grantsKept=0, reservations=0}",
              q.reason());
        });
    assertEquals(1, tally.sum(Count.OWNERS_QUARANTINED));
    eventually(() -> assertEquals(OwnerState.QUARANTINED, ownerRow().state()));

    // It closed its session: the requester lost its peer, the thread ended, the transport is told.
    eventually(() -> assertEquals(ErrorKind.PEER_LOST, link.channel().gate().refusalKind()));
    assertEquals(ENDED, transport.receiveMessage(Duration.ofSeconds(20)));
    assertTrue(session.finished());

    // News for a grant that has an owner still reaches it: the task ends, the loan goes back.
    assertTrue(withOwner.windowClosed(true, 4096).ended());
    owner.tell(new SourceSessionOwner.ToGrant(withOwner, GrantOwner.Ended.INSTANCE));
    eventually(() -> assertEquals(List.of(), grantRows()));
    assertEquals(0, taskLoans());

    // News for a task promoted after the failure spawns no owner: its loan is kept.
    Reservation orphan = promotedWithAWindow(52);
    owner.tell(new SourceSessionOwner.ToGrant(orphan, GrantOwner.Draining.INSTANCE));
    manualTime.timePasses(TICK);
    owner.tell(SourceSessionOwner.Ended.INSTANCE);
    transport.expectNoMessage(Duration.ofMillis(200));
    assertNull(orphan.owner());
    assertEquals(List.of(), grantRows());
    assertEquals(1, taskLoans(), "kept for the life of the process");
    assertEquals(OwnerState.QUARANTINED, ownerRow().state());
    assertEquals(1, quarantine.list().size(), "listed once");
  }
}
