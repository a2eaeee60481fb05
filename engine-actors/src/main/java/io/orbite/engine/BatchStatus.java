package io.orbite.engine;

import java.util.List;

/**
 * A snapshot of a batch's tasks.
 *
 * @param tasks one result per submitted task, in submission order
 * @param done whether every submitted task is terminal
 */
public record BatchStatus(List<TaskResult> tasks, boolean done) {
  /** Copies {@code tasks} into an unmodifiable list. */
  public BatchStatus {
    tasks = List.copyOf(tasks);
  }

  /**
   * How many tasks completed.
   *
   * @return the number of tasks in state COMPLETED
   */
  public long completedCount() {
    return tasks.stream().filter(TaskResult::completed).count();
  }

  /**
   * How many tasks failed, including those whose drain could not be proven.
   *
   * @return the number of tasks in state FAILED or UNQUIESCED (pending tasks are not counted)
   */
  public long failedCount() {
    return tasks.stream()
        .filter(t -> t.state() == TaskState.FAILED || t.state() == TaskState.UNQUIESCED)
        .count();
  }

  /**
   * Bytes of completed tasks.
   *
   * @return the sum of every task's {@link TaskResult#bytes()} (0 for each task that did not
   *     complete)
   */
  public long completedBytes() {
    return tasks.stream().mapToLong(TaskResult::bytes).sum();
  }

  /**
   * Whether the batch is done and every one of its tasks completed.
   *
   * @return true when {@link #done()} and every task is COMPLETED; false while any task is pending
   *     or after any task failed
   */
  public boolean allCompleted() {
    return done && tasks.stream().allMatch(TaskResult::completed);
  }
}
