package io.orbite.engine;

import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.guardian.EngineLifecycle;
import io.orbite.engine.spi.SharedMemory;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * The engine's close, run once however many callers ask (the facade's {@code close}, the
 * CoordinatedShutdown task, a failed start): the close gate is shut, the batch pool, the
 * notification links and inbox, and the observability endpoints stop, and the guardian fences
 * admission, stops serving, the transports and the owners, and confirms once the Registry has
 * stopped. Then the incarnation's shared-memory lock is withdrawn, so same-host peers see it ended,
 * and an engine that owns its actor system terminates it.
 */
final class EngineClose {
  private final CallGate calls;
  private final EngineLifecycle lifecycle;
  private final BatchAllocator batches;
  private final EngineServices services;
  private final ActorSystem<?> system;
  private final boolean ownsSystem;
  private final ActorRef<EngineGuardian.Command> guardian;
  private final SharedMemory shared;
  private final EngineNotifications notifications;

  EngineClose(
      CallGate calls,
      EngineLifecycle lifecycle,
      BatchAllocator batches,
      EngineServices services,
      ActorSystem<?> system,
      boolean ownsSystem,
      ActorRef<EngineGuardian.Command> guardian,
      SharedMemory shared,
      EngineNotifications notifications) {
    this.calls = calls;
    this.lifecycle = lifecycle;
    this.batches = batches;
    this.services = services;
    this.system = system;
    this.ownsSystem = ownsSystem;
    this.guardian = guardian;
    this.shared = shared;
    this.notifications = notifications;
  }

  /**
   * Closes within {@code timeout}; then, for an engine that owns its system, terminates it. Fails
   * TIMEOUT when the guardian does not confirm in time. Answers what the engine still owes.
   */
  CompletionStage<EngineOwed> close(Duration timeout) {
    if (calls.close() != null) {
      return CompletableFuture.completedFuture(lifecycle.owed());
    }
    return shutdown()
        .copy()
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .exceptionallyCompose(
            failure ->
                CompletableFuture.failedFuture(
                    CallGate.unwrap(failure) instanceof TimeoutException
                        ? new TransferException(
                            ErrorKind.TIMEOUT,
                            "close: the engine did not confirm its close within " + timeout)
                        : CallGate.unwrap(failure)))
        .thenCompose(
            done -> {
              if (!ownsSystem) {
                return CompletableFuture.completedFuture(done);
              }
              system.terminate();
              return system.getWhenTerminated().thenApply(terminated -> done);
            })
        .thenApply(done -> lifecycle.owed());
  }

  /**
   * A directional close (C8), orchestrated by the guardian: REQUESTER waits for admitted work until
   * {@code timeout}, then closes the lanes; SOURCE stops serving peers. Answers what is still owed.
   */
  CompletionStage<EngineOwed> closeSide(EngineGuardian.Side side, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String call = side == EngineGuardian.Side.REQUESTER ? "closeRequester" : "closeSource";
    return calls.whileOpen(
        call,
        () ->
            AskPattern.<EngineGuardian.Command, EngineGuardian.SideClosed>ask(
                    guardian,
                    to ->
                        side == EngineGuardian.Side.REQUESTER
                            ? new EngineGuardian.CloseRequester(deadline, to)
                            : new EngineGuardian.CloseSource(to),
                    timeout.plus(CallTimeouts.CLOSE_LIMIT),
                    system.scheduler())
                .thenApply(
                    closed -> {
                      if (side == EngineGuardian.Side.REQUESTER) {
                        // Admitted work, and the notifications it sent, had their time: the
                        // notification links close with the lanes.
                        notifications.closeRequester();
                      }
                      return lifecycle.owed();
                    }));
  }

  /** The close itself, begun by the first caller; later callers get the same future. */
  CompletableFuture<Void> shutdown() {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    if (!calls.beginClose(mine)) {
      return calls.close();
    }
    batches.close();
    notifications.close();
    services.stopServing();
    CompletionStage<EngineGuardian.ShutdownDone> asked =
        system.whenTerminated().isCompleted()
            ? CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.UNAVAILABLE,
                    "the actor system " + system.name() + " has terminated without the close"))
            : AskPattern.ask(
                guardian,
                EngineGuardian.Shutdown::new,
                CallTimeouts.CLOSE_LIMIT,
                system.scheduler());
    asked.whenComplete(
        (done, failure) -> {
          if (failure != null) {
            mine.completeExceptionally(CallGate.unwrap(failure));
            return;
          }
          calls.closed();
          if (shared != null) {
            shared.close();
          }
          services.close();
          mine.complete(null);
        });
    return mine;
  }
}
