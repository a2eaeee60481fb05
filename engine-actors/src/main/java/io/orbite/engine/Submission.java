package io.orbite.engine;

import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.SubmissionState;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The tasks of one {@link Batch#submit}: batch indexes {@link #first()} to {@code first() + count()
 * - 1}, with an await, a completion and results of their own. Each call costs what these tasks
 * cost, however many tasks the batch holds, so one batch can serve a long run of submissions (layer
 * by layer: submit layer k+1, then await layer k) without the wait growing. Valid until the batch
 * is {@link Batch#reset() reset} or freed; then its calls fail INVALID_ARGUMENT. Thread-safe.
 */
public final class Submission {
  private final BatchCore core;
  private final long lease;
  private final SubmissionState state;
  private final TransferEngine engine;

  Submission(BatchCore core, long lease, SubmissionState state, TransferEngine engine) {
    this.core = core;
    this.lease = lease;
    this.state = state;
    this.engine = engine;
  }

  /**
   * The batch index of the submission's first task.
   *
   * @return its first task's index
   */
  public int first() {
    return state.first();
  }

  /**
   * How many tasks the submission has.
   *
   * @return the number of requests it admitted
   */
  public int count() {
    return state.count();
  }

  /**
   * Waits up to {@code timeout} for every task of this submission to be terminal and its
   * notification, if one is attached, to be decided.
   *
   * @param timeout how long to wait
   * @return the status; {@link SubmissionStatus#done()} is false if the timeout passed first
   * @throws TransferException INVALID_ARGUMENT if the batch was freed or reset since; UNAVAILABLE
   *     once the engine's close has been confirmed; CANCELLED if the waiting thread is interrupted
   */
  public SubmissionStatus await(Duration timeout) {
    refuseIfClosed("await");
    try {
      return core.await(lease, state, timeout.toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, "await interrupted");
    }
  }

  /**
   * Completes when this submission is done. The stage completes on the engine's dispatcher, never
   * on a transport's thread.
   *
   * @return a stage that completes with the status, or fails with a {@link TransferException}:
   *     INVALID_ARGUMENT if the batch was freed or reset since, UNAVAILABLE if the engine's close
   *     was confirmed before (or while) it waited
   */
  public CompletionStage<SubmissionStatus> completion() {
    TransferException closed = engine.calls.closedAfterClose("await");
    if (closed != null) {
      return CompletableFuture.failedFuture(closed);
    }
    CompletableFuture<SubmissionStatus> f = core.completion(lease, state);
    return f.isDone() ? f : engine.calls.untilClosed(f, "await");
  }

  /**
   * A snapshot of this submission's tasks and notification.
   *
   * @return its results, in submission order
   * @throws TransferException INVALID_ARGUMENT if the batch was freed or reset since; UNAVAILABLE
   *     once the engine's close has been confirmed
   */
  public SubmissionStatus status() {
    refuseIfClosed("status");
    return core.status(lease, state);
  }

  private void refuseIfClosed(String call) {
    TransferException closed = engine.calls.closedAfterClose(call);
    if (closed != null) {
      throw closed;
    }
  }

  @Override
  public String toString() {
    return "Submission[tasks " + first() + ".." + (first() + count() - 1) + "]";
  }
}
