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
 * @param transport the transport the task was handed to (the one the request named, or the one
 *     UNSPEC chose), also when that transport then failed it; {@code null} when it never reached
 *     one ({@code route} is then {@link Route#NOT_DISPATCHED}) or when that is not known ({@link
 *     Route#UNREPORTED})
 * @param route why it ran on {@code transport}: {@link Route#REQUESTED}, or the step of the UNSPEC
 *     rule that picked it, or {@link Route#POLICY} when a transport policy rule did, or {@link
 *     Route#FAILED_OVER} when it ran again over TCP after SHM or RDMA failed it drained; never
 *     {@code null}
 * @param attempts how many transports the task was handed to: 1 for a task that ran once, 2 for one
 *     that failed over ({@code transport} is then the one that finished it, TCP); 0 when {@code
 *     transport} is null (it never reached one, or that is not known)
 * @param rule the index of the transport policy rule ({@code policies[rule]} in the configuration)
 *     that chose the task's transport, also when the task then failed over to TCP; {@value
 *     #NO_RULE} when no rule chose it (the request named its transport, no rule matched, the engine
 *     has no policies, or the task never reached a transport)
 */
public record TaskResult(
    int index,
    TaskState state,
    long bytes,
    ErrorKind errorKind,
    RemoteEffect remoteEffect,
    boolean locallyDrained,
    String detail,
    long elapsedNanos,
    Transport transport,
    Route route,
    int attempts,
    int rule) {

  /** {@link #rule()} of a task whose transport no policy rule chose. */
  public static final int NO_RULE = -1;

  /**
   * A result whose transport no policy rule chose ({@link #rule()} is {@value #NO_RULE}).
   *
   * @param index the task's position in its batch
   * @param state where the task stands
   * @param bytes bytes confirmed
   * @param errorKind why it failed, or {@code null}
   * @param remoteEffect what is known about the peer's bytes
   * @param locallyDrained whether no worker can still touch the task's local memory
   * @param detail a human-readable explanation of a failure; empty on success
   * @param elapsedNanos from admission to the receipt that made the task terminal
   * @param transport the transport the task was handed to, or {@code null}
   * @param route why it ran on {@code transport}
   * @param attempts how many transports the task was handed to
   */
  public TaskResult(
      int index,
      TaskState state,
      long bytes,
      ErrorKind errorKind,
      RemoteEffect remoteEffect,
      boolean locallyDrained,
      String detail,
      long elapsedNanos,
      Transport transport,
      Route route,
      int attempts) {
    this(
        index,
        state,
        bytes,
        errorKind,
        remoteEffect,
        locallyDrained,
        detail,
        elapsedNanos,
        transport,
        route,
        attempts,
        NO_RULE);
  }

  /**
   * Checks the components.
   *
   * @throws NullPointerException if {@code route} is null (a task never dispatched says {@link
   *     Route#NOT_DISPATCHED})
   * @throws IllegalArgumentException if {@code attempts} is negative, or {@code rule} is below
   *     {@value #NO_RULE}
   */
  public TaskResult {
    if (route == null) {
      throw new NullPointerException(
          "TaskResult.route of task "
              + index
              + " is null; a task never dispatched is NOT_DISPATCHED");
    }
    if (attempts < 0) {
      throw new IllegalArgumentException(
          "TaskResult.attempts of task " + index + " is " + attempts + "; at least 0");
    }
    if (rule < NO_RULE) {
      throw new IllegalArgumentException(
          "TaskResult.rule of task " + index + " is " + rule + "; at least " + NO_RULE);
    }
  }

  /**
   * Whether the task completed: every slice was confirmed (C4).
   *
   * @return true when {@code state} is COMPLETED
   */
  public boolean completed() {
    return state == TaskState.COMPLETED;
  }
}
