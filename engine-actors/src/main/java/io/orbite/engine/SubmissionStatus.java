package io.orbite.engine;

import java.util.List;

/**
 * A snapshot of one submission's tasks and of its notification.
 *
 * @param first the batch index of the submission's first task
 * @param tasks one result per task of the submission, in submission order (task {@code k} of the
 *     submission is batch task {@code first + k})
 * @param done whether every task of the submission is terminal and its notification, if one was
 *     attached, is decided
 * @param notification what became of the attached notification; {@link NotificationResult#NONE}
 *     when none was attached
 */
public record SubmissionStatus(
    int first, List<TaskResult> tasks, boolean done, NotificationResult notification) {
  /** Keeps {@code tasks} unmodifiable. */
  public SubmissionStatus {
    tasks = List.copyOf(tasks);
    java.util.Objects.requireNonNull(notification, "SubmissionStatus.notification is null");
  }

  /**
   * Whether the submission is done and every one of its tasks completed.
   *
   * @return true when {@link #done()} and every task is COMPLETED
   */
  public boolean allCompleted() {
    if (!done) {
      return false;
    }
    for (TaskResult t : tasks) {
      if (!t.completed()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Bytes of completed tasks.
   *
   * @return the sum of every task's {@link TaskResult#bytes()}
   */
  public long completedBytes() {
    long sum = 0;
    for (TaskResult t : tasks) {
      sum += t.bytes();
    }
    return sum;
  }
}
