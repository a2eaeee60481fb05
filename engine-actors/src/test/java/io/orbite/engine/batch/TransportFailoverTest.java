package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.Route;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Failover across transports ({@code retry.maxTransportFailovers}): the rule alone ({@link
 * TransportFailover#decide}), then a batch whose segment has a fake SHM (or RDMA) way and a fake
 * TCP channel: which failures of the first attempt run the task again over TCP, what the result
 * then says (transport, route, attempts, bytes, effect, detail), and that the task keeps its loan
 * and charges, counted once, across the two attempts.
 */
class TransportFailoverTest {
  static {
    org.slf4j.LoggerFactory.getLogger(TransportFailoverTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));

  private static final long REGION = 9;
  private static final long TASK = 4096;
  private static final long NOW = 1_000_000_000L;
  private static final long LATER = NOW + 1_000_000L;

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private final Registration local =
      new Registration(7, Arena.ofAuto().allocate(4 * TASK), Access.READ_WRITE, null);

  private int batches;
  private long lease;

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  // ---- the rule alone

  private static boolean readFails(Transport from, ErrorKind kind) {
    return TransportFailover.decide(Op.READ, from, kind, false, true, 1, 1, LATER, NOW, false);
  }

  @Test
  void aReadFailsOverOnlyForAFailureOfItsTransportOnShmOrRdma() {
    EnumSet<ErrorKind> shm =
        EnumSet.of(ErrorKind.UNAVAILABLE, ErrorKind.PEER_LOST, ErrorKind.PERMISSION_DENIED);
    EnumSet<ErrorKind> rdma = EnumSet.of(ErrorKind.UNAVAILABLE, ErrorKind.PEER_LOST);
    for (ErrorKind kind : ErrorKind.values()) {
      assertEquals(shm.contains(kind), readFails(Transport.SHM, kind), () -> "SHM " + kind);
      assertEquals(rdma.contains(kind), readFails(Transport.RDMA, kind), () -> "RDMA " + kind);
      // TCP is where a failover goes: a task that failed there (or on a file) stays failed.
      assertFalse(readFails(Transport.TCP, kind), () -> "TCP " + kind);
      assertFalse(readFails(Transport.FILE, kind), () -> "FILE " + kind);
    }
    for (ErrorKind never :
        List.of(
            ErrorKind.EPOCH_MISMATCH,
            ErrorKind.CANCELLED,
            ErrorKind.TIMEOUT,
            ErrorKind.PROTOCOL,
            ErrorKind.UNQUIESCED)) {
      assertFalse(readFails(Transport.SHM, never), never::toString);
      assertFalse(readFails(Transport.RDMA, never), never::toString);
    }
    assertFalse(readFails(Transport.SHM, null), "a task that did not fail");
  }

  @Test
  void aWriteFailsOverOnlyWhenNothingOfItWasPosted() {
    assertTrue(
        TransportFailover.decide(
            Op.WRITE, Transport.SHM, ErrorKind.UNAVAILABLE, false, true, 1, 1, LATER, NOW, false),
        "effect NONE: nothing posted");
    assertFalse(
        TransportFailover.decide(
            Op.WRITE, Transport.SHM, ErrorKind.UNAVAILABLE, false, false, 1, 1, LATER, NOW, false),
        "APPLIED or UNKNOWN: never replayed (C6)");
    assertFalse(
        TransportFailover.decide(
            Op.WRITE, Transport.RDMA, ErrorKind.PEER_LOST, false, false, 1, 1, LATER, NOW, false));
    assertTrue(
        TransportFailover.decide(
            Op.READ, Transport.RDMA, ErrorKind.PEER_LOST, false, false, 1, 1, LATER, NOW, false),
        "a READ changes nothing at the peer whatever its receipts say");
  }

  @Test
  void theAttemptsTheDeadlineTheCancelAndAVetoBoundIt() {
    Op r = Op.READ;
    Transport shm = Transport.SHM;
    ErrorKind k = ErrorKind.UNAVAILABLE;
    assertFalse(
        TransportFailover.decide(r, shm, k, false, true, 1, 0, LATER, NOW, false), "max 0: off");
    assertFalse(
        TransportFailover.decide(r, shm, k, false, true, 2, 1, LATER, NOW, false),
        "one failover spent");
    assertTrue(TransportFailover.decide(r, shm, k, false, true, 2, 2, LATER, NOW, false));
    assertFalse(
        TransportFailover.decide(r, shm, k, false, true, 1, 1, NOW, NOW, false),
        "the deadline is now");
    assertFalse(
        TransportFailover.decide(r, shm, k, false, true, 1, 1, NOW - 1, NOW, false),
        "the deadline passed");
    assertTrue(TransportFailover.decide(r, shm, k, false, true, 1, 1, NOW + 1, NOW, false));
    assertFalse(
        TransportFailover.decide(r, shm, k, false, true, 1, 1, LATER, NOW, true),
        "the batch was cancelled");
    assertFalse(
        TransportFailover.decide(r, shm, k, true, true, 1, 1, LATER, NOW, false),
        "another receipt of the task named a kind that never fails over");
  }

  // ---- through a batch

  /**
   * A channel that records what it is handed, owes {@code receipts} per task, and, when {@code
   * refuseAtOnce} is set, answers each task with that failure before {@code dispatch} returns.
   */
  private static final class FakeChannel implements PeerChannel {
    final Transport transport;
    final ChannelGate gate;
    final List<TaskWork> work = new CopyOnWriteArrayList<>();
    int receipts = 1;
    Receipt refuseAtOnce;

    FakeChannel(Transport transport) {
      this.transport = transport;
      this.gate = new ChannelGate("the fake " + transport + " channel");
    }

    @Override
    public SegmentDescriptor peer() {
      return new SegmentDescriptor("127.0.0.1", 4000, 0x5e1fL);
    }

    @Override
    public Transport transport() {
      return transport;
    }

    @Override
    public int dispatch(TaskWork task) {
      work.add(task);
      if (refuseAtOnce != null) {
        task.sink().deliver(refuseAtOnce);
      }
      return receipts;
    }

    @Override
    public void flush() {}

    @Override
    public ChannelGate gate() {
      return gate;
    }

    @Override
    public void fence(long newerEpoch, String reason) {}
  }

  private final FakeChannel tcp = new FakeChannel(Transport.TCP);
  private final FakeChannel shm = new FakeChannel(Transport.SHM);
  private final FakeChannel rdma = new FakeChannel(Transport.RDMA);

  private PeerSegment segment(FakeChannel further) {
    return new PeerSegment(
            tcp.peer(), List.of(new RemoteRegion(REGION, 1 << 20, Access.READ_WRITE)), tcp)
        .withChannel(further, null);
  }

  /** A batch failing over as {@code maxFailovers} says, holding {@code requests} dispatched. */
  private BatchCore submit(int maxFailovers, List<TransferRequest> requests) {
    String name = "failover-" + ++batches;
    BatchCore core =
        new BatchCore(
            name,
            4,
            gate,
            counters,
            board,
            Duration.ofSeconds(10),
            Duration.ofSeconds(10),
            new QuarantineLedger(),
            Runnable::run,
            maxFailovers);
    ActorRef<BatchActor.Command> actor =
        testKit.spawn(BatchActor.create(core, board, System::nanoTime), name);
    core.bind(actor);
    assertTrue(gate.tryBatch().granted());
    lease = core.lease();
    core.dispatch(core.admit(lease, requests, Routings.of(requests), System.nanoTime()));
    return core;
  }

  private TransferRequest read(PeerSegment peer) {
    return TransferRequest.read(local, 0, peer, REGION, 0, TASK);
  }

  private TransferRequest write(PeerSegment peer) {
    return TransferRequest.write(local, TASK, peer, REGION, TASK, TASK);
  }

  private TaskResult task(BatchCore core) {
    return core.status(lease).tasks().getFirst();
  }

  private static void answer(TaskWork w, Receipt r) {
    w.sink().deliver(Receipts.of(r));
  }

  private long failovers() {
    return counters.snapshot().transportFailovers();
  }

  @Test
  void aReadShmFailedDrainedRunsOnceMoreOverTcpAndItsResultSaysSo() {
    BatchCore core = submit(1, List.of(read(segment(shm))));
    TaskWork first = shm.work.getFirst();
    TaskResult pending = task(core);
    assertEquals(Transport.SHM, pending.transport(), pending::toString);
    assertEquals(Route.SHM_SAME_HOST, pending.route());
    assertEquals(1, pending.attempts());

    answer(first, Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "lane closed"));
    assertEquals(1, tcp.work.size(), "handed to the segment's TCP channel");
    assertEquals(first, tcp.work.getFirst(), "the same work: range, deadline, batch");
    TaskResult moved = task(core);
    assertEquals(TaskState.PENDING, moved.state(), moved::toString);
    assertFalse(moved.locallyDrained(), "the TCP attempt may touch the memory now");
    assertEquals(Transport.TCP, moved.transport());
    assertEquals(Route.FAILED_OVER, moved.route());
    assertEquals(2, moved.attempts());
    assertEquals(1, failovers());
    assertEquals(1, counters.snapshot().tasksDispatched(Transport.TCP));
    // The loan and the charges are the first attempt's, held across: counted once.
    assertEquals(1, local.loans());
    assertEquals(new Budgets.Usage(1, 1, TASK, 0), gate.usage());

    answer(tcp.work.getFirst(), Receipt.ok(0, TASK, RemoteEffect.NONE));
    TaskResult done = task(core);
    assertEquals(TaskState.COMPLETED, done.state(), done::toString);
    assertEquals(TASK, done.bytes());
    assertEquals(RemoteEffect.NONE, done.remoteEffect());
    assertTrue(done.locallyDrained());
    assertEquals(Transport.TCP, done.transport());
    assertEquals(Route.FAILED_OVER, done.route());
    assertEquals(2, done.attempts());
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
    assertEquals(TASK, counters.snapshot().bytesCompleted(), "the task's bytes, once");
    core.free(lease);
  }

  @Test
  void theFailedAttemptsConfirmedSlicesAreForgottenAndTheRetryAloneDecides() {
    rdma.receipts = 2;
    BatchCore core = submit(1, List.of(read(segment(rdma))));
    TaskWork first = rdma.work.getFirst();
    answer(first, Receipt.ok(0, TASK / 2, RemoteEffect.NONE));
    answer(first, Receipt.failed(0, ErrorKind.PEER_LOST, RemoteEffect.NONE, "control link"));
    assertEquals(1, tcp.work.size());
    // Were the first attempt's half counted, this whole confirmation would make 1.5 tasks.
    answer(tcp.work.getFirst(), Receipt.ok(0, TASK, RemoteEffect.NONE));
    TaskResult done = task(core);
    assertEquals(TaskState.COMPLETED, done.state(), done::toString);
    assertEquals(TASK, done.bytes());
    assertEquals(Transport.TCP, done.transport());
    assertEquals(2, done.attempts());
    core.free(lease);
  }

  @Test
  void aRetryThatFailsTooEndsWithTheTcpFailureNamingTheFirstAndIsNotMovedAgain() {
    BatchCore core = submit(4, List.of(read(segment(shm))));
    answer(
        shm.work.getFirst(),
        Receipt.failed(0, ErrorKind.PEER_LOST, RemoteEffect.NONE, "token unlocked"));
    answer(
        tcp.work.getFirst(),
        Receipt.failed(0, ErrorKind.PEER_LOST, RemoteEffect.NONE, "connection reset"));
    TaskResult r = task(core);
    assertEquals(TaskState.FAILED, r.state(), r::toString);
    assertEquals(ErrorKind.PEER_LOST, r.errorKind());
    assertEquals(0, r.bytes());
    assertTrue(r.locallyDrained());
    assertEquals(Transport.TCP, r.transport());
    assertEquals(2, r.attempts());
    assertTrue(r.detail().startsWith("connection reset"), r::detail);
    assertTrue(r.detail().contains("SHM failed it PEER_LOST: token unlocked"), r::detail);
    assertEquals(1, tcp.work.size(), "TCP is the last transport: no third attempt");
    assertEquals(1, failovers());
    assertEquals(0, local.loans());
    core.free(lease);
  }

  @Test
  void aFailureDeliveredBeforeTheDispatchReturnedStillFailsOver() {
    shm.refuseAtOnce =
        Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "closed (never sent)");
    BatchCore core = submit(1, List.of(read(segment(shm))));
    assertEquals(1, tcp.work.size(), "failed over when its receipt count was recorded");
    answer(tcp.work.getFirst(), Receipt.ok(0, TASK, RemoteEffect.NONE));
    TaskResult r = task(core);
    assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    assertEquals(2, r.attempts());
    core.free(lease);
  }

  @Test
  void aTcpRefusalOfTheRetryOnItsOwnThreadEndsTheTaskDrained() {
    tcp.refuseAtOnce =
        Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "tcp closed (never sent)");
    BatchCore core = submit(1, List.of(read(segment(shm))));
    answer(
        shm.work.getFirst(),
        Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "shm closed"));
    TaskResult r = task(core);
    assertEquals(TaskState.FAILED, r.state(), r::toString);
    assertEquals(ErrorKind.UNAVAILABLE, r.errorKind());
    assertEquals(Transport.TCP, r.transport());
    assertEquals(2, r.attempts());
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
    core.free(lease);
  }

  /** Fails the only task's first attempt with {@code receipt} and returns its result. */
  private TaskResult failedOnce(
      int maxFailovers,
      FakeChannel further,
      Function<PeerSegment, TransferRequest> request,
      Receipt... receipts) {
    further.receipts = receipts.length;
    BatchCore core = submit(maxFailovers, List.of(request.apply(segment(further))));
    for (Receipt r : receipts) {
      answer(further.work.getFirst(), r);
    }
    TaskResult result = task(core);
    core.free(lease);
    return result;
  }

  /** The task stayed failed on its first transport: nothing reached TCP, nothing is held. */
  private void stayedFailed(TaskResult r, Transport on, ErrorKind kind) {
    assertEquals(TaskState.FAILED, r.state(), r::toString);
    assertEquals(kind, r.errorKind(), r::toString);
    assertEquals(on, r.transport(), r::toString);
    assertEquals(1, r.attempts(), r::toString);
    assertEquals(0, r.bytes());
    assertTrue(r.locallyDrained());
    assertTrue(tcp.work.isEmpty(), () -> "handed to TCP: " + tcp.work);
    assertEquals(0, failovers());
    assertEquals(0, local.loans());
  }

  @Test
  void anEpochMismatchIsNeverMovedToTcp() {
    TaskResult r =
        failedOnce(
            1,
            shm,
            this::read,
            Receipt.failed(0, ErrorKind.EPOCH_MISMATCH, RemoteEffect.NONE, "fenced"));
    stayedFailed(r, Transport.SHM, ErrorKind.EPOCH_MISMATCH);
  }

  @Test
  void aTimeoutIsNeverMovedToTcp() {
    stayedFailed(
        failedOnce(
            1,
            rdma,
            this::read,
            Receipt.failed(0, ErrorKind.TIMEOUT, RemoteEffect.NONE, "deadline")),
        Transport.RDMA,
        ErrorKind.TIMEOUT);
  }

  @Test
  void anRdmaPermissionRefusalIsTheSourcesAndStands() {
    stayedFailed(
        failedOnce(
            1,
            rdma,
            this::read,
            Receipt.failed(0, ErrorKind.PERMISSION_DENIED, RemoteEffect.NONE, "grant refused")),
        Transport.RDMA,
        ErrorKind.PERMISSION_DENIED);
  }

  @Test
  void aTaskWithOneSliceOfAKindThatNeverFailsOverStaysFailed() {
    stayedFailed(
        failedOnce(
            1,
            rdma,
            this::read,
            Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "lane faulted"),
            Receipt.failed(0, ErrorKind.EPOCH_MISMATCH, RemoteEffect.NONE, "fenced")),
        Transport.RDMA,
        ErrorKind.UNAVAILABLE);
  }

  @Test
  void zeroFailoversTurnsItOff() {
    stayedFailed(
        failedOnce(
            0, shm, this::read, Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "x")),
        Transport.SHM,
        ErrorKind.UNAVAILABLE);
  }

  @Test
  void aRequestThatNamedItsTransportIsNeverMoved() {
    stayedFailed(
        failedOnce(
            1,
            shm,
            p -> read(p).withTransport(Transport.SHM),
            Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "x")),
        Transport.SHM,
        ErrorKind.UNAVAILABLE);
  }

  @Test
  void aTaskPastItsDeadlineIsNotMoved() throws InterruptedException {
    shm.receipts = 1;
    BatchCore core = submit(1, List.of(read(segment(shm)).withDeadline(Duration.ofMillis(1))));
    Thread.sleep(20);
    answer(shm.work.getFirst(), Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "x"));
    TaskResult r = task(core);
    core.free(lease);
    stayedFailed(r, Transport.SHM, ErrorKind.UNAVAILABLE);
  }

  @Test
  void aCancelledBatchsTaskIsNotMoved() {
    BatchCore core = submit(1, List.of(read(segment(shm))));
    core.cancel(lease);
    answer(shm.work.getFirst(), Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "x"));
    TaskResult r = task(core);
    core.free(lease);
    stayedFailed(r, Transport.SHM, ErrorKind.UNAVAILABLE);
  }

  @Test
  void noTaskIsMovedToATcpChannelThatIsClosedOrFenced() {
    tcp.gate.fence(0x5e20L, "a newer incarnation answers");
    stayedFailed(
        failedOnce(
            1,
            shm,
            this::read,
            Receipt.failed(0, ErrorKind.PEER_LOST, RemoteEffect.NONE, "token unlocked")),
        Transport.SHM,
        ErrorKind.PEER_LOST);
  }

  @Test
  void aWriteThatPostedNothingFailsOverAndCompletesApplied() {
    BatchCore core = submit(1, List.of(write(segment(shm))));
    answer(
        shm.work.getFirst(),
        Receipt.failed(0, ErrorKind.PERMISSION_DENIED, RemoteEffect.NONE, "mapping fenced"));
    assertEquals(1, tcp.work.size());
    answer(tcp.work.getFirst(), Receipt.ok(0, TASK, RemoteEffect.APPLIED));
    TaskResult r = task(core);
    assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    assertEquals(RemoteEffect.APPLIED, r.remoteEffect());
    assertEquals(Transport.TCP, r.transport());
    assertEquals(2, r.attempts());
    core.free(lease);
  }

  @Test
  void aWriteThatMayHaveReachedThePeerIsNeverReplayed() {
    TaskResult unknown =
        failedOnce(
            1,
            shm,
            this::write,
            Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.UNKNOWN, "cut in its copy"));
    stayedFailed(unknown, Transport.SHM, ErrorKind.UNAVAILABLE);
    assertEquals(RemoteEffect.UNKNOWN, unknown.remoteEffect());
  }

  @Test
  void aWriteWithASliceAppliedIsNeverReplayed() {
    TaskResult part =
        failedOnce(
            1,
            rdma,
            this::write,
            Receipt.ok(0, TASK / 2, RemoteEffect.APPLIED),
            Receipt.failed(0, ErrorKind.PEER_LOST, RemoteEffect.NONE, "never posted"));
    stayedFailed(part, Transport.RDMA, ErrorKind.PEER_LOST);
    assertEquals(RemoteEffect.APPLIED, part.remoteEffect());
  }

  @Test
  void aTaskThatNeverReachedATransportSaysZeroAttempts() {
    Registration gone = new Registration(8, Arena.ofAuto().allocate(TASK), Access.READ_WRITE, null);
    gone.hide();
    BatchCore core =
        submit(1, List.of(TransferRequest.read(gone, 0, segment(shm), REGION, 0, TASK)));
    TaskResult r = task(core);
    assertEquals(Route.NOT_DISPATCHED, r.route(), r::toString);
    assertEquals(null, r.transport());
    assertEquals(0, r.attempts());
    core.free(lease);
  }
}
