package io.orbite.engine;

import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.RequestValidator;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A group of tasks submitted, awaited and freed together. Every call runs on the caller's thread
 * against the batch's shared ledger: none waits on an actor. Every blocking method has a
 * CompletionStage form. Thread-safe.
 */
public final class Batch {
  private final BatchCore core;

  /** This handle's allocation of the core; once freed, the core may serve another allocation. */
  private final long lease;

  /**
   * The engine that made this batch: once it has closed, every call fails UNAVAILABLE naming it.
   */
  private final TransferEngine engine;

  Batch(BatchCore core, long lease, TransferEngine engine) {
    this.core = core;
    this.lease = lease;
    this.engine = engine;
  }

  /**
   * How many tasks this batch can hold (the {@code allocateBatch} argument) until it is {@link
   * #reset}. Still answers after the engine closed.
   *
   * @return the capacity in tasks
   */
  public int capacity() {
    return core.capacity();
  }

  /**
   * Validates, admits and dispatches {@code requests}: all of them or none. Returns as soon as the
   * work is accepted; a small SHM copy may already have run, on this thread, when it returns.
   *
   * <p>The returned {@link Submission} waits for these tasks only: its {@code await}, {@code
   * completion} and {@code status} cost what its own tasks cost, however many tasks the batch
   * holds. That is the pattern for layer-by-layer transfers: submit layer k+1, then await layer k's
   * submission, on one batch; {@link #await} and {@link #status} of the whole batch read every task
   * and grow with it.
   *
   * <p>Adjacent tasks of one submission may be merged into one physical transfer (request merging,
   * {@code merge.enabled}); each task still gets its own result.
   *
   * @param requests the transfers to start; with those submitted since the last {@link #reset}, at
   *     most {@link #capacity()}
   * @return the submission: the index range of its tasks, with its own await and results
   * @throws TransferException nothing was submitted, and {@link TransferException#kind()} says why:
   *     INVALID_ARGUMENT for a malformed request (the message names it: bad offset or length, a
   *     range past its region, an unknown or closed segment or region, a freed batch);
   *     PERMISSION_DENIED when a region does not grant the direction; RESOURCE_EXHAUSTED when the
   *     batch's capacity or a budget (tasks, bytes in flight) would be exceeded; UNAVAILABLE when
   *     the engine or its requester side is closing or closed
   */
  public Submission submit(List<TransferRequest> requests) {
    return submit(requests, null, null);
  }

