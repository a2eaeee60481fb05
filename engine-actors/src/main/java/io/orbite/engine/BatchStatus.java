package io.orbite.engine;

import java.util.List;

/**
 * A snapshot of a batch's tasks.
 *
 * @param tasks one result per submitted task, in submission order
 * @param done whether every submitted task is terminal
 */
public record BatchStatus(List<TaskResult> tasks, boolean done) {
  public BatchStatus {
    tasks = List.copyOf(tasks);
  }

  public long completedCount() {
    return tasks.stream().filter(TaskResult::completed).count();
  }

  public long failedCount() {
    return tasks.stream().filter(t -> t.state() == TaskState.FAILED || t.state() == TaskState.UNQUIESCED).count();
  }

  /** Bytes of completed tasks. */
  public long completedBytes() {
    return tasks.stream().mapToLong(TaskResult::bytes).sum();
  }

  public boolean allCompleted() {
    return done && tasks.stream().allMatch(TaskResult::completed);
  }
}
