package io.orbite.engine;

import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.RequestValidator;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * A group of tasks submitted, awaited and freed together; the handle of one BatchActor. Every
 * blocking method has a CompletionStage form. Thread-safe.
 */
public final class Batch {
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration FOREVER = Duration.ofDays(200); // the scheduler caps delays at ~248 days

  private final ActorRef<BatchActor.Command> actor;
  private final Scheduler scheduler;
  private final int capacity;
  /** The engine that made this batch: once it has closed, every call fails UNAVAILABLE naming it. */
  private final TransferEngine engine;
  /** The engine's budgets, charged by {@link #submit} on the caller's thread. */
  private final io.orbite.engine.admission.AdmissionGate gate;
  /**
   * Held while a submission reserves its task indexes, charges the budgets and sends its Dispatch,
   * and while {@code free} sends Free: so Dispatches reach the actor in index order, and none after
   * a Free.
   */
  private final Object submitting = new Object();
  /** Task indexes handed out so far. Guarded by {@link #submitting}. */
  private int reserved;
  /** Set by the first free that the batch accepts; later calls answer at once. */
  private final AtomicBoolean freed = new AtomicBoolean();

  Batch(ActorRef<BatchActor.Command> actor, Scheduler scheduler, int capacity, TransferEngine engine,
      io.orbite.engine.admission.AdmissionGate gate) {
    this.engine = engine;
    this.gate = gate;
    this.actor = actor;
    this.scheduler = scheduler;
    this.capacity = capacity;
  }

  /**
   * How many tasks this batch can hold in all (the {@code allocateBatch} argument). Still answers
   * after the engine closed.
   *
   * @return the capacity in tasks
   */
  public int capacity() {
    return capacity;
  }

  /**
   * Validates, admits and dispatches {@code requests}: all of them or none.
   *
   * @param requests the transfers to start, at most {@link #capacity()} over the batch's life
   * @return the task index of the first request
   * @throws TransferException nothing was submitted, and {@link TransferException#kind()} says why:
   *     INVALID_ARGUMENT for a malformed request (the message names it: bad offset or length, a range
   *     past its region, an unknown or closed segment or region, a freed batch); PERMISSION_DENIED
   *     when a region does not grant the direction; RESOURCE_EXHAUSTED when the batch's capacity or
   *     a budget (tasks, bytes in flight) would be exceeded; UNAVAILABLE when the engine or its
   *     requester side is closing or closed
   */
  public int submit(List<TransferRequest> requests) {
    return join(submitAsync(requests), CONTROL_TIMEOUT, "submit");
  }

