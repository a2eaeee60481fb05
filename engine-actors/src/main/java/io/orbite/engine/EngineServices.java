package io.orbite.engine;

import io.orbite.engine.spi.ObservabilityProvider;
import java.time.Duration;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an engine adds to the system it runs in, beside its actors: a CoordinatedShutdown task that
 * closes it when the system shuts down, and the metrics and dashboard endpoints its configuration
 * enables. Both are started by {@link TransferEngine#start}/{@link TransferEngine#spawn} and ended
 * by the engine's close ({@link #close}).
 */
final class EngineServices {
  /** The facade's logger: operators find the engine's lifecycle under one name. */
  private static final Logger LOG = LoggerFactory.getLogger(TransferEngine.class);

  private final TransferEngine engine;
  private final String identity;
  private volatile Cancellable shutdownTask;
  private volatile ObservabilityProvider.Served served;

  EngineServices(TransferEngine engine, String identity) {
    this.engine = engine;
    this.identity = identity;
  }

  /** The endpoints' URLs by name; empty when none is served. */
  java.util.Map<String, String> urls() {
    var s = served;
    return s == null ? java.util.Map.of() : s.urls();
  }

  /** Adds the engine's close to its system's CoordinatedShutdown (phase service-requests-done). */
  void joinCoordinatedShutdown() {
    String phase = CoordinatedShutdown.PhaseServiceRequestsDone();
    String taskName =
        "orbite-close-"
            + engine.config().name()
            + "-"
            + Long.toHexString(engine.localSegment().epoch());
    try {
      CoordinatedShutdown cs = CoordinatedShutdown.get(Adapter.toClassic(engine.system()));
      shutdownTask = cs.addCancellableTask(phase, taskName, () -> closeFor(cs, phase));
    } catch (RuntimeException e) {
      // The system is already shutting down (or has no such phase): the engine still works and
      // closes with close(); nothing runs it at system shutdown.
      LOG.warn(
          "engine {}: could not join CoordinatedShutdown ({}): {}",
          identity,
          taskName,
          e.toString());
    }
  }

  /**
   * The CoordinatedShutdown task: close within the engine's destruction window capped by the phase
   * timeout; if the close is not confirmed in time, log at ERROR what the engine still owes. Always
   * completes with Done, so the system's shutdown never waits on the engine beyond that.
   */
  private CompletionStage<Done> closeFor(CoordinatedShutdown cs, String phase) {
    try {
      long phaseMillis = Math.max(1, cs.timeout(phase).toMillis());
      long closeMillis =
          Math.max(
              1,
              Math.min(engine.config().timeouts().destructionWindowMillis(), phaseMillis * 8 / 10));
      String reason = cs.getShutdownReason().map(Object::toString).orElse("no reason given");
      EngineOwed before = engine.owed();
      if (before.phase() == EngineOwed.Phase.RUNNING) {
        if (before.isIdle()) {
          LOG.info("CoordinatedShutdown ({}) is closing an engine: {}", reason, before);
        } else {
          LOG.warn(
              "CoordinatedShutdown ({}) is closing an engine with work outstanding: {}",
              reason,
              before);
        }
      }
      return engine
          .shutdown()
          .copy()
          .orTimeout(closeMillis, TimeUnit.MILLISECONDS)
          .handle(
              (ok, failure) -> {
                if (failure == null) {
                  // What the close left behind (nothing, for a clean close): the one line that
                  // shows an engine was closed, not merely stopped with its process.
                  LOG.info(
                      "engine {}: closed by CoordinatedShutdown ({}); owed after the close: {}",
                      identity,
                      reason,
                      engine.owed());
                } else {
                  Throwable cause = CallGate.unwrap(failure);
                  LOG.error(
                      "CoordinatedShutdown phase {} ({}) goes on without engine {}: {}; what it"
                          + " still owes: {}",
                      phase,
                      reason,
                      identity,
                      cause instanceof TimeoutException
                          ? "its close was not confirmed within " + closeMillis + " ms"
                          : "its close failed: " + cause,
                      engine.owed());
                }
                return Done.getInstance();
              });
    } catch (RuntimeException e) {
      LOG.error("engine {}: CoordinatedShutdown task failed: {}", identity, e.toString(), e);
      return CompletableFuture.completedFuture(Done.getInstance());
    }
  }

  /**
   * Starts the endpoints {@code observability} enables, through the first {@link
   * ObservabilityProvider} on the class path. If none is there, or it cannot bind, the engine is
   * closed and the start fails naming why.
   */
  void serveObservability() {
    if (!engine.config().observability().anyEnabled()) {
      return;
    }
    try {
      ObservabilityProvider provider =
          ServiceLoader.load(ObservabilityProvider.class)
              .findFirst()
              .orElseThrow(
                  () ->
                      new TransferException(
                          ErrorKind.INVALID_ARGUMENT,
                          "observability is enabled in the configuration, but no observability"
                              + " provider is on the class path (orbite-observability missing?)"));
      served = provider.start(engine, engine.tally());
      served.urls().forEach((name, url) -> LOG.info("engine {}: {} at {}", identity, name, url));
    } catch (RuntimeException e) {
      try {
        engine.close(Duration.ofSeconds(30));
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e instanceof TransferException
          ? e
          : new TransferException(
              ErrorKind.INVALID_ARGUMENT, "observability could not start: " + e.getMessage());
    }
  }

  /** The engine is closing: stop the endpoints first. */
  void stopServing() {
    var s = served;
    served = null;
    if (s != null) {
      try {
        s.close();
      } catch (RuntimeException e) {
        LOG.warn(
            "engine {}: stopping the observability endpoints failed: {}", identity, e.toString());
      }
    }
  }

  /** The engine has closed: it leaves CoordinatedShutdown. */
  void close() {
    Cancellable task = shutdownTask;
    if (task != null) {
      task.cancel();
    }
  }
}
