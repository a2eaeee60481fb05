package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;

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
    taskBudget.release(tasks, bytes);
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
