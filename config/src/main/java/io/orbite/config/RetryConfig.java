package io.orbite.config;

/**
 * What the engine may run again on its own, across transports. JSON section {@code retry}. (A READ
 * sent once more on another TCP lane of the same endpoint is {@code tcp.retryReadOnOtherLane}.)
 *
 * @param maxTransportFailovers how many times a task that the engine routed itself ({@code UNSPEC})
 *     to SHM or RDMA, and that transport failed drained with nothing posted, may run again on the
 *     peer's TCP channel, to the same incarnation, within its deadline. A READ qualifies after a
 *     transport failure (the transport unavailable, its peer lost, an SHM mapping refused); a WRITE
 *     only when the failed attempt is proven to have posted nothing (effect {@code NONE}). Never
 *     after {@code EPOCH_MISMATCH}, {@code CANCELLED}, {@code TIMEOUT} or a passed deadline. Each
 *     failover is counted ({@code transportFailovers}) and the task's result says {@code attempts}.
 *     0 turns failover off. Default {@value #DEFAULT_MAX_TRANSPORT_FAILOVERS}; range {@value
 *     #MIN_MAX_TRANSPORT_FAILOVERS}..{@value #MAX_MAX_TRANSPORT_FAILOVERS}.
 */
public record RetryConfig(int maxTransportFailovers) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "retry";

  /** Default {@link #maxTransportFailovers()}: one more run, over TCP. */
  public static final int DEFAULT_MAX_TRANSPORT_FAILOVERS = 1;

  /** Smallest accepted {@link #maxTransportFailovers()}: failover off. */
  public static final int MIN_MAX_TRANSPORT_FAILOVERS = 0;

  /** Largest accepted {@link #maxTransportFailovers()}. */
  public static final int MAX_MAX_TRANSPORT_FAILOVERS = 4;

  /**
   * Validates {@link #maxTransportFailovers()}.
   *
   * @throws ConfigException naming {@code retry.maxTransportFailovers} if it is outside {@value
   *     #MIN_MAX_TRANSPORT_FAILOVERS}..{@value #MAX_MAX_TRANSPORT_FAILOVERS}
   */
  public RetryConfig {
    Checks.requireRange(
        SECTION + ".maxTransportFailovers",
        maxTransportFailovers,
        MIN_MAX_TRANSPORT_FAILOVERS,
        MAX_MAX_TRANSPORT_FAILOVERS);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code retry} section reads as: a task the engine
   *     routed to SHM or RDMA may run once more over TCP
   */
  public static RetryConfig defaults() {
    return new RetryConfig(DEFAULT_MAX_TRANSPORT_FAILOVERS);
  }

  /**
   * A copy with {@link #maxTransportFailovers()} replaced; the new value is checked as by the
   * constructor.
   *
   * @param maxTransportFailovers how many times a task may run again on the peer's TCP channel
   *     after SHM or RDMA failed it drained; 0 turns failover off
   * @return a new {@code RetryConfig}; this one is unchanged
   * @throws ConfigException naming {@code retry.maxTransportFailovers} if it is outside {@value
   *     #MIN_MAX_TRANSPORT_FAILOVERS}..{@value #MAX_MAX_TRANSPORT_FAILOVERS}
   */
  public RetryConfig withMaxTransportFailovers(int maxTransportFailovers) {
    return new RetryConfig(maxTransportFailovers);
  }

  static RetryConfig read(ConfigReader r) {
    return new RetryConfig(
        r.intValue(
            "maxTransportFailovers",
            DEFAULT_MAX_TRANSPORT_FAILOVERS,
            MIN_MAX_TRANSPORT_FAILOVERS,
            MAX_MAX_TRANSPORT_FAILOVERS));
  }
}