  /**
   * {@link #submit(List)}, with a notification for the peer: it is sent once every task of this
   * submission completed, so that it arrives only after every WRITE of it was applied at the peer
   * (C16), and it is never sent when a task failed. The submission is done when its notification is
   * decided; {@link SubmissionStatus#notification()} says whether the peer's inbox accepted it.
   *
   * @param requests the transfers to start, every one to the same remote segment
   * @param notification what the peer receives through its {@code Engine.notifications()}
   * @return the submission
   * @throws TransferException as {@link #submit(List)} does; INVALID_ARGUMENT when the requests go
   *     to more than one remote segment or to a file segment, or the notification exceeds a bound
   *     ({@code notifications.maxTagBytes}, {@code notifications.maxPayloadBytes})
   */
  public Submission submit(List<TransferRequest> requests, Notification notification) {
    if (notification == null) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "submit: the notification is null (use submit(requests))");
    }
    return submit(requests, notification, engine.notificationSender());
  }

  private Submission submit(
      List<TransferRequest> requests,
      Notification notification,
      io.orbite.engine.spi.NotificationSender sender) {
    long submitted = System.nanoTime();
    TransferException closed = engine.calls.closedError("submit");
    if (closed != null) {
      throw closed;
    }
    RequestValidator.Routed routed = RequestValidator.validate(requests, engine.selector);
    io.orbite.engine.spi.PeerSegment peer = null;
    if (notification != null) {
      peer = RequestValidator.notifiedPeer(requests);
      sender.check(notification);
    }
    // On the caller's thread, no ask: reserve the indexes, charge the budgets and take the loans
    // (a refusal has had no side effect), then hand the work to its lanes.
    BatchCore.Admitted admitted =
        core.admit(lease, List.copyOf(requests), routed, submitted, notification, peer, sender);
    core.dispatch(admitted);
    return new Submission(core, lease, admitted.submission(), engine);
  }

  /**
   * Waits up to {@code timeout} for every submitted task to be terminal.
   *
   * @param timeout how long to wait
   * @return the status; {@link BatchStatus#done()} is false if the timeout passed first
   * @throws TransferException INVALID_ARGUMENT if the batch was freed; UNAVAILABLE once the
   *     engine's close has been confirmed ({@code "engine <name> closed (await)"}); CANCELLED if
   *     the waiting thread is interrupted
   */
  public BatchStatus await(Duration timeout) {
    refuseIfClosed("await");
    try {
      return core.await(lease, timeout.toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, "await interrupted");
    }
  }

  /**
   * Completes when every task submitted so far is terminal. The stage completes on the engine's
   * dispatcher, never on a transport's thread.
   *
   * @return a stage that completes with the status, or fails with a {@link TransferException}:
   *     INVALID_ARGUMENT if the batch was freed, UNAVAILABLE if the engine's close was confirmed
   *     before (or while) it waited
   */
  public CompletionStage<BatchStatus> awaitAsync() {
    TransferException closed = engine.calls.closedAfterClose("await");
    if (closed != null) {
      return CompletableFuture.failedFuture(closed);
    }
    CompletableFuture<BatchStatus> f = core.completion(lease);
    return f.isDone() ? f : engine.calls.untilClosed(f, "await");
  }

  /**
   * A snapshot of every task's state.
   *
   * @return one result per task submitted since the last {@link #reset}, in submission order, and
   *     whether all are terminal
   * @throws TransferException INVALID_ARGUMENT if the batch was freed; UNAVAILABLE once the
   *     engine's close has been confirmed
   */
  public BatchStatus status() {
    refuseIfClosed("status");
    return core.status(lease);
  }

  /**
   * Frames not yet sent fail CANCELLED; frames in flight finish and are reported. Tasks submitted
   * after a {@link #reset} are not cancelled.
   *
   * @throws TransferException UNAVAILABLE once the engine's close has been confirmed
   */
  public void cancel() {
    refuseIfClosed("cancel");
    core.cancel(lease);
  }

  /**
   * Forgets every finished task, so that the batch's whole capacity can be submitted again; task
   * indexes start from 0 again. This is how one batch serves many transfers, one after another.
   *
   * @throws TransferException BATCH_BUSY while a task is pending or the batch is quarantined
   *     (nothing changes); INVALID_ARGUMENT if the batch was freed; UNAVAILABLE once the engine's
   *     close has been confirmed
   */
  public void reset() {
    refuseIfClosed("reset");
    core.reset(lease);
  }

  /**
   * Releases the batch; throws BATCH_BUSY while a task may still touch memory.
   *
   * @throws TransferException BATCH_BUSY while a task is pending or the batch is quarantined (it
   *     stays usable and can be freed later); INVALID_ARGUMENT if it was already freed; UNAVAILABLE
   *     once the engine's close has been confirmed
   */
  public void free() {
    refuseIfClosed("free");
    core.free(lease);
    engine.recycle(core);
  }

  private void refuseIfClosed(String call) {
    TransferException closed = engine.calls.closedAfterClose(call);
    if (closed != null) {
      throw closed;
    }
  }

  static <T> T join(CompletionStage<T> stage, Duration timeout, String what) {
    try {
      return stage.toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof java.util.concurrent.CompletionException ce && ce.getCause() != null) {
        cause = ce.getCause();
      }
      if (cause instanceof TransferException te) {
        throw te;
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE, what + ": " + TransferException.describe(cause), cause);
    } catch (TimeoutException e) {
      throw new TransferException(ErrorKind.TIMEOUT, what + ": no answer within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, what + ": interrupted");
    }
  }
}
