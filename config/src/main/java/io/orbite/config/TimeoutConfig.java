package io.orbite.config;

/**
 * Engine-wide time limits. JSON section {@code timeouts}.
 *
 * @param defaultDeadlineMillis deadline of a task that does not set its own, in milliseconds from
 *     submission. Default {@value #DEFAULT_DEFAULT_DEADLINE_MILLIS} (30 s); range {@value
 *     #MIN_DEFAULT_DEADLINE_MILLIS}..{@value #MAX_DEFAULT_DEADLINE_MILLIS} (24 h).
 * @param destructionWindowMillis how long the engine waits, in milliseconds, for a worker to prove
 *     it let go of memory: a pending task's receipts after its deadline, a closed endpoint's lane
 *     threads, an unregistered range's loans, a cancelled file operation's completion. Past it the
 *     task is UNQUIESCED and its owner quarantined: memory, loans and charges stay retained rather
 *     than freed under a worker. Default {@value #DEFAULT_DESTRUCTION_WINDOW_MILLIS} (30 s); range
 *     {@value #MIN_DESTRUCTION_WINDOW_MILLIS}..{@value #MAX_DESTRUCTION_WINDOW_MILLIS} (1 h).
 * @param describeTimeoutMillis how long opening a segment waits for the peer's Describe answer
 *     (endpoint, epoch, regions), in milliseconds. Default {@value
 *     #DEFAULT_DESCRIBE_TIMEOUT_MILLIS} (5 s); range {@value #MIN_DESCRIBE_TIMEOUT_MILLIS}..{@value
 *     #MAX_DESCRIBE_TIMEOUT_MILLIS} (10 min).
 */
