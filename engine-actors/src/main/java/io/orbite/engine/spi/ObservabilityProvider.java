package io.orbite.engine.spi;

import io.orbite.engine.TransferEngine;
import java.util.Map;

/**
 * Serves an engine's metrics and dashboard (config section {@code observability}). Found with
 * {@link java.util.ServiceLoader} when either endpoint is enabled, so that engine-actors needs no
 * HTTP or metrics library; the {@code orbite-observability} module provides one.
 */
public interface ObservabilityProvider {
  /**
   * Starts what {@code engine.config().observability()} enables, bound before it returns.
   *
   * @param engine the engine to serve
   * @param tally its counters' writers, where a provider adds its observers of ended tasks
   * @throws RuntimeException naming what could not be started (a port in use, a bad host)
   */
  Served start(TransferEngine engine, EngineTally tally);

  /** What a provider started for one engine. */
  interface Served extends AutoCloseable {
    /** The URLs served, by name ({@code "metrics"}, {@code "dashboard"}). */
    Map<String, String> urls();

    /** Unbinds and stops everything it started; waits at most a few seconds. */
    @Override
    void close();
  }
}
