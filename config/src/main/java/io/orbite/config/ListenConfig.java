package io.orbite.config;

/**
 * Where the engine accepts connections from peers. JSON section {@code listen}.
 *
 * @param host interface address or host name to bind. Default {@value #DEFAULT_HOST}; 1..{@value
 *     #MAX_HOST_LENGTH} characters, no whitespace or control characters.
 * @param port TCP port to bind. Default {@value #DEFAULT_PORT}; range {@value #MIN_PORT}..{@value
 *     #MAX_PORT}; {@code 0} asks the operating system for an ephemeral port.
 * @param readyAtStart whether the engine answers Describe as ready from the start. Off: its
 *     Describe answers say "not ready" until the application calls {@code Engine.markReady()} (once
 *     its regions are registered), and a peer's open waits for that within its describe timeout.
 *     Default {@value #DEFAULT_READY_AT_START}.
 */
public record ListenConfig(String host, int port, boolean readyAtStart) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "listen";

  /** Default {@link #host()}: loopback only. */
  public static final String DEFAULT_HOST = "127.0.0.1";

  /** Longest accepted {@link #host()}, in characters (the DNS name limit). */
  public static final int MAX_HOST_LENGTH = 253;

  /** Default {@link #readyAtStart()}: ready as soon as the engine listens. */
  public static final boolean DEFAULT_READY_AT_START = true;

  /** Default {@link #port()}: {@code 0}, an ephemeral port. */
  public static final int DEFAULT_PORT = 0;

  /** Smallest accepted {@link #port()}; {@code 0} means ephemeral. */
  public static final int MIN_PORT = 0;

  /** Largest accepted {@link #port()}. */
  public static final int MAX_PORT = 65535;

  /**
   * Validates every component.
   *
   * @throws ConfigException naming {@code listen.host} or {@code listen.port} for the first invalid
   *     one
   */
  public ListenConfig {
    Checks.requireHost(SECTION + ".host", host);
    Checks.requireRange(SECTION + ".port", port, MIN_PORT, MAX_PORT);
  }

  /**
   * An address to bind, ready at start ({@link #DEFAULT_READY_AT_START}).
   *
   * @param host interface address or host name to bind
   * @param port TCP port to bind; {@code 0} asks for an ephemeral port
   * @throws ConfigException naming {@code listen.host} or {@code listen.port} for the first invalid
   *     one
   */
  public ListenConfig(String host, int port) {
    this(host, port, DEFAULT_READY_AT_START);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code listen} section reads as: {@value #DEFAULT_HOST}
   *     (loopback only) on an ephemeral port
   */
  public static ListenConfig defaults() {
    return new ListenConfig(DEFAULT_HOST, DEFAULT_PORT, DEFAULT_READY_AT_START);
  }

  /**
   * A copy with {@link #host()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param host interface address or host name the engine binds for peer connections
   * @return a new {@code ListenConfig}; this one is unchanged
   * @throws ConfigException naming {@code listen.host} if it is {@code null}, empty, longer than
   *     {@value #MAX_HOST_LENGTH} characters, or contains whitespace or control characters
   */
  public ListenConfig withHost(String host) {
    return new ListenConfig(host, port, readyAtStart);
  }

  /**
   * A copy with {@link #port()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param port TCP port to bind for peer connections; {@code 0} asks the operating system for an
   *     ephemeral port
   * @return a new {@code ListenConfig}; this one is unchanged
   * @throws ConfigException naming {@code listen.port} if it is outside {@value #MIN_PORT}..{@value
   *     #MAX_PORT}
   */
  public ListenConfig withPort(int port) {
    return new ListenConfig(host, port, readyAtStart);
  }

  /**
   * A copy with {@link #readyAtStart()} replaced and every other component kept.
   *
   * @param readyAtStart whether Describe answers say ready from the start; off, the application
   *     marks the engine ready with {@code Engine.markReady()}
   * @return a new {@code ListenConfig}; this one is unchanged
   */
  public ListenConfig withReadyAtStart(boolean readyAtStart) {
    return new ListenConfig(host, port, readyAtStart);
  }

  static ListenConfig read(ConfigReader r) {
    return new ListenConfig(
        r.stringValue("host", DEFAULT_HOST),
        r.intValue("port", DEFAULT_PORT, MIN_PORT, MAX_PORT),
        r.booleanValue("readyAtStart", DEFAULT_READY_AT_START));
  }
}
