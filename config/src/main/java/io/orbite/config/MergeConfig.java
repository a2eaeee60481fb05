package io.orbite.config;

/**
 * Request merging: adjacent tasks of one submission carried as one physical transfer. JSON section
 * {@code merge}.
 *
 * @param enabled whether this engine, as a requester, merges the tasks of a submission that go to
 *     the same channel with the same op, whose local and remote ranges are both contiguous, into
 *     one physical transfer (each task keeps its own result). Off: every task is its own transfer.
 *     Default {@value #DEFAULT_ENABLED}.
 * @param maxBytes the most bytes one merged transfer carries on this side: as a requester, the most
 *     it merges into one transfer (each transport may merge less, down to what the peer
 *     advertised); as a source, what its Describe answer advertises as the most a requester merges
 *     into one transfer to it. Default {@value #DEFAULT_MAX_BYTES} (1 MiB); range {@value
 *     #MIN_MAX_BYTES}..{@value #MAX_MAX_BYTES} (4 KiB..1 GiB).
 */
public record MergeConfig(boolean enabled, long maxBytes) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "merge";

  /** Default {@link #enabled()}. */
  public static final boolean DEFAULT_ENABLED = true;

  /** Default {@link #maxBytes()}: 1 MiB. */
  public static final long DEFAULT_MAX_BYTES = 1024L * 1024;

  /** Smallest accepted {@link #maxBytes()}: 4 KiB. */
  public static final long MIN_MAX_BYTES = 4L * 1024;

  /** Largest accepted {@link #maxBytes()}: 1 GiB. */
  public static final long MAX_MAX_BYTES = 1024L * 1024 * 1024;

  /**
   * Validates {@link #maxBytes()}; any {@link #enabled()} is accepted.
   *
   * @throws ConfigException naming {@code merge.maxBytes} if it is outside {@value
   *     #MIN_MAX_BYTES}..{@value #MAX_MAX_BYTES}
   */
  public MergeConfig {
    Checks.requireRange(SECTION + ".maxBytes", maxBytes, MIN_MAX_BYTES, MAX_MAX_BYTES);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code merge} section reads as: merging on, at most 1
   *     MiB per merged transfer
   */
  public static MergeConfig defaults() {
    return new MergeConfig(DEFAULT_ENABLED, DEFAULT_MAX_BYTES);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept.
   *
   * @param enabled whether this engine merges adjacent tasks of a submission
   * @return a new {@code MergeConfig}; this one is unchanged
   */
  public MergeConfig withEnabled(boolean enabled) {
    return new MergeConfig(enabled, maxBytes);
  }

  /**
   * A copy with {@link #maxBytes()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxBytes the most bytes one merged transfer carries on this side
   * @return a new {@code MergeConfig}; this one is unchanged
   * @throws ConfigException naming {@code merge.maxBytes} if it is outside {@value
   *     #MIN_MAX_BYTES}..{@value #MAX_MAX_BYTES}
   */
  public MergeConfig withMaxBytes(long maxBytes) {
    return new MergeConfig(enabled, maxBytes);
  }

  /**
   * The most bytes this engine merges into one transfer as a requester.
   *
   * @return {@link #maxBytes()} when {@link #enabled()}, else 0 (no merging)
   */
  public long requesterLimitBytes() {
    return enabled ? maxBytes : 0;
  }

  static MergeConfig read(ConfigReader r) {
    return new MergeConfig(
        r.booleanValue("enabled", DEFAULT_ENABLED),
        r.longValue("maxBytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, MAX_MAX_BYTES));
  }
}
