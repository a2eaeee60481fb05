package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;

/**
 * The engine's budgets (C9) as one shared object, so a charge costs a short critical section on the
 * thread that needs it instead of an ask to the Admission actor. Every charge is all-or-nothing
 * (tasks and bytes together) and is decided under the same lock as the fence, so no charge can
 * succeed after {@link #fence} returned. Releases are never refused. The Admission actor owns the
 * gate's lifecycle (it fences it and reports it); submitting callers, lanes (releases), the guardian and the segment table
 * charge it directly or through the actor.
 */
public final class AdmissionGate {
  private final Budgets budgets;
  /** Why the gate refuses new charges; null while it admits. Guarded by {@code this}. */
  private String fencedBecause;

  /** A gate with nothing charged, admitting up to {@code limits}. */
  public AdmissionGate(BudgetConfig limits) {
    this.budgets = new Budgets(limits);
  }

  /** Charges one batch slot; {@link Admission#GRANTED} or the refusal naming the budget or the fence. */
  public synchronized Admission.Decision tryBatch() {
    return fencedBecause != null ? fencedDecision() : Admission.decision(budgets.tryBatch());
  }

  /** Gives back one batch slot. */
  public synchronized void releaseBatch() {
    budgets.releaseBatch();
  }

  /** Charges {@code tasks} tasks and {@code bytes} in-flight bytes together, or neither. */
  public synchronized Admission.Decision tryTasks(int tasks, long bytes) {
    return fencedBecause != null ? fencedDecision() : Admission.decision(budgets.tryTasks(tasks, bytes));
  }

  /** Gives back what {@link #tryTasks} charged. */
  public synchronized void releaseTasks(int tasks, long bytes) {
    budgets.releaseTasks(tasks, bytes);
  }

  /** Charges one peer endpoint. */
  public synchronized Admission.Decision tryEndpoint() {
    return fencedBecause != null ? fencedDecision() : Admission.decision(budgets.tryEndpoint());
  }

  /** Gives back one peer endpoint. */
  public synchronized void releaseEndpoint() {
    budgets.releaseEndpoint();
  }

  /** From now on every charge is refused (UNAVAILABLE); releases still count. The first reason stays. */
  public synchronized void fence(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
    }
  }

  /** Why the gate is fenced, or null while it admits. */
  public synchronized String fencedBecause() {
    return fencedBecause;
  }

  /** What is charged now. */
  public synchronized Budgets.Usage usage() {
    return budgets.usage();
  }

  private Admission.Decision fencedDecision() {
    return new Admission.Decision("engine is not accepting requester work: " + fencedBecause, true);
  }
}
