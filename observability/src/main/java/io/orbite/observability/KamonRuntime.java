package io.orbite.observability;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import kamon.Kamon;
import kamon.prometheus.PrometheusReporter;

/**
 * Kamon is one registry per JVM: it is initialised once (without the Kanela agent and without its
 * start-up status line, with the tick interval of the first engine that serves metrics), and its
 * Prometheus reporter is kept here so that each engine's scrape endpoint can read the latest
 * scrape. Kamon's own embedded HTTP server is never started; the engines serve {@code /metrics}
 * themselves, bounded.
 *
 * <p>The reporter runs on a non-daemon thread Kamon names after it ({@code orbite-prometheus}), so
 * it is counted: every engine that serves metrics {@link #acquire acquires} it and {@link #release
 * releases} it when it closes, and the last release removes the reporter and ends that thread. A
 * JVM whose engines have all closed can then exit.
 */
final class KamonRuntime {
  private static boolean initialised;
  private static PrometheusReporter reporter;
  private static kamon.module.Module.Registration registration;
  private static int users;
  private static long tickMillis;

  private KamonRuntime() {}

  /**
   * Initialises Kamon once (later calls keep the first tick interval) and adds the Prometheus
   * reporter if no engine holds it; each call must be matched by one {@link #release()}.
   */
  static synchronized void acquire(long tick) {
    users++;
    if (reporter != null) {
      return;
    }
    if (!initialised) {
      init(tick);
    }
    PrometheusReporter created =
        new PrometheusReporter(PrometheusReporter.DefaultConfigPath(), Kamon.config());
    registration = Kamon.addReporter("orbite-prometheus", created);
    reporter = created;
  }

  /** Undoes one {@link #acquire}; the last one removes the reporter (its thread ends). */
  static synchronized void release() {
    if (users == 0) {
      return;
    }
    users--;
    if (users == 0 && registration != null) {
      registration.cancel();
      registration = null;
      reporter = null;
    }
  }

  /** How many engines hold the reporter now. */
  static synchronized int users() {
    return users;
  }

  private static void init(long tick) {
    Config overrides =
        ConfigFactory.parseString(
            String.join(
                "\n",
                "kamon.metric.tick-interval = " + tick + " ms",
                "kamon.prometheus.start-embedded-http-server = no",
                "kamon.modules.prometheus-reporter.enabled = false",
                // Task latencies: 10 us .. 30 s, in seconds.
                "kamon.prometheus.buckets.custom { \"orbite_task_latency\" = "
                    + "[0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30] }"));
    // What Kamon.initWithoutAttaching does, less its last step: that one logs, at INFO on
    // kamon.Init, "Initializing Kamon Telemetry v... / Kanela" and an ANSI-red "not found" (this
    // engine never attaches the Kanela agent), on whatever console the application logs to. No
    // configuration key turns it off (kamon.init.hide-banner only shortens it). Skipped too: the
    // scheduler Kamon binds to auto-updated instruments and spans; no orbite metric uses either.
    Kamon.reconfigure(overrides.withFallback(ConfigFactory.load()));
    Kamon.loadModules();
    // Starts the ticker that hands each tick's snapshot to the reporters (the Prometheus one).
    kamon.Kamon$.MODULE$.moduleRegistry().init();
    initialised = true;
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
