package io.orbite.engine;

import io.orbite.engine.guardian.EngineLifecycle;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * What every call of the facade and of its batches checks first: whether a close has begun (then it
 * fails UNAVAILABLE at once, naming the engine and the call), and, for a stage that waits on an
 * actor with no timeout of its own, whether the close was confirmed before it ended. Holds the
 * engine's one close, shared by every closer.
 */
final class CallGate {
  private final String engine;
  private final EngineLifecycle lifecycle;

  /** The engine's close; null while running. */
  private final AtomicReference<CompletableFuture<Void>> close = new AtomicReference<>();

  /** Stages waiting on actors with no timeout of their own; failed if the engine closes first. */
  private final Set<CompletableFuture<?>> untilClosed = ConcurrentHashMap.newKeySet();

  CallGate(String engine, EngineLifecycle lifecycle) {
    this.engine = engine;
    this.lifecycle = lifecycle;
  }

  /** The close under way, or null while the engine runs. */
  CompletableFuture<Void> close() {
    return close.get();
  }

  /**
   * Marks the close begun with {@code mine}; false (and nothing changes) when one already began.
   * From here on {@link #closedError} refuses every call.
   */
  boolean beginClose(CompletableFuture<Void> mine) {
    if (!close.compareAndSet(null, mine)) {
      return false;
    }
    lifecycle.beginClose();
    return true;
  }

  /** The close is confirmed: whatever still waits on an actor will never be answered. */
  void closed() {
    List.copyOf(untilClosed).forEach(p -> p.completeExceptionally(closedError("completion")));
  }

  /**
   * UNAVAILABLE naming this engine once a close has begun ({@code "engine <name> closing"}) or has
   * been confirmed ({@code "engine <name> closed"}); null while the engine runs.
   */
  TransferException closedError(String call) {
    EngineOwed.Phase phase = lifecycle.phase();
    if (phase == EngineOwed.Phase.RUNNING && close.get() == null) {
      return null;
    }
    return new TransferException(
        ErrorKind.UNAVAILABLE,
        "engine "
            + engine
            + (phase == EngineOwed.Phase.CLOSED ? " closed" : " closing")
            + " ("
            + call
            + ")");
  }

  /**
   * {@link #closedError} once the close is confirmed; null while the engine runs or closes (a batch
   * still answers {@code await} and {@code status} then, so callers learn what happened).
   */
  TransferException closedAfterClose(String call) {
    return lifecycle.phase() == EngineOwed.Phase.CLOSED ? closedError(call) : null;
  }

  /** {@code stage}, failed with {@link #closedError} if the close is confirmed before it ends. */
  <T> CompletionStage<T> untilClosed(CompletionStage<T> stage, String call) {
    CompletableFuture<T> result = new CompletableFuture<>();
    untilClosed.add(result);
    stage.whenComplete(
        (value, failure) -> {
          if (failure == null) {
            result.complete(value);
          } else {
            result.completeExceptionally(unwrap(failure));
          }
        });
    result.whenComplete((value, failure) -> untilClosed.remove(result));
    if (lifecycle.phase() == EngineOwed.Phase.CLOSED) {
      result.completeExceptionally(closedError(call));
    }
    return result;
  }

  /**
   * Runs {@code body} unless a close has begun (then fails at once with {@link #closedError}); a
   * TransferException it throws fails the stage. A failure that arrives after a close began,
   * because an actor stopped under the call, is reported as the close, with the original as cause.
   */
  <T> CompletionStage<T> whileOpen(String call, Supplier<CompletionStage<T>> body) {
    TransferException refused = closedError(call);
    if (refused != null) {
      return CompletableFuture.failedFuture(refused);
    }
    CompletionStage<T> stage;
    try {
      stage = body.get();
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    return stage.exceptionallyCompose(
        failure -> {
          Throwable cause = unwrap(failure);
          TransferException closing = closedError(call);
          boolean own =
              cause instanceof TransferException te
                  && te.kind() != ErrorKind.UNAVAILABLE
                  && te.kind() != ErrorKind.TIMEOUT;
          if (closing != null && !own) {
            closing.initCause(cause);
            return CompletableFuture.failedFuture(closing);
          }
          return CompletableFuture.failedFuture(cause);
        });
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
