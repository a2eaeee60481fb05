package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.Effect;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.BehaviorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The batch watchdog (C5, drain before failure): a task whose worker never returns its receipt is
 * left PENDING until its deadline plus the destruction window has passed, then reported UNQUIESCED
 * (0 bytes, not drained, a WRITE's effect UNKNOWN); the batch is listed in the {@link
 * QuarantineLedger} with the task and bytes it retains, its loan and charges stay held and {@code
 * free}/{@code reset} answer BATCH_BUSY, until the late receipt returns them and the batch leaves
 * the list. Time is ManualTime (and a {@link BehaviorTestKit}'s captured timers), moved together
 * with the actor's clock, so no test waits out a real window.
 */
class BatchActorTest {
  static {
    // Initialise SLF4J on this thread before actors log from theirs (no replay warning).
    org.slf4j.LoggerFactory.getLogger(BatchActorTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));
  private static final ManualTime manualTime = ManualTime.get(testKit.system());

  private static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final Duration WINDOW = Duration.ofSeconds(5);
  private static final long REGION = 9;

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private final Registration local =
      new Registration(7, Arena.ofAuto().allocate(8192), Access.READ_WRITE, null);
  private final RecordingChannel channel = new RecordingChannel();
  private final RemoteSegment peer =
      new PeerSegment(
          new SegmentDescriptor("127.0.0.1", 4000, 0x5e1fL),
          List.of(new RemoteRegion(REGION, 1 << 20, Access.READ_WRITE)),
          channel);

  /** How far the actor's clock is ahead of {@link System#nanoTime()}. */
  private final AtomicLong skewNanos = new AtomicLong();

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** A TCP channel that takes every task, owes one receipt for it, and never sends one. */
  private static final class RecordingChannel extends QuietTcpChannel {
    final List<TaskWork> work = new CopyOnWriteArrayList<>();

    @Override
    public int dispatch(TaskWork task) {
      work.add(task);
      return 1;
    }
  }

  private BatchCore core(String name) {
    return new BatchCore(
        name, 2, gate, counters, board, DEADLINE, WINDOW, quarantine, Runnable::run);
  }

  /** Moves the actor's clock and then the scheduler by {@code d}: timers due by then fire. */
  private void timePasses(Duration d) {
    skewNanos.addAndGet(d.toNanos());
    manualTime.timePasses(d);
  }

  private long clock() {
    return System.nanoTime() + skewNanos.get();
  }

  private OwnerState boardState(ActorRef<?> actor) {
    OwnerView.Owner row = board.row(actor);
    if (row == null) {
      throw new AssertionError("no owner " + board.key(actor) + " in the owner view");
    }
    return row.state();
  }

  @Test
  void aTaskWhoseReceiptNeverComesEndsUnquiescedAndQuarantinesTheBatchUntilItsLateReceipt() {
    BatchCore core = core("batch-1");
    ActorRef<BatchActor.Command> actor =
        testKit.spawn(BatchActor.create(core, board, this::clock), "batch-1");
    core.bind(actor);
    assertTrue(gate.tryBatch().granted());
    long lease = core.lease();
    RegisteredMemory memory = local;
    core.dispatch(
        core.admit(
            lease,
            List.of(
                TransferRequest.read(memory, 0, peer, REGION, 0, 1000).withDeadline(DEADLINE),
                TransferRequest.write(memory, 1000, peer, REGION, 0, 3000).withDeadline(DEADLINE)),
            Routings.of(
                List.of(
                    TransferRequest.read(memory, 0, peer, REGION, 0, 1000).withDeadline(DEADLINE),
                    TransferRequest.write(memory, 1000, peer, REGION, 0, 3000)
                        .withDeadline(DEADLINE))),
            System.nanoTime()));
    assertEquals(2, channel.work.size());
    assertEquals(2, local.loans());

    // The READ's receipt comes: it completes and gives back its loan and charges.
    channel.work.get(0).sink().deliver(Receipts.of(Receipt.ok(0, 1000, RemoteEffect.NONE)));
    assertEquals(TaskState.COMPLETED, core.status(lease).tasks().get(0).state());
    assertEquals(new Budgets.Usage(1, 1, 3000, 0), gate.usage());
    assertEquals(1, local.loans());

    // Past the deadline, within the window: the WRITE is still only pending.
    timePasses(DEADLINE.plus(WINDOW).minusSeconds(1));
    assertEquals(TaskState.PENDING, core.status(lease).tasks().get(1).state());
    assertEquals(List.of(), quarantine.list());

    // A window after the deadline the watchdog gives up on it.
    timePasses(Duration.ofMillis(1002));
    TestProbe<Void> waiter = testKit.createTestProbe();
    List<QuarantinedOwner> listed =
        waiter.awaitAssert(
            Duration.ofSeconds(5),
            () -> {
              List<QuarantinedOwner> now = quarantine.list();
              assertEquals(1, now.size(), now::toString);
              return now;
            });
    QuarantinedOwner q = listed.getFirst();
    assertEquals("batch-1", q.owner());
    assertEquals(QuarantinedOwner.Kind.BATCH, q.kind());
    assertEquals(1, q.tasks(), q::toString);
    assertEquals(3000, q.bytes(), q::toString);

    var status = core.status(lease);
    assertTrue(status.done(), "an UNQUIESCED task is terminal for the caller: " + status);
    TaskResult held = status.tasks().get(1);
    assertEquals(TaskState.UNQUIESCED, held.state(), held::toString);
    assertEquals(ErrorKind.UNQUIESCED, held.errorKind());
    assertEquals(0, held.bytes());
    assertEquals(RemoteEffect.UNKNOWN, held.remoteEffect(), "a WRITE that may still land");
    assertFalse(held.locallyDrained());
    assertEquals(TaskState.COMPLETED, status.tasks().get(0).state(), "the other task is kept");
    assertEquals(1, counters.sum(Count.TASKS_UNQUIESCED));

    // What it retains: the loan, the task and byte charges, the batch slot.
    assertEquals(1, local.loans(), "the loan stays with the worker that may still touch it");
    assertEquals(new Budgets.Usage(1, 1, 3000, 0), gate.usage());
    assertEquals(
        ErrorKind.BATCH_BUSY, assertThrows(TransferException.class, () -> core.free(lease)).kind());
    assertEquals(
        ErrorKind.BATCH_BUSY,
        assertThrows(TransferException.class, () -> core.reset(lease)).kind());
    assertEquals(new Budgets.Usage(1, 1, 3000, 0), gate.usage(), "a refused free kept it all");
    assertEquals(OwnerState.QUARANTINED, boardState(actor));

    // The late receipt proves the worker let go: the batch is drained and leaves the list.
    channel
        .work
        .get(1)
        .sink()
        .deliver(Receipts.of(Receipt.failed(1, ErrorKind.PEER_LOST, RemoteEffect.UNKNOWN, "late")));
    assertEquals(List.of(), quarantine.list());
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
    TaskResult late = core.status(lease).tasks().get(1);
    assertEquals(TaskState.UNQUIESCED, late.state(), "a reported outcome never changes");
    assertTrue(late.locallyDrained(), late::toString);
    assertEquals(OwnerState.OPEN, boardState(actor));
    core.free(lease);
    assertEquals(new Budgets.Usage(0, 0, 0, 0), gate.usage());

    core.retire();
    waiter.expectTerminated(actor, Duration.ofSeconds(5));
  }

  @Test
  void theWatchdogIsArmedAWindowAfterTheDeadlineAndLeavesATaskPendingUntilThen() {
    BatchCore core = core("batch-2");
    BehaviorTestKit<BatchActor.Command> kit =
        BehaviorTestKit.create(BatchActor.create(core, board, this::clock), "batch-2");
    core.bind(kit.getRef());
    assertTrue(gate.tryBatch().granted());
    long lease = core.lease();
    core.dispatch(
        core.admit(
            lease,
            List.of(TransferRequest.read(local, 0, peer, REGION, 0, 512).withDeadline(DEADLINE)),
            Routings.of(
                List.of(
                    TransferRequest.read(local, 0, peer, REGION, 0, 512).withDeadline(DEADLINE))),
            System.nanoTime()));

    // The core asked for the watchdog; the actor set it a window after the deadline.
    kit.runOne();
    Effect.TimerScheduled<?> armed = kit.expectEffectClass(Effect.TimerScheduled.class);
    Duration total = DEADLINE.plus(WINDOW);
    assertTrue(
        armed.duration().compareTo(total.minusSeconds(2)) > 0
            && armed.duration().compareTo(total.plusMillis(1)) <= 0,
        "watchdog armed after " + armed.duration());

    // Fired 3 s early (as one armed for an earlier task that has finished since would be): the
    // task, past its deadline but within the window, stays pending and the watchdog is set again
    // for the rest of the window.
    skewNanos.set(total.minusSeconds(3).toNanos());
    kit.run((BatchActor.Command) armed.msg());
    assertEquals(TaskState.PENDING, core.status(lease).tasks().getFirst().state());
    assertEquals(List.of(), quarantine.list());
    assertEquals(1, local.loans());
    Effect.TimerScheduled<?> again = kit.expectEffectClass(Effect.TimerScheduled.class);
    assertTrue(
        again.duration().compareTo(Duration.ofMillis(3001)) <= 0
            && again.duration().compareTo(Duration.ofSeconds(1)) > 0,
        "watchdog set again after " + again.duration());

    skewNanos.set(total.plusMillis(2).toNanos());
    kit.run((BatchActor.Command) again.msg());
    TaskResult t = core.status(lease).tasks().getFirst();
    assertEquals(TaskState.UNQUIESCED, t.state(), t::toString);
    assertEquals(RemoteEffect.NONE, t.remoteEffect(), "a READ changes nothing at the peer");
    List<QuarantinedOwner> listed = quarantine.list();
    assertEquals(1, listed.size(), listed::toString);
    assertEquals("batch-2", listed.getFirst().owner());
    assertEquals(512, listed.getFirst().bytes());
    assertEquals(1, local.loans());
    assertFalse(kit.hasEffects(), "nothing is pending any more: no watchdog is set");
  }

  @Test
  void eachTaskReportsTheTransportItWasHandedToAndWhyFromAdmissionToItsEnd() {
    BatchCore core = core("batch-3");
    BehaviorTestKit<BatchActor.Command> kit =
        BehaviorTestKit.create(BatchActor.create(core, board, this::clock), "batch-3");
    core.bind(kit.getRef());
    assertTrue(gate.tryBatch().granted());
    long lease = core.lease();
    core.dispatch(
        core.admit(
            lease,
            List.of(
                TransferRequest.read(local, 0, peer, REGION, 0, 100).withTransport(Transport.TCP),
                TransferRequest.write(local, 100, peer, REGION, 0, 200)),
            Routings.of(
                List.of(
                    TransferRequest.read(local, 0, peer, REGION, 0, 100)
                        .withTransport(Transport.TCP),
                    TransferRequest.write(local, 100, peer, REGION, 0, 200))),
            System.nanoTime()));
    List<TaskResult> pending = core.status(lease).tasks();
    assertEquals(TaskState.PENDING, pending.get(0).state(), pending::toString);
    assertEquals(Transport.TCP, pending.get(0).transport(), "recorded when it was handed over");
    assertEquals(Route.REQUESTED, pending.get(0).route(), "the request named TCP");
    assertEquals(Transport.TCP, pending.get(1).transport());
    assertEquals(
        Route.TCP_RDMA_NOT_ENABLED, pending.get(1).route(), "UNSPEC on a segment without RDMA");

    channel
        .work
        .get(0)
        .sink()
        .deliver(
            Receipts.of(
                List.of(
                    Receipt.ok(0, 100, RemoteEffect.NONE),
                    Receipt.failed(1, ErrorKind.PEER_LOST, RemoteEffect.UNKNOWN, "lost"))));
    List<TaskResult> ended = core.status(lease).tasks();
    assertEquals(TaskState.COMPLETED, ended.get(0).state(), ended::toString);
    assertEquals(Transport.TCP, ended.get(0).transport());
    assertEquals(Route.REQUESTED, ended.get(0).route());
    assertEquals(TaskState.FAILED, ended.get(1).state(), ended::toString);
    assertEquals(Transport.TCP, ended.get(1).transport(), "a failed task keeps its transport");
    assertEquals(Route.TCP_RDMA_NOT_ENABLED, ended.get(1).route());

    // A task whose local region went away before admission never reaches a transport.
    core.reset(lease);
    Registration hidden =
        new Registration(8, Arena.ofAuto().allocate(4096), Access.READ_WRITE, null);
    hidden.hide();
    core.dispatch(
        core.admit(
            lease,
            List.of(TransferRequest.read(hidden, 0, peer, REGION, 0, 64)),
            Routings.of(List.of(TransferRequest.read(hidden, 0, peer, REGION, 0, 64))),
            System.nanoTime()));
    TaskResult refused = core.status(lease).tasks().getFirst();
    assertEquals(ErrorKind.INVALID_ARGUMENT, refused.errorKind(), refused::toString);
    assertEquals(null, refused.transport(), refused::toString);
    assertEquals(Route.NOT_DISPATCHED, refused.route(), refused::toString);
    assertEquals(2, channel.work.size(), "nothing more was dispatched");
    core.free(lease);
  }
}
