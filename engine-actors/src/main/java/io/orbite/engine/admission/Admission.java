package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of the engine's budgets (C9): batches, tasks and bytes in flight, endpoints, kept in an
 * {@link AdmissionGate} that callers, lanes and the guardian charge and release directly, on their
 * own threads, so the common path never waits on this mailbox. Child of the EngineGuardian. The
 * actor fences the gate, answers the charges and releases that still come as messages (the segment
 * table's endpoints; {@code GetUsage} for a test) and reports the gate to the owner view; {@code
 * owed()} reads the gate itself. Exhaustion is answered at once (RESOURCE_EXHAUSTED) before the
 * caller has any side effect; nothing queues here.
 *
 * <p>States, reported as the gate's: {@code open} (admits) and {@code fenced} (refuses every new
 * charge, still takes releases), entered when the engine stops accepting requester work (the
 * guardian fences the gate; a {@link Fence} message does the same).
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

  /**
   * How a quarantined Admission answers {@code m} (see {@code OwnerSupervision}): every charge is
   * refused, marked fenced so that callers report UNAVAILABLE; usage is read from the gate itself;
   * releases and fences need no answer (the gate is charged and released by callers directly).
   */
  public static void refuse(Command m, String why, AdmissionGate gate) {
    switch (m) {
      case AcquireBatch a -> a.replyTo().tell(new Decision.Unavailable(why));
      case AdmitTasks a -> a.replyTo().tell(new Decision.Unavailable(why));
      case AcquireEndpoint a -> a.replyTo().tell(new Decision.Unavailable(why));
      case GetUsage g -> g.replyTo().tell(gate.usage());
      default -> {}
    }
  }

  /**
   * What a charge got: {@link Granted}; {@link Exhausted}, a budget is in use (callers report
   * RESOURCE_EXHAUSTED); or {@link Unavailable}, nothing is admitted now (the requester side is
   * closed, the engine is closing, or Admission cannot answer: callers report UNAVAILABLE).
   */
  public sealed interface Decision {
    /** The charge went through. */
    record Granted() implements Decision {}

    /** A budget is exhausted; {@code detail} names it, what was asked and what is in use. */
    record Exhausted(String detail) implements Decision {}

    /** Nothing is admitted now; {@code detail} says why. */
    record Unavailable(String detail) implements Decision {}

    default boolean granted() {
      return this instanceof Granted;
    }

    /** Why the charge was refused, or null when it was granted. */
    default String refusal() {
      return switch (this) {
        case Granted g -> null;
        case Exhausted e -> e.detail();
        case Unavailable u -> u.detail();
      };
    }

    /**
     * Whether the refusal is {@link Unavailable} (reported UNAVAILABLE, not RESOURCE_EXHAUSTED).
     */
    default boolean fenced() {
      return this instanceof Unavailable;
    }
  }

  /** The decision for a charge that went through. */
  static final Decision GRANTED = new Decision.Granted();

  /**
   * {@link #GRANTED} for a null refusal from the budget arithmetic, else {@link
   * Decision.Exhausted}.
   */
  static Decision decision(String refusal) {
    return refusal == null ? GRANTED : new Decision.Exhausted(refusal);
  }

  /** How often the owner view is refreshed while charges bypass the mailbox. */
  private static final java.time.Duration REPORT_EVERY = java.time.Duration.ofSeconds(1);

  private enum Refresh implements Command {
    INSTANCE
  }

  private final AdmissionGate gate;
  private final BudgetConfig limits;

  private Admission(AdmissionGate gate, BudgetConfig limits) {
    this.gate = gate;
    this.limits = limits;
  }

  /** An Admission with a gate of its own (tests). */
  public static Behavior<Command> create(BudgetConfig limits) {
    return create(new AdmissionGate(limits), limits, new io.orbite.engine.view.OwnerBoard());
  }

  /**
   * Owns {@code gate}: every message charges or releases through it, {@code Fence} fences it, and
   * its state and budgets (used and limit) are reported to {@code board} after every message and
   * every {@link #REPORT_EVERY}, since callers, lanes and the guardian charge the gate directly.
   */
  public static Behavior<Command> create(
      AdmissionGate gate, BudgetConfig limits, io.orbite.engine.view.OwnerBoard board) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  timers.startTimerWithFixedDelay(Refresh.INSTANCE, REPORT_EVERY);
                  Admission admission = new Admission(gate, limits);
                  return io.orbite.engine.view.OwnerBoard.reporting(
                      board, admission::report, admission.open());
                }));
  }

  /** Names of the budget charges in reports; {@code <name>Limit} is the budget's limit. */
  private io.orbite.engine.view.OwnerBoard.Report report() {
    Budgets.Usage u = gate.usage();
    String fencedBecause = gate.fencedBecause();
    io.orbite.engine.OwnerState state =
        fencedBecause == null
            ? io.orbite.engine.OwnerState.OPEN
            : io.orbite.engine.OwnerState.FENCED;
    return new io.orbite.engine.view.OwnerBoard.Report(
        "Admission",
        state,
        java.util.Map.of(
            "batches",
            (long) u.batches(),
            "batchesLimit",
            (long) limits.maxBatches(),
            "tasks",
            u.tasks(),
            "tasksLimit",
            (long) limits.maxTasksInFlight(),
            "bytes",
            u.bytes(),
            "bytesLimit",
            limits.maxInflightBytes(),
            "endpoints",
            (long) u.endpoints(),
            "endpointsLimit",
            (long) limits.maxEndpoints()),
        fencedBecause == null ? "" : fencedBecause);
  }

  /**
   * The one behaviour: every charge goes through the gate, which refuses them itself once fenced.
   * Whether it is fenced is the gate's state, reported from there: the guardian fences the gate
   * directly, so no Fence message can be left in this mailbox when the engine stops.
   */
  private Behavior<Command> open() {
    return Behaviors.receive(Command.class)
        .onMessage(
            Fence.class,
            m -> {
              gate.fence(m.reason());
              return Behaviors.same();
            })
        .onMessage(AcquireBatch.class, m -> reply(m.replyTo(), gate.tryBatch()))
        .onMessage(AdmitTasks.class, m -> reply(m.replyTo(), gate.tryTasks(m.tasks(), m.bytes())))
        .onMessage(AcquireEndpoint.class, m -> reply(m.replyTo(), gate.tryEndpoint()))
        .onMessage(
            ReleaseBatch.class,
            m -> {
              gate.releaseBatch();
              return Behaviors.same();
            })
        .onMessage(
            ReleaseTasks.class,
            m -> {
              gate.releaseTasks(m.tasks(), m.bytes());
              return Behaviors.same();
            })
        .onMessage(
            ReleaseEndpoint.class,
            m -> {
              gate.releaseEndpoint();
              return Behaviors.same();
            })
        .onMessage(
            GetUsage.class,
            m -> {
              m.replyTo().tell(gate.usage());
              return Behaviors.same();
            })
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .build();
  }

  private Behavior<Command> reply(ActorRef<Decision> replyTo, Decision decision) {
    replyTo.tell(decision);
    return Behaviors.same();
  }
}