public record TimeoutConfig(
    long defaultDeadlineMillis, long destructionWindowMillis, long describeTimeoutMillis) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "timeouts";

  /** Default {@link #defaultDeadlineMillis()}: 30 seconds. */
  public static final long DEFAULT_DEFAULT_DEADLINE_MILLIS = 30_000L;

  /** Smallest accepted {@link #defaultDeadlineMillis()}. */
  public static final long MIN_DEFAULT_DEADLINE_MILLIS = 1L;

  /** Largest accepted {@link #defaultDeadlineMillis()}: 24 hours. */
  public static final long MAX_DEFAULT_DEADLINE_MILLIS = 86_400_000L;

  /** Default {@link #destructionWindowMillis()}: 30 seconds. */
  public static final long DEFAULT_DESTRUCTION_WINDOW_MILLIS = 30_000L;

  /** Smallest accepted {@link #destructionWindowMillis()}. */
  public static final long MIN_DESTRUCTION_WINDOW_MILLIS = 1L;

  /** Largest accepted {@link #destructionWindowMillis()}: 1 hour. */
  public static final long MAX_DESTRUCTION_WINDOW_MILLIS = 3_600_000L;

  /** Default {@link #describeTimeoutMillis()}: 5 seconds. */
  public static final long DEFAULT_DESCRIBE_TIMEOUT_MILLIS = 5_000L;

  /** Smallest accepted {@link #describeTimeoutMillis()}. */
  public static final long MIN_DESCRIBE_TIMEOUT_MILLIS = 1L;

  /** Largest accepted {@link #describeTimeoutMillis()}: 10 minutes. */
  public static final long MAX_DESCRIBE_TIMEOUT_MILLIS = 600_000L;

  /**
   * Validates every component against its {@code MIN_*}..{@code MAX_*} range.
   *
   * @throws ConfigException naming {@code timeouts.<key>} for the first component out of range
   */
  public TimeoutConfig {
    Checks.requireRange(
        SECTION + ".defaultDeadlineMillis",
        defaultDeadlineMillis,
        MIN_DEFAULT_DEADLINE_MILLIS,
        MAX_DEFAULT_DEADLINE_MILLIS);
    Checks.requireRange(
        SECTION + ".destructionWindowMillis",
        destructionWindowMillis,
        MIN_DESTRUCTION_WINDOW_MILLIS,
        MAX_DESTRUCTION_WINDOW_MILLIS);
    Checks.requireRange(
        SECTION + ".describeTimeoutMillis",
        describeTimeoutMillis,
        MIN_DESCRIBE_TIMEOUT_MILLIS,
        MAX_DESCRIBE_TIMEOUT_MILLIS);
  }

  /**
   * All components at their defaults.
   *
   * @return the limits an absent or empty {@code timeouts} section reads as: a 30 s default
   *     deadline, a 30 s destruction window and a 5 s Describe timeout
   */
  public static TimeoutConfig defaults() {
    return new TimeoutConfig(
        DEFAULT_DEFAULT_DEADLINE_MILLIS,
        DEFAULT_DESTRUCTION_WINDOW_MILLIS,
        DEFAULT_DESCRIBE_TIMEOUT_MILLIS);
  }

  /**
   * A copy with {@link #defaultDeadlineMillis()} replaced and every other component kept; the new
   * value is checked as by the constructor.
   *
   * @param defaultDeadlineMillis deadline of a task that does not set its own, in milliseconds from
   *     submission
   * @return a new {@code TimeoutConfig}; this one is unchanged
   * @throws ConfigException naming {@code timeouts.defaultDeadlineMillis} if it is outside {@value
   *     #MIN_DEFAULT_DEADLINE_MILLIS}..{@value #MAX_DEFAULT_DEADLINE_MILLIS}
   */
  public TimeoutConfig withDefaultDeadlineMillis(long defaultDeadlineMillis) {
    return new TimeoutConfig(defaultDeadlineMillis, destructionWindowMillis, describeTimeoutMillis);
  }

  /**
   * A copy with {@link #destructionWindowMillis()} replaced and every other component kept; the new
   * value is checked as by the constructor.
   *
   * @param destructionWindowMillis how long the engine waits for in-flight work to drain before it
   *     keeps the resources retained instead of freeing them, in milliseconds
   * @return a new {@code TimeoutConfig}; this one is unchanged
   * @throws ConfigException naming {@code timeouts.destructionWindowMillis} if it is outside
   *     {@value #MIN_DESTRUCTION_WINDOW_MILLIS}..{@value #MAX_DESTRUCTION_WINDOW_MILLIS}
   */
  public TimeoutConfig withDestructionWindowMillis(long destructionWindowMillis) {
    return new TimeoutConfig(defaultDeadlineMillis, destructionWindowMillis, describeTimeoutMillis);
  }

  /**
   * A copy with {@link #describeTimeoutMillis()} replaced and every other component kept; the new
   * value is checked as by the constructor.
   *
   * @param describeTimeoutMillis how long opening a segment waits for the peer's Describe answer,
   *     in milliseconds
   * @return a new {@code TimeoutConfig}; this one is unchanged
   * @throws ConfigException naming {@code timeouts.describeTimeoutMillis} if it is outside {@value
   *     #MIN_DESCRIBE_TIMEOUT_MILLIS}..{@value #MAX_DESCRIBE_TIMEOUT_MILLIS}
   */
  public TimeoutConfig withDescribeTimeoutMillis(long describeTimeoutMillis) {
    return new TimeoutConfig(defaultDeadlineMillis, destructionWindowMillis, describeTimeoutMillis);
  }

  static TimeoutConfig read(ConfigReader r) {
    return new TimeoutConfig(
        r.longValue(
            "defaultDeadlineMillis",
            DEFAULT_DEFAULT_DEADLINE_MILLIS,
            MIN_DEFAULT_DEADLINE_MILLIS,
            MAX_DEFAULT_DEADLINE_MILLIS),
        r.longValue(
            "destructionWindowMillis",
            DEFAULT_DESTRUCTION_WINDOW_MILLIS,
            MIN_DESTRUCTION_WINDOW_MILLIS,
            MAX_DESTRUCTION_WINDOW_MILLIS),
        r.longValue(
            "describeTimeoutMillis",
            DEFAULT_DESCRIBE_TIMEOUT_MILLIS,
            MIN_DESCRIBE_TIMEOUT_MILLIS,
            MAX_DESCRIBE_TIMEOUT_MILLIS));
  }
}