  /**
   * {@link #submit} without blocking; the stage fails with the same {@link TransferException}s.
   *
   * @param requests the transfers to start, at most {@link #capacity()} over the batch's life
   * @return a stage that completes with the task index of the first request
   */
  public CompletionStage<Integer> submitAsync(List<TransferRequest> requests) {
    TransferException closed = engine.closedError("submit");
    if (closed != null) {
      return CompletableFuture.failedFuture(closed);
    }
    if (freed.get()) {
      return CompletableFuture.failedFuture(freedError("submit"));
    }
    long total;
    try {
      total = RequestValidator.validate(requests);
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    List<TransferRequest> copy = List.copyOf(requests);
    // On the caller's thread, no ask: reserve the indexes, charge the budgets, hand the work to
    // the batch actor, which dispatches it. A refusal here has had no side effect.
    synchronized (submitting) {
      if (freed.get()) {
        return CompletableFuture.failedFuture(freedError("submit"));
      }
      int n = copy.size();
      if (n > capacity - reserved) {
        return CompletableFuture.failedFuture(new TransferException(ErrorKind.RESOURCE_EXHAUSTED, "batch capacity "
            + capacity + ": " + reserved + " tasks submitted, " + n + " more do not fit"));
      }
      io.orbite.engine.admission.Admission.Decision decision = gate.tryTasks(n, total);
      if (!decision.granted()) {
        return CompletableFuture.failedFuture(new TransferException(
            decision.fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED, decision.refusal()));
      }
      int first = reserved;
      reserved += n;
      actor.tell(new BatchActor.Dispatch(copy, total, first));
      return CompletableFuture.completedFuture(first);
    }
  }

  /**
   * Waits up to {@code timeout} for every submitted task to be terminal.
   *
   * @param timeout how long to wait; if it passes first, the status is read once more
   * @return the status; {@link BatchStatus#done()} is false if the timeout passed first
   * @throws TransferException INVALID_ARGUMENT if the batch was freed; UNAVAILABLE once the engine's
   *     close has been confirmed ({@code "engine <name> closed (await)"}); CANCELLED if the waiting
   *     thread is interrupted; or what {@link #status()} throws when the timeout passed
   */
  public BatchStatus await(Duration timeout) {
    refuseIfClosed("await");
    if (freed.get()) {
      throw freedError("await");
    }
    try {
      return AskPattern.<BatchActor.Command, BatchStatus>ask(actor, BatchActor.AwaitIdle::new, timeout, scheduler)
          .toCompletableFuture().get(timeout.toNanos() + TimeUnit.SECONDS.toNanos(1), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      return status();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, "await interrupted");
    }
  }

  /**
   * Completes when every task submitted so far is terminal.
   *
   * @return a stage that completes with the status, or fails with a {@link TransferException}:
   *     INVALID_ARGUMENT if the batch was freed, UNAVAILABLE if the engine's close was confirmed before
   *     (or while) it waited
   */
  public CompletionStage<BatchStatus> completion() {
    TransferException closed = engine.closedAfterClose("completion");
    if (closed != null) {
      return CompletableFuture.failedFuture(closed);
    }
    if (freed.get()) {
      return CompletableFuture.failedFuture(freedError("completion"));
    }
    // If the engine closes first, the batch actor stops without answering: the engine fails this.
    return engine.untilClosed(AskPattern.ask(actor, BatchActor.AwaitIdle::new, FOREVER, scheduler), "completion");
  }

  /**
   * A snapshot of every task's state.
   *
   * @return one result per submitted task, in submission order, and whether all are terminal
   * @throws TransferException INVALID_ARGUMENT if the batch was freed; UNAVAILABLE once the engine's
   *     close has been confirmed; TIMEOUT if the batch does not answer within 30 s
   */
  public BatchStatus status() {
    refuseIfClosed("status");
    if (freed.get()) {
      throw freedError("status");
    }
    return join(AskPattern.ask(actor, BatchActor.GetStatus::new, CONTROL_TIMEOUT, scheduler), CONTROL_TIMEOUT, "status");
  }

  /**
   * Frames not yet sent fail CANCELLED; frames in flight finish and are reported.
   *
   * @throws TransferException UNAVAILABLE once the engine's close has been confirmed
   */
  public void cancel() {
    refuseIfClosed("cancel");
    actor.tell(BatchActor.Cancel.INSTANCE);
  }

  /**
   * Releases the batch; throws BATCH_BUSY while a task may still touch memory.
   *
   * @throws TransferException BATCH_BUSY while a task is pending or the batch is quarantined (it stays
   *     usable and can be freed later); INVALID_ARGUMENT if it was already freed; UNAVAILABLE once the
   *     engine's close has been confirmed, or if the batch does not answer
   */
  public void free() {
    join(freeAsync(), CONTROL_TIMEOUT, "free");
  }

  /**
   * {@link #free} without blocking.
   *
   * @return a stage that completes once the batch is released; it fails with the same
   *     {@link TransferException}s as {@link #free}
   */
  public CompletionStage<Void> freeAsync() {
    TransferException closed = engine.closedAfterClose("free");
    if (closed != null) {
      return CompletableFuture.failedFuture(closed);
    }
    CompletionStage<BatchActor.SubmitReply> asked;
    synchronized (submitting) {
      if (!freed.compareAndSet(false, true)) {
        return CompletableFuture.failedFuture(freedError("free"));
      }
      // Sent under the lock: every Dispatch of an earlier submit is ahead of it in the mailbox.
      asked = AskPattern.ask(actor, BatchActor.Free::new, CONTROL_TIMEOUT, scheduler);
    }
    return asked
        .handle((reply, failure) -> {
          if (failure != null) {
            freed.set(false);
            throw new TransferException(ErrorKind.UNAVAILABLE, "free: the batch did not answer: " + failure, failure);
          }
          if (reply instanceof BatchActor.Refused r) {
            // Still busy: the batch stays usable and can be freed later.
            freed.set(false);
            throw new TransferException(r.kind(), r.detail());
          }
          return null;
        });
  }

  private void refuseIfClosed(String call) {
    TransferException closed = engine.closedAfterClose(call);
    if (closed != null) {
      throw closed;
    }
  }

  private static TransferException freedError(String what) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, what + ": the batch was already freed");
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
      throw new TransferException(ErrorKind.UNAVAILABLE, what + ": " + TransferException.describe(cause), cause);
    } catch (TimeoutException e) {
      throw new TransferException(ErrorKind.TIMEOUT, what + ": no answer within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, what + ": interrupted");
    }
  }
}
