package io.orbite.engine.admission;

import io.orbite.config.BudgetConfig;

/**
 * Budget arithmetic of the Admission actor: plain counters against limits, no threads. Every
 * refusal names the budget, what was asked and what is in use.
 */
public final class Budgets {
  private final BudgetConfig limits;
  private int batches;
  private long tasks;
  private long bytes;
  private int endpoints;

  public Budgets(BudgetConfig limits) {
    this.limits = limits;
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

  /** Charges {@code taskCount} tasks and {@code byteCount} in-flight bytes together, or neither. */
  public String tryTasks(int taskCount, long byteCount) {
    if (tasks + taskCount > limits.maxTasksInFlight()) {
      return "tasks in flight: " + tasks + " + " + taskCount + " exceeds the budget of " + limits.maxTasksInFlight();
    }
    if (byteCount > limits.maxInflightBytes() - bytes) {
      return "in-flight bytes: " + bytes + " + " + byteCount + " exceeds the budget of " + limits.maxInflightBytes();
    }
    tasks += taskCount;
    bytes += byteCount;
    return null;
  }

  public void releaseTasks(int taskCount, long byteCount) {
    tasks -= taskCount;
    bytes -= byteCount;
    if (tasks < 0 || bytes < 0) {
      throw new IllegalStateException("admission released more than it charged: tasks " + tasks + ", bytes " + bytes);
    }
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
    return new Usage(batches, tasks, bytes, endpoints);
  }

  /** What is charged now. */
  public record Usage(int batches, long tasks, long bytes, int endpoints) {}
}
