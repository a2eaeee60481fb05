package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.RequestValidator;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.TestContexts;
import io.orbite.transport.endpoint.PeerEndpoint;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A TCP endpoint's drain (the {@link PeerEndpoint} scaffold over a {@link TcpLink}) (C5, drain
 * before failure; C8, a close is not held up for ever): when a lane thread has not ended a
 * destruction window after its socket was closed, the closers are answered and the endpoint turns
 * quarantined, listed in the {@link QuarantineLedger} with the lane it waits for, while the task
 * that lane holds keeps its loan and charges in its batch; it leaves the list and stops once the
 * lane ends. A drain whose lanes end in time answers at once and lists nothing. The peer is a
 * loopback socket of the test's own; a lane is held inside its READ payload through {@link
 * FaultHooks#beforeReadPayload}; the window runs on ManualTime.
 */
class TcpEndpointTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(TcpEndpointTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());

  private static final Duration WINDOW = Duration.ofSeconds(5);
  private static final long PEER_EPOCH = 0x5e1fL;
  private static final long REGION = 4;

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final ExecutorService blockingIo = Executors.newCachedThreadPool();
  private final CountDownLatch releaseLane = new CountDownLatch(1);
  private final TestProbe<String> heldLanes = testKit.createTestProbe();
  private FakePeer peer;

  /** Holds a lane thread inside its first READ payload until the test releases it. */
  private final FaultHooks holdReads =
      new FaultHooks() {
        @Override
        public void beforeReadPayload(String lane) {
          heldLanes.getRef().tell(lane);
          try {
            releaseLane.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      };

  @BeforeEach
  void start() throws IOException {
    peer = new FakePeer();
  }

  @AfterEach
  void stop() throws IOException {
    releaseLane.countDown();
    peer.close();
    blockingIo.shutdownNow();
  }

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /**
   * The source end of the lanes: accepts each HELLO for {@link #PEER_EPOCH} and answers every READ
   * request with a READ_RESPONSE header whose payload never follows.
   */
  private static final class FakePeer implements AutoCloseable {
    final LoopbackSource source = new LoopbackSource(FakePeer::serve);

    FakePeer() throws IOException {}

    SegmentDescriptor descriptor() {
      return source.incarnation(PEER_EPOCH);
    }

    private static void serve(Socket s, DataInputStream in, OutputStream out, ByteBuffer hello)
        throws IOException {
      out.write(frame(FrameType.HELLO_ACK, 0, FrameCodec.requestId(hello, 0)));
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      while (true) {
        in.readFully(header);
        ByteBuffer h = ByteBuffer.wrap(header);
        if (FrameCodec.type(h, 0) == FrameType.READ_REQUEST) {
          out.write(
              frame(FrameType.READ_RESPONSE, FrameCodec.count(h, 0), FrameCodec.requestId(h, 0)));
        }
      }
    }

    private static byte[] frame(FrameType type, long count, long requestId) {
      ByteBuffer f = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(f, 0, type, 0, count, requestId, PEER_EPOCH, REGION, 0, count);
      return f.array();
    }

    @Override
    public void close() throws IOException {
      source.close();
    }
  }

  private ActorRef<PeerEndpoint.Command> spawnEndpoint(FaultHooks hooks) {
    EngineConfig config =
        EngineConfig.defaults()
            .withTcp(TcpConfig.defaults().withLanes(1))
            .withTimeouts(TimeoutConfig.defaults().withDestructionWindowMillis(WINDOW.toMillis()));
    TransportContext context =
        TestContexts.context(config, blockingIo, counters, board, quarantine, hooks);
    return testKit.spawn(
        PeerEndpoint.create(
            "TcpEndpoint",
            peer.descriptor(),
            context,
            fenced -> TcpLink.open(peer.descriptor(), null, context, fenced),
            null,
            refused -> {}));
  }

  private PeerChannel attach(ActorRef<PeerEndpoint.Command> endpoint) {
    TestProbe<TransportCommand.OpenPeerReply> opened = testKit.createTestProbe();
    endpoint.tell(new PeerEndpoint.Attach(null, opened.getRef()));
    return assertInstanceOf(TransportCommand.PeerOpened.class, opened.receiveMessage()).channel();
  }

  /**
   * Waits until the owner view shows the endpoint in {@code state}: its last message is handled.
   */
  private void awaitState(ActorRef<?> endpoint, OwnerState state) {
    String key = board.key(endpoint);
    heldLanes.awaitAssert(
        Duration.ofSeconds(10),
        () -> {
          assertTrue(
              board.snapshot().owners().stream()
                  .anyMatch(o -> o.path().equals(key) && o.state() == state),
              () -> board.snapshot().owners().toString());
          return null;
        });
  }

  @Test
  void aLaneThreadStillRunningAWindowAfterTheCloseQuarantinesTheEndpointAndItsTaskKeepsItsLoan() {
    ActorRef<PeerEndpoint.Command> endpoint = spawnEndpoint(holdReads);
    PeerChannel channel = attach(endpoint);

    // A batch of one READ on the endpoint's lane; the lane is then held inside its payload.
    AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
    BatchCore batch =
        new BatchCore(
            "batch-1",
            1,
            gate,
            counters,
            board,
            Duration.ofMinutes(1),
            WINDOW,
            quarantine,
            Runnable::run);
    TestProbe<BatchActor.Command> batchOwner = testKit.createTestProbe();
    batch.bind(batchOwner.getRef());
    assertTrue(gate.tryBatch().granted());
    long lease = batch.lease();
    Registration local =
        new Registration(1, Arena.ofAuto().allocate(8192), Access.READ_WRITE, null);
    RemoteSegment segment =
        new PeerSegment(
            peer.descriptor(),
            List.of(new RemoteRegion(REGION, 1 << 20, Access.READ_WRITE)),
            channel);
    List<TransferRequest> read = List.of(TransferRequest.read(local, 0, segment, REGION, 0, 4096));
    batch.dispatch(batch.admit(lease, read, RequestValidator.validate(read), System.nanoTime()));
    String lane = heldLanes.receiveMessage(Duration.ofSeconds(10));
    assertEquals("lane 0 to " + peer.descriptor(), lane);

    TestProbe<PeerEndpoint.Closed> closed = testKit.createTestProbe();
    endpoint.tell(new PeerEndpoint.Close("test", closed.getRef()));
    awaitState(endpoint, OwnerState.DRAINING);
    manualTime.expectNoMessageFor(WINDOW.minusMillis(1), closed);
    assertEquals(List.of(), quarantine.list(), "not before the window has passed");

    // The window passed with the lane thread still running: answered, and quarantined.
    manualTime.timePasses(Duration.ofMillis(2));
    assertEquals(new PeerEndpoint.Closed(peer.descriptor()), closed.receiveMessage());
    List<QuarantinedOwner> listed = quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    QuarantinedOwner q = listed.getFirst();
    assertEquals("TcpEndpoint " + peer.descriptor(), q.owner());
    assertEquals(QuarantinedOwner.Kind.ENDPOINT, q.kind());
    assertTrue(q.reason().startsWith("1 worker(s) still running"), q::toString);
    assertTrue(q.reason().endsWith(": " + lane), q::toString);
    awaitState(endpoint, OwnerState.QUARANTINED);

    // Its task's loan and charges stay with the batch while the lane may still write its memory.
    assertEquals(1, local.loans());
    assertEquals(new Budgets.Usage(1, 1, 4096, 0), gate.usage());
    assertEquals(TaskState.PENDING, batch.status(lease).tasks().getFirst().state());

    // Quarantined: a second closer is answered at once, an attach refused.
    TestProbe<PeerEndpoint.Closed> again = testKit.createTestProbe();
    endpoint.tell(new PeerEndpoint.Close("test", again.getRef()));
    again.expectMessage(new PeerEndpoint.Closed(peer.descriptor()));
    TestProbe<TransportCommand.OpenPeerReply> refused = testKit.createTestProbe();
    endpoint.tell(new PeerEndpoint.Attach(null, refused.getRef()));
    TransportCommand.PeerOpenFailed failed =
        assertInstanceOf(TransportCommand.PeerOpenFailed.class, refused.receiveMessage());
    assertEquals(ErrorKind.UNQUIESCED, failed.kind(), "a held owner: the one kind table (C18)");
    assertTrue(failed.detail().endsWith("is quarantined"), failed.detail());

    // The lane lets go: its task fails drained, the loan comes back, the endpoint leaves the list.
    releaseLane.countDown();
    closed.expectTerminated(endpoint, Duration.ofSeconds(10));
    assertEquals(List.of(), quarantine.list());
    TaskResult t = batch.status(lease).tasks().getFirst();
    assertEquals(TaskState.FAILED, t.state(), t::toString);
    assertEquals(ErrorKind.PEER_LOST, t.errorKind(), t::toString);
    assertTrue(t.locallyDrained());
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
  }

  @Test
  void aDrainWhoseLaneThreadsEndInTimeAnswersAtOnceAndQuarantinesNothing() {
    ActorRef<PeerEndpoint.Command> endpoint = spawnEndpoint(FaultHooks.NONE);
    PeerChannel channel = attach(endpoint);
    assertTrue(channel.gate().active());

    TestProbe<PeerEndpoint.Closed> closed = testKit.createTestProbe();
    endpoint.tell(new PeerEndpoint.Close("test", closed.getRef()));
    // No scheduler time has passed: the answer came from the lane thread's end, not the window.
    assertEquals(
        new PeerEndpoint.Closed(peer.descriptor()), closed.receiveMessage(Duration.ofSeconds(10)));
    closed.expectTerminated(endpoint, Duration.ofSeconds(10));
    assertEquals(
        ErrorKind.UNAVAILABLE,
        channel.gate().refusalKind(),
        "the channel takes no more work: closed by this engine");

    manualTime.timePasses(WINDOW.multipliedBy(2));
    assertEquals(List.of(), quarantine.list());
    assertTrue(
        board.snapshot().retired().stream()
            .anyMatch(r -> r.kind().equals("TcpEndpoint") && r.lastState() == OwnerState.DRAINING),
        () -> board.snapshot().retired().toString());
  }
}
