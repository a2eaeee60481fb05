package io.orbite.observability;

import io.orbite.config.ObservabilityConfig;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.ObservabilityProvider;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Starts an engine's metrics (Kamon, sampled every {@code observability.tickMillis}), its
 * Prometheus endpoint and its dashboard, each only when enabled, on the engine's own ActorSystem.
 * Registered as an {@link ObservabilityProvider} service.
 */
public final class ObservabilityService implements ObservabilityProvider {
  @Override
  public Served start(TransferEngine engine, EngineTally tally) {
    ObservabilityConfig oc = engine.config().observability();
    ActorSystem<?> system = engine.system();
    KamonRuntime.acquire(oc.tickMillis());
    ThroughputHistory history = new ThroughputHistory();
    EngineMetrics metrics = new EngineMetrics(engine, tally, history, oc.tickMillis());
    Cancellable sampler =
        system
            .scheduler()
            .scheduleAtFixedRate(
                Duration.ZERO,
                Duration.ofMillis(oc.tickMillis()),
                metrics::sample,
                system.executionContext());
    Routes routes =
        new Routes(
            new DashboardModel(engine, tally, metrics, history, oc.tickMillis()), oc.tickMillis());
    HttpEndpoint metricsEndpoint = null;
    HttpEndpoint dashboardEndpoint = null;
    try {
      if (oc.metrics().enabled()) {
        metricsEndpoint =
            HttpEndpoint.bind(
                system,
                "observability.metrics",
                oc.metrics().host(),
                oc.metrics().port(),
                routes.metrics(),
                "/metrics");
      }
      if (oc.dashboard().enabled()) {
        dashboardEndpoint =
            HttpEndpoint.bind(
                system,
                "observability.dashboard",
                oc.dashboard().host(),
                oc.dashboard().port(),
                routes.dashboard(),
                "/");
      }
    } catch (RuntimeException e) {
      if (metricsEndpoint != null) {
        metricsEndpoint.close();
      }
      sampler.cancel();
      metrics.close();
      KamonRuntime.release();
      throw e;
    }
    return new Started(sampler, metrics, metricsEndpoint, dashboardEndpoint);
  }

  private static final class Started implements Served {
    private final Cancellable sampler;
    private final EngineMetrics metrics;
    private final HttpEndpoint metricsEndpoint;
    private final HttpEndpoint dashboardEndpoint;
    private final Map<String, String> urls = new LinkedHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean released =
        new java.util.concurrent.atomic.AtomicBoolean();

    Started(
        Cancellable sampler,
        EngineMetrics metrics,
        HttpEndpoint metricsEndpoint,
        HttpEndpoint dashboardEndpoint) {
      this.sampler = sampler;
      this.metrics = metrics;
      this.metricsEndpoint = metricsEndpoint;
      this.dashboardEndpoint = dashboardEndpoint;
      if (dashboardEndpoint != null) {
        urls.put("dashboard", dashboardEndpoint.url());
      }
      if (metricsEndpoint != null) {
        urls.put("metrics", metricsEndpoint.url());
      }
    }

    @Override
    public Map<String, String> urls() {
      return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(urls));
    }

    @Override
    public void close() {
      if (dashboardEndpoint != null) {
        dashboardEndpoint.close();
      }
      if (metricsEndpoint != null) {
        metricsEndpoint.close();
      }
      sampler.cancel();
      metrics.close();
      if (released.compareAndSet(false, true)) {
        KamonRuntime.release();
      }
    }
  }
}
