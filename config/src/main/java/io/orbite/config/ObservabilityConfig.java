package io.orbite.config;

/**
 * Metrics and the supervisor dashboard. JSON section {@code observability}. Both endpoints are off
 * by default and bind loopback when enabled; see docs/operations.md before exposing them.
 *
 * @param metrics the Prometheus scrape endpoint ({@code GET /metrics}). Default {@link
 *     MetricsConfig#defaults()}.
 * @param dashboard the dashboard page and its read-only JSON API. Default {@link
 *     DashboardConfig#defaults()}.
 * @param tickMillis how often metrics are sampled and published to the scrape endpoint, and how
 *     often the dashboard's live stream sends a snapshot. Default {@value #DEFAULT_TICK_MILLIS};
 *     range {@value #MIN_TICK_MILLIS}..{@value #MAX_TICK_MILLIS}.
 */
public record ObservabilityConfig(
    MetricsConfig metrics, DashboardConfig dashboard, int tickMillis) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "observability";

  /** Default {@link #tickMillis()}. */
  public static final int DEFAULT_TICK_MILLIS = 1000;

  /** Smallest accepted {@link #tickMillis()}. */
  public static final int MIN_TICK_MILLIS = 100;

  /** Largest accepted {@link #tickMillis()}. */
  public static final int MAX_TICK_MILLIS = 60000;

  /**
   * Validates every component; the nested sections validated themselves.
   *
   * @throws ConfigException naming {@code observability.metrics} or {@code observability.dashboard}
   *     if it is {@code null}, or {@code observability.tickMillis} if it is outside {@value
   *     #MIN_TICK_MILLIS}..{@value #MAX_TICK_MILLIS}
   */
  public ObservabilityConfig {
    Checks.requireNonNull(SECTION + ".metrics", metrics);
    Checks.requireNonNull(SECTION + ".dashboard", dashboard);
    Checks.requireRange(SECTION + ".tickMillis", tickMillis, MIN_TICK_MILLIS, MAX_TICK_MILLIS);
  }

  /**
   * All components at their defaults: nothing served.
   *
   * @return the settings an absent or empty {@code observability} section reads as: neither
   *     endpoint served, and a {@value #DEFAULT_TICK_MILLIS} ms tick
   */
  public static ObservabilityConfig defaults() {
    return new ObservabilityConfig(
        MetricsConfig.defaults(), DashboardConfig.defaults(), DEFAULT_TICK_MILLIS);
  }

  /**
   * Whether either endpoint is enabled.
   *
   * @return {@code true} if {@link MetricsConfig#enabled()} or {@link DashboardConfig#enabled()} is
   *     set, {@code false} if nothing is to be served
   */
  public boolean anyEnabled() {
    return metrics.enabled() || dashboard.enabled();
  }

  /**
   * A copy with {@link #metrics()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param metrics the Prometheus scrape endpoint settings, already validated by {@link
   *     MetricsConfig}'s constructor
   * @return a new {@code ObservabilityConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability.metrics} if {@code metrics} is {@code null}
   */
  public ObservabilityConfig withMetrics(MetricsConfig metrics) {
    return new ObservabilityConfig(metrics, dashboard, tickMillis);
  }

  /**
   * A copy with {@link #dashboard()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param dashboard the dashboard settings, already validated by {@link DashboardConfig}'s
   *     constructor
   * @return a new {@code ObservabilityConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability.dashboard} if {@code dashboard} is {@code
   *     null}
   */
  public ObservabilityConfig withDashboard(DashboardConfig dashboard) {
    return new ObservabilityConfig(metrics, dashboard, tickMillis);
  }

  /**
   * A copy with {@link #tickMillis()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param tickMillis how often metrics are sampled and published, and how often the dashboard's
   *     live stream sends a snapshot, in milliseconds
   * @return a new {@code ObservabilityConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability.tickMillis} if it is outside {@value
   *     #MIN_TICK_MILLIS}..{@value #MAX_TICK_MILLIS}
   */
  public ObservabilityConfig withTickMillis(int tickMillis) {
    return new ObservabilityConfig(metrics, dashboard, tickMillis);
  }

  static ObservabilityConfig read(ConfigReader r) {
    return new ObservabilityConfig(
        r.section("metrics", MetricsConfig.class, MetricsConfig::read),
        r.section("dashboard", DashboardConfig.class, DashboardConfig::read),
        r.intValue("tickMillis", DEFAULT_TICK_MILLIS, MIN_TICK_MILLIS, MAX_TICK_MILLIS));
  }
}
