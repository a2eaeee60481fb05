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
  /** Set by the first free that the batch accepts; later calls answer at once. */
  private final AtomicBoolean freed = new AtomicBoolean();

  Batch(ActorRef<BatchActor.Command> actor, Scheduler scheduler, int capacity) {
    this.actor = actor;
    this.scheduler = scheduler;
    this.capacity = capacity;
  }

  public int capacity() {
    return capacity;
  }

  /**
   * Validates, admits and dispatches {@code requests}. Throws {@link TransferException} if any
   * request is invalid or a budget is exhausted; then nothing was submitted.
   *
   * @return the task index of the first request
   */
  public int submit(List<TransferRequest> requests) {
    return join(submitAsync(requests), CONTROL_TIMEOUT, "submit");
  }

  public CompletionStage<Integer> submitAsync(List<TransferRequest> requests) {
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
    return AskPattern.<BatchActor.Command, BatchActor.SubmitReply>ask(
            actor, replyTo -> new BatchActor.Submit(copy, total, replyTo), CONTROL_TIMEOUT, scheduler)
        .thenApply(reply -> switch (reply) {
          case BatchActor.Accepted a -> a.firstIndex();
          case BatchActor.Refused r -> throw new TransferException(r.kind(), r.detail());
        });
  }

  /**
   * Waits up to {@code timeout} for every submitted task to be terminal.
   *
   * @return the status; {@link BatchStatus#done()} is false if the timeout passed first
   */
  public BatchStatus await(Duration timeout) {
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

  /** Completes when every task submitted so far is terminal. */
  public CompletionStage<BatchStatus> completion() {
    if (freed.get()) {
      return CompletableFuture.failedFuture(freedError("completion"));
    }
    return AskPattern.ask(actor, BatchActor.AwaitIdle::new, FOREVER, scheduler);
  }

  /** A snapshot of every task's state. */
  public BatchStatus status() {
    if (freed.get()) {
      throw freedError("status");
    }
    return join(AskPattern.ask(actor, BatchActor.GetStatus::new, CONTROL_TIMEOUT, scheduler), CONTROL_TIMEOUT, "status");
  }

  /** Frames not yet sent fail CANCELLED; frames in flight finish and are reported. */
  public void cancel() {
    actor.tell(BatchActor.Cancel.INSTANCE);
  }

  /** Releases the batch; throws BATCH_BUSY while a task may still touch memory. */
  public void free() {
    join(freeAsync(), CONTROL_TIMEOUT, "free");
  }

  public CompletionStage<Void> freeAsync() {
    if (!freed.compareAndSet(false, true)) {
      return CompletableFuture.failedFuture(freedError("free"));
    }
    return AskPattern.<BatchActor.Command, BatchActor.SubmitReply>ask(actor, BatchActor.Free::new, CONTROL_TIMEOUT, scheduler)
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
      throw new TransferException(ErrorKind.UNAVAILABLE, what + ": " + cause, cause);
    } catch (TimeoutException e) {
      throw new TransferException(ErrorKind.TIMEOUT, what + ": no answer within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, what + ": interrupted");
    }
  }
}
