package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.engine.Access;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
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
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A submission's tasks reach a channel in runs ({@link PeerChannel#dispatchRun}): every task is
 * handed over exactly once, in order, in runs of at most {@link RunDispatcher#FIRST_RUN} first and
 * {@link RunDispatcher#RUN} after; and when a transport breaks its contract part-way through a run,
 * the tasks it accepted stay owed to it while the ones it never took fail as never sent, their
 * loans and charges returned at once.
 */
class DispatchRunTest {
  static {
    org.slf4j.LoggerFactory.getLogger(DispatchRunTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));

  private static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final long REGION = 9;
  private static final int TASKS = RunDispatcher.FIRST_RUN + RunDispatcher.RUN + 22;
  private static final long TASK_BYTES = 64;

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private final Registration local =
      new Registration(7, Arena.ofAuto().allocate(TASKS * TASK_BYTES), Access.READ_WRITE, null);

  /** The lease of the batch {@link #admitAndDispatch} made. */
  private long lease;

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** Takes tasks in runs, as a transport does, and breaks after {@code acceptBeforeBreaking}. */
  private static final class RunChannel extends QuietTcpChannel {
    final List<TaskWork> accepted = new ArrayList<>();
    final List<Integer> runLengths = new ArrayList<>();
    final int acceptBeforeBreaking;

    RunChannel(int acceptBeforeBreaking) {
      this.acceptBeforeBreaking = acceptBeforeBreaking;
    }

    @Override
    public void dispatchRun(TaskWork[] work, int from, int to, int[] owed) {
      runLengths.add(to - from);
      for (int k = from; k < to; k++) {
        if (accepted.size() == acceptBeforeBreaking) {
          throw new IllegalStateException("lane table corrupted");
        }
        accepted.add(work[k]);
        owed[k] = 1;
      }
    }

    @Override
    public int dispatch(TaskWork task) {
      throw new AssertionError("a run of tasks must come through dispatchRun");
    }
  }

  private BatchCore admitAndDispatch(RunChannel channel, String name) {
    RemoteSegment peer =
        new PeerSegment(
            channel.peer(), List.of(new RemoteRegion(REGION, 1 << 20, Access.READ_WRITE)), channel);
    BatchCore core =
        new BatchCore(
            name,
            TASKS,
            gate,
            counters,
            board,
            DEADLINE,
            DEADLINE,
            new QuarantineLedger(),
            r -> {});
    ActorRef<BatchActor.Command> actor =
        testKit.spawn(BatchActor.create(core, board, System::nanoTime), name);
    core.bind(actor);
    assertTrue(gate.tryBatch().granted());
    List<TransferRequest> requests = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      requests.add(
          TransferRequest.read(local, i * TASK_BYTES, peer, REGION, i * TASK_BYTES, TASK_BYTES)
              .withDeadline(DEADLINE));
    }
    lease = core.lease();
    core.dispatch(core.admit(lease, requests, Routings.of(requests), System.nanoTime()));
    return core;
  }

  @Test
  void everyTaskReachesTheChannelOnceInOrderInBoundedRuns() {
    RunChannel channel = new RunChannel(Integer.MAX_VALUE);
    BatchCore core = admitAndDispatch(channel, "runs-1");
    assertEquals(TASKS, channel.accepted.size());
    for (int i = 0; i < TASKS; i++) {
      assertEquals(i, channel.accepted.get(i).taskIndex(), "task order within the submission");
      assertEquals(i * TASK_BYTES, channel.accepted.get(i).localOffset());
    }
    assertEquals(
        List.of(
            RunDispatcher.FIRST_RUN,
            RunDispatcher.RUN,
            TASKS - RunDispatcher.FIRST_RUN - RunDispatcher.RUN),
        channel.runLengths);
    assertEquals(TASKS, counters.snapshot().tasksDispatched(Transport.TCP));
    assertEquals(TASKS * TASK_BYTES, counters.snapshot().bytesDispatched(Transport.TCP));
    for (TaskWork w : channel.accepted) {
      w.sink().deliver(Receipts.of(Receipt.ok(w.taskIndex(), TASK_BYTES, RemoteEffect.NONE)));
    }
    BatchStatus status = core.status(lease);
    assertTrue(status.allCompleted(), status::toString);
    assertEquals(TASKS * TASK_BYTES, status.completedBytes());
    assertEquals(0, local.loans());
  }

  @Test
  void aRunThatBreaksPartWayFailsOnlyTheTasksTheTransportNeverTook() {
    int taken = RunDispatcher.RUN + 5;
    RunChannel channel = new RunChannel(taken);
    BatchCore core = admitAndDispatch(channel, "runs-2");
    assertEquals(taken, channel.accepted.size());
    BatchStatus status = core.status(lease);
    for (int i = 0; i < TASKS; i++) {
      TaskResult r = status.tasks().get(i);
      if (i < taken) {
        assertEquals(TaskState.PENDING, r.state(), () -> "accepted, owed a receipt: " + r);
      } else {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.UNAVAILABLE, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
      }
    }
    // Only the accepted tasks still hold a loan on the local range and a charge.
    assertEquals(taken, local.loans());
    assertEquals(new Budgets.Usage(1, taken, taken * TASK_BYTES, 0), gate.usage());
    for (TaskWork w : channel.accepted) {
      w.sink().deliver(Receipts.of(Receipt.ok(w.taskIndex(), TASK_BYTES, RemoteEffect.NONE)));
    }
    BatchStatus done = core.status(lease);
    assertEquals(taken * TASK_BYTES, done.completedBytes(), done::toString);
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
  }
}
