package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;

/**
 * Budget arithmetic of the Admission gate: batches and endpoints as plain counters (the gate's lock
 * guards them), tasks and in-flight bytes as one lock-free word ({@link TaskBudget}). Every refusal
 * names the budget, what was asked and what is in use.
 */
public final class Budgets {
  private final BudgetConfig limits;
  private final TaskBudget tasks;
  private int batches;
  private int endpoints;

  public Budgets(BudgetConfig limits) {
    this.limits = limits;
    this.tasks = new TaskBudget(limits.maxTasksInFlight(), limits.maxInflightBytes());
  }

  /** Charges one batch, or returns why not. */
  public String tryBatch() {
    if (batches >= limits.maxBatches()) {
      return "batches: budget of " + limits.maxBatches() + " is in use";
    }
    batches++;
    return null;
  }

  public void releaseBatch() {
    batches = Math.max(0, batches - 1);
  }

  /** The lock-free tasks-and-bytes word these budgets charge (shared with the gate). */
  TaskBudget taskBudget() {
    return tasks;
  }

  public String tryEndpoint() {
    if (endpoints >= limits.maxEndpoints()) {
      return "endpoints: budget of " + limits.maxEndpoints() + " is in use";
    }
    endpoints++;
    return null;
  }

  public void releaseEndpoint() {
    endpoints = Math.max(0, endpoints - 1);
  }

  public Usage usage() {
    long[] t = tasks.usage();
    return new Usage(batches, t[0], t[1], endpoints);
  }

  /** What is charged now. */
  public record Usage(int batches, long tasks, long bytes, int endpoints) {}
}
