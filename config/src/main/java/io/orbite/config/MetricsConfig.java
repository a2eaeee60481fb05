package io.orbite.config;

/**
 * The Prometheus scrape endpoint ({@code GET /metrics}). JSON section {@code
 * observability.metrics}.
 *
 * @param enabled whether the endpoint is served. Default {@value #DEFAULT_ENABLED}: off.
 * @param host interface address to bind. Default {@value #DEFAULT_HOST} (loopback only); 1..
 *     {@value ListenConfig#MAX_HOST_LENGTH} characters, no whitespace or control characters.
 * @param port TCP port to bind. Default {@value #DEFAULT_PORT}; range {@value #MIN_PORT}..{@value
 *     #MAX_PORT}; {@code 0} asks the operating system for an ephemeral port.
 */
public record MetricsConfig(boolean enabled, String host, int port) {
  /** Default {@link #enabled()}. */
  public static final boolean DEFAULT_ENABLED = false;

  /** Default {@link #host()}: loopback only. */
  public static final String DEFAULT_HOST = "127.0.0.1";

  /** Default {@link #port()}: an ephemeral port. */
  public static final int DEFAULT_PORT = 0;

  /** Smallest accepted {@link #port()}. */
  public static final int MIN_PORT = 0;

  /** Largest accepted {@link #port()}. */
  public static final int MAX_PORT = 65535;

  /** JSON path of this section, and the path prefix of its messages. */
  static final String SECTION = "observability.metrics";

  /**
   * Validates {@link #host()} and {@link #port()}; any {@link #enabled()} is accepted.
   *
   * @throws ConfigException naming {@code observability.metrics.host} or {@code
   *     observability.metrics.port} for the first invalid one
   */
  public MetricsConfig {
    Checks.requireHost(SECTION + ".host", host);
    Checks.requireRange(SECTION + ".port", port, MIN_PORT, MAX_PORT);
  }

  /**
   * All components at their defaults (off, loopback, ephemeral port).
   *
   * @return the scrape endpoint settings an absent or empty {@code observability.metrics} section
   *     reads as: not served, and bound to {@value #DEFAULT_HOST} on an ephemeral port once enabled
   */
  public static MetricsConfig defaults() {
    return new MetricsConfig(DEFAULT_ENABLED, DEFAULT_HOST, DEFAULT_PORT);
  }

  /**
   * Enabled on loopback at {@code port} (0: ephemeral).
   *
   * @param port TCP port to bind on {@value #DEFAULT_HOST}, {@value #MIN_PORT}..{@value #MAX_PORT};
   *     {@code 0} asks the operating system for an ephemeral port
   * @return a configuration that serves the Prometheus scrape endpoint ({@code GET /metrics}) on
   *     {@value #DEFAULT_HOST} only
   * @throws ConfigException naming {@code observability.metrics.port} if {@code port} is outside
   *     {@value #MIN_PORT}..{@value #MAX_PORT}
   */
  public static MetricsConfig loopback(int port) {
    return new MetricsConfig(true, DEFAULT_HOST, port);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept; any value is accepted.
   *
   * @param enabled whether the Prometheus scrape endpoint ({@code GET /metrics}) is served; {@code
   *     false} binds nothing
   * @return a new {@code MetricsConfig}; this one is unchanged
   */
  public MetricsConfig withEnabled(boolean enabled) {
    return new MetricsConfig(enabled, host, port);
  }

  /**
   * A copy with {@link #host()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param host interface address or host name the scrape endpoint binds
   * @return a new {@code MetricsConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability.metrics.host} if it is {@code null}, empty,
   *     longer than {@value ListenConfig#MAX_HOST_LENGTH} characters, or contains whitespace or
   *     control characters
   */
  public MetricsConfig withHost(String host) {
    return new MetricsConfig(enabled, host, port);
  }

  /**
   * A copy with {@link #port()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param port TCP port the scrape endpoint binds; {@code 0} asks the operating system for an
   *     ephemeral port
   * @return a new {@code MetricsConfig}; this one is unchanged
   * @throws ConfigException naming {@code observability.metrics.port} if it is outside {@value
   *     #MIN_PORT}..{@value #MAX_PORT}
   */
  public MetricsConfig withPort(int port) {
    return new MetricsConfig(enabled, host, port);
  }

  static MetricsConfig read(ConfigReader r) {
    return new MetricsConfig(
        r.booleanValue("enabled", DEFAULT_ENABLED),
        r.stringValue("host", DEFAULT_HOST),
        r.intValue("port", DEFAULT_PORT, MIN_PORT, MAX_PORT));
  }
}
