package io.orbite.observability;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import kamon.Kamon;
import kamon.prometheus.PrometheusReporter;

/**
 * Kamon is one registry per JVM: it is initialised once (without the Kanela agent, with the tick
 * interval of the first engine that serves metrics), and its Prometheus reporter is kept here so
 * that each engine's scrape endpoint can read the latest scrape. Kamon's own embedded HTTP server is
 * never started; the engines serve {@code /metrics} themselves, bounded.
 */
final class KamonRuntime {
  private static PrometheusReporter reporter;
  private static long tickMillis;

  private KamonRuntime() {}

  /** Initialises Kamon once; later calls keep the first tick interval. */
  static synchronized void ensureStarted(long tick) {
    if (reporter != null) {
      return;
    }
    Config overrides = ConfigFactory.parseString(String.join("\n",
        "kamon.metric.tick-interval = " + tick + " ms",
        "kamon.init.hide-banner = true",
        "kamon.prometheus.start-embedded-http-server = no",
        "kamon.modules.prometheus-reporter.enabled = false",
        // Task latencies: 10 us .. 30 s, in seconds.
        "kamon.prometheus.buckets.custom { \"orbite_task_latency\" = "
            + "[0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30] }"));
    Kamon.initWithoutAttaching(overrides.withFallback(ConfigFactory.load()));
    PrometheusReporter created = new PrometheusReporter(PrometheusReporter.DefaultConfigPath(), Kamon.config());
    Kamon.addReporter("orbite-prometheus", created);
    reporter = created;
    tickMillis = tick;
  }

  /** The Prometheus text of the last tick (empty before the first). */
  static synchronized String scrape() {
    return reporter == null ? "" : reporter.scrapeData();
  }

  /** The tick interval Kamon runs with (the first engine's {@code observability.tickMillis}). */
  static synchronized long tickMillis() {
    return tickMillis;
  }
}
