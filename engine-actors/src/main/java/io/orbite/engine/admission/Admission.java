package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of the engine's budgets (C9): batches, tasks and bytes in flight, endpoints. Child of the
 * EngineGuardian. Exhaustion is answered at once (RESOURCE_EXHAUSTED) before the caller has any
 * side effect; nothing queues here. Charges come back with explicit release messages.
 *
 * <p>States: {@link #open} (admits) and {@link #fenced} (refuses every new charge, still takes
 * releases), entered when the engine stops accepting requester work.
 */
public final class Admission {
  public sealed interface Command {}

  public record AcquireBatch(ActorRef<Decision> replyTo) implements Command {}

  public record ReleaseBatch() implements Command {}

  public record AdmitTasks(int tasks, long bytes, ActorRef<Decision> replyTo) implements Command {}

  public record ReleaseTasks(int tasks, long bytes) implements Command {}

  public record AcquireEndpoint(ActorRef<Decision> replyTo) implements Command {}

  public record ReleaseEndpoint() implements Command {}

  public record GetUsage(ActorRef<Budgets.Usage> replyTo) implements Command {}

  /** Stop admitting: later charges are refused as UNAVAILABLE. */
  public record Fence(String reason) implements Command {}

  /** Granted when {@code refusal} is null; otherwise it says which budget is exhausted. */
  public record Decision(String refusal, boolean fenced) {
    public boolean granted() {
      return refusal == null;
    }
  }

  private static final Decision GRANTED = new Decision(null, false);

  private final Budgets budgets;
  private final BudgetConfig limits;
  private String state = "open";
  private String fencedBecause = "";

  private Admission(BudgetConfig limits) {
    this.budgets = new Budgets(limits);
    this.limits = limits;
  }

  public static Behavior<Command> create(BudgetConfig limits) {
    return create(limits, new io.orbite.engine.view.OwnerBoard());
  }

  /** Reports its state and its budgets (used and limit) to {@code board} after every change. */
  public static Behavior<Command> create(BudgetConfig limits, io.orbite.engine.view.OwnerBoard board) {
    return Behaviors.setup(ctx -> {
      Admission admission = new Admission(limits);
      return io.orbite.engine.view.OwnerBoard.reporting(board, admission::report, admission.open());
    });
  }

  /** Names of the budget charges in reports; {@code <name>Limit} is the budget's limit. */
  private io.orbite.engine.view.OwnerBoard.Report report() {
    Budgets.Usage u = budgets.usage();
    return new io.orbite.engine.view.OwnerBoard.Report("Admission", state, java.util.Map.of(
        "batches", (long) u.batches(), "batchesLimit", (long) limits.maxBatches(),
        "tasks", u.tasks(), "tasksLimit", (long) limits.maxTasksInFlight(),
        "bytes", u.bytes(), "bytesLimit", limits.maxInflightBytes(),
        "endpoints", (long) u.endpoints(), "endpointsLimit", (long) limits.maxEndpoints()), fencedBecause);
  }

  private Behavior<Command> open() {
    return Behaviors.receive(Command.class)
        .onMessage(AcquireBatch.class, m -> reply(m.replyTo(), budgets.tryBatch()))
        .onMessage(AdmitTasks.class, m -> reply(m.replyTo(), budgets.tryTasks(m.tasks(), m.bytes())))
        .onMessage(AcquireEndpoint.class, m -> reply(m.replyTo(), budgets.tryEndpoint()))
        .onMessage(Fence.class, m -> fenced(m.reason()))
        .onMessage(ReleaseBatch.class, this::onReleaseBatch)
        .onMessage(ReleaseTasks.class, this::onReleaseTasks)
        .onMessage(ReleaseEndpoint.class, this::onReleaseEndpoint)
        .onMessage(GetUsage.class, this::onGetUsage)
        .build();
  }

  private Behavior<Command> fenced(String reason) {
    state = "fenced";
    fencedBecause = reason;
    Decision refusal = new Decision("engine is not accepting requester work: " + reason, true);
    return Behaviors.receive(Command.class)
        .onMessage(AcquireBatch.class, m -> refuse(m.replyTo(), refusal))
        .onMessage(AdmitTasks.class, m -> refuse(m.replyTo(), refusal))
        .onMessage(AcquireEndpoint.class, m -> refuse(m.replyTo(), refusal))
        .onMessage(Fence.class, m -> Behaviors.same())
        .onMessage(ReleaseBatch.class, this::onReleaseBatch)
        .onMessage(ReleaseTasks.class, this::onReleaseTasks)
        .onMessage(ReleaseEndpoint.class, this::onReleaseEndpoint)
        .onMessage(GetUsage.class, this::onGetUsage)
        .build();
  }

  private Behavior<Command> reply(ActorRef<Decision> replyTo, String refusal) {
    replyTo.tell(refusal == null ? GRANTED : new Decision(refusal, false));
    return Behaviors.same();
  }

  private Behavior<Command> refuse(ActorRef<Decision> replyTo, Decision refusal) {
    replyTo.tell(refusal);
    return Behaviors.same();
  }

  private Behavior<Command> onReleaseBatch(ReleaseBatch m) {
    budgets.releaseBatch();
    return Behaviors.same();
  }

  private Behavior<Command> onReleaseTasks(ReleaseTasks m) {
    budgets.releaseTasks(m.tasks(), m.bytes());
    return Behaviors.same();
  }

  private Behavior<Command> onReleaseEndpoint(ReleaseEndpoint m) {
    budgets.releaseEndpoint();
    return Behaviors.same();
  }

  private Behavior<Command> onGetUsage(GetUsage m) {
    m.replyTo().tell(budgets.usage());
    return Behaviors.same();
  }
}
