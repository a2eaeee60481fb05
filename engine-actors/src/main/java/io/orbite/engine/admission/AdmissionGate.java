package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The engine's budgets (C9) as one shared object, so a charge costs no ask to the Admission actor.
 * Tasks and in-flight bytes, the charge of every submit, are one atomic word with the fence in it
 * ({@link TaskBudget}): a single compare-and-set, all or nothing, on the submitting thread, and no
 * such charge can succeed after {@link #fence} returned. Batch slots and endpoints are charged
 * under this object's lock, which {@link #fence} also takes. Releases are never refused. The
 * Admission actor owns the gate's lifecycle (it fences it and reports it); submitting callers,
 * lanes (releases), the guardian and the segment table charge it directly or through the actor.
 */
public final class AdmissionGate {
  private final Budgets budgets;
  private final TaskBudget taskBudget;

  /**
   * Why the gate refuses new charges; null while it admits. Written before the fence bit is set.
   */
  private volatile String fencedBecause;

  /** What {@link #whenDrained} handed out; null until someone waits. */
  private volatile CompletableFuture<Void> drained;

  /** A gate with nothing charged, admitting up to {@code limits}. */
  public AdmissionGate(BudgetConfig limits) {
    this.budgets = new Budgets(limits);
    this.taskBudget = budgets.taskBudget();
  }

  /**
   * Charges one batch slot; {@link Admission#GRANTED} or the refusal naming the budget or the
   * fence.
   */
  public synchronized Admission.Decision tryBatch() {
    return taskBudget.fenced() ? fencedDecision() : Admission.decision(budgets.tryBatch());
  }

  /** Gives back one batch slot. */
  public synchronized void releaseBatch() {
    budgets.releaseBatch();
  }

  /**
   * Charges {@code tasks} tasks and {@code bytes} in-flight bytes together, or neither; takes no
   * lock.
   */
  public Admission.Decision tryTasks(int tasks, long bytes) {
    String refusal = taskBudget.tryCharge(tasks, bytes);
    return refusal == TaskBudget.FENCED ? fencedDecision() : Admission.decision(refusal);
  }

  /** Gives back what {@link #tryTasks} charged; takes no lock. */
  public void releaseTasks(int tasks, long bytes) {
    if (taskBudget.release(tasks, bytes)) {
      CompletableFuture<Void> waiting = drained;
      if (waiting != null) {
        waiting.complete(null);
      }
    }
  }

  /**
   * Completes once the gate is fenced and no task is charged any more (at once if that is so now).
   * A fenced gate admits nothing, so once it completes it stays true. Costs the releasing thread
   * nothing until the gate is fenced.
   */
  public CompletionStage<Void> whenDrained() {
    CompletableFuture<Void> waiting;
    synchronized (this) {
      waiting = drained;
      if (waiting == null) {
        waiting = new CompletableFuture<>();
        drained = waiting;
      }
    }
    // Written before this read, so a release that empties the budget after it sees the future.
    if (taskBudget.fenced() && taskBudget.tasks() == 0) {
      waiting.complete(null);
    }
    return waiting;
  }

  /** Charges one peer endpoint. */
  public synchronized Admission.Decision tryEndpoint() {
    return taskBudget.fenced() ? fencedDecision() : Admission.decision(budgets.tryEndpoint());
  }

  /** Gives back one peer endpoint. */
  public synchronized void releaseEndpoint() {
    budgets.releaseEndpoint();
  }

  /**
   * From now on every charge is refused (UNAVAILABLE); releases still count. The first reason
   * stays.
   */
  public synchronized void fence(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
    }
    taskBudget.fence();
  }

  /** Why the gate is fenced, or null while it admits. */
  public String fencedBecause() {
    return taskBudget.fenced() ? fencedBecause : null;
  }

  /** What is charged now. */
  public synchronized Budgets.Usage usage() {
    return budgets.usage();
  }

  private Admission.Decision fencedDecision() {
    return new Admission.Decision.Unavailable(
        "engine is not accepting requester work: " + fencedBecause);
  }
}
