package io.orbite.engine;

/**
 * The outcome of one task.
 *
 * @param index the task's position in its batch, in submission order
 * @param state where the task stands; terminal states never change again
 * @param bytes bytes confirmed; 0 for any task that did not complete (failed bytes are never
 *     counted as transferred)
 * @param errorKind why it failed; {@code null} unless {@code state} is FAILED or UNQUIESCED
 * @param remoteEffect what is known about the peer's bytes (C6)
 * @param locallyDrained whether no worker can still touch the task's local memory (C5)
 * @param detail a human-readable explanation of a failure; empty on success
 * @param elapsedNanos from admission to the receipt that made the task terminal (0 while pending)
 */
public record TaskResult(
    int index,
    TaskState state,
    long bytes,
    ErrorKind errorKind,
    RemoteEffect remoteEffect,
    boolean locallyDrained,
    String detail,
    long elapsedNanos) {

  /**
   * Whether the task completed: every slice was confirmed (C4).
   *
   * @return true when {@code state} is COMPLETED
   */
  public boolean completed() {
    return state == TaskState.COMPLETED;
  }
}
