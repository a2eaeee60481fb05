package io.orbite.config;

/**
 * The supervisor dashboard: a read-only web page and its JSON API. JSON section {@code observability.dashboard}.
 *
 * @param enabled whether the endpoint is served. Default {@value #DEFAULT_ENABLED}: off.
 * @param host    interface address to bind. Default {@value #DEFAULT_HOST} (loopback only); 1..
 *                {@value ListenConfig#MAX_HOST_LENGTH} characters, no whitespace or control characters.
 * @param port    TCP port to bind. Default {@value #DEFAULT_PORT}; range {@value #MIN_PORT}..{@value #MAX_PORT};
 *                {@code 0} asks the operating system for an ephemeral port.
 */
public record DashboardConfig(boolean enabled, String host, int port) {
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
    static final String SECTION = "observability.dashboard";

    /** Validates every component. @throws ConfigException naming {@code observability.dashboard.<key>} */
    public DashboardConfig {
        Checks.requireHost(SECTION + ".host", host);
        Checks.requireRange(SECTION + ".port", port, MIN_PORT, MAX_PORT);
    }

    /** All components at their defaults (off, loopback, ephemeral port). */
    public static DashboardConfig defaults() {
        return new DashboardConfig(DEFAULT_ENABLED, DEFAULT_HOST, DEFAULT_PORT);
    }

    /** Enabled on loopback at {@code port} (0: ephemeral). */
    public static DashboardConfig loopback(int port) {
        return new DashboardConfig(true, DEFAULT_HOST, port);
    }

    /** A copy with {@link #enabled()} replaced. */
    public DashboardConfig withEnabled(boolean enabled) {
        return new DashboardConfig(enabled, host, port);
    }

    /** A copy with {@link #host()} replaced. */
    public DashboardConfig withHost(String host) {
        return new DashboardConfig(enabled, host, port);
    }

    /** A copy with {@link #port()} replaced. */
    public DashboardConfig withPort(int port) {
        return new DashboardConfig(enabled, host, port);
    }

    static DashboardConfig read(ConfigReader r) {
        return new DashboardConfig(
                r.booleanValue("enabled", DEFAULT_ENABLED),
                r.stringValue("host", DEFAULT_HOST),
                r.intValue("port", DEFAULT_PORT, MIN_PORT, MAX_PORT));
    }
}
