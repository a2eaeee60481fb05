package io.orbite.config;

/**
 * Same-host shared-memory transport. JSON section {@code shm}.
 *
 * @param enabled whether this engine allocates its own memory ({@code engine.allocate}) in memfds
 *     and publishes it in Describe, so that a peer on the same host can map it and copy at memory
 *     speed. Default {@value #DEFAULT_ENABLED}: off, allocations are plain off-heap memory and
 *     peers reach them over TCP. Requesters always use SHM when a same-host peer publishes it.
 * @param maxMappings most peer allocations one SHM endpoint (one peer incarnation) keeps mapped at
 *     once, in mappings; mapping one more first unmaps the least recently used. Default {@value
 *     #DEFAULT_MAX_MAPPINGS}; range {@value #MIN_MAX_MAPPINGS}..{@value #MAX_MAX_MAPPINGS}.
 */
public record ShmConfig(boolean enabled, int maxMappings) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "shm";

  /** Default {@link #enabled()}. */
  public static final boolean DEFAULT_ENABLED = false;

  /** Default {@link #maxMappings()}. */
  public static final int DEFAULT_MAX_MAPPINGS = 1024;

  /** Smallest accepted {@link #maxMappings()}. */
  public static final int MIN_MAX_MAPPINGS = 1;

  /** Largest accepted {@link #maxMappings()}. */
  public static final int MAX_MAX_MAPPINGS = 65536;

  /**
   * Validates {@link #maxMappings()}; any {@link #enabled()} is accepted.
   *
   * @throws ConfigException naming {@code shm.maxMappings} if {@code maxMappings} is outside
   *     {@value #MIN_MAX_MAPPINGS}..{@value #MAX_MAX_MAPPINGS}
   */
  public ShmConfig {
    Checks.requireRange(SECTION + ".maxMappings", maxMappings, MIN_MAX_MAPPINGS, MAX_MAX_MAPPINGS);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code shm} section reads as: own allocations are plain
   *     off-heap memory (not published for mapping), and up to {@value #DEFAULT_MAX_MAPPINGS} peer
   *     allocations are kept mapped per SHM endpoint
   */
  public static ShmConfig defaults() {
    return new ShmConfig(DEFAULT_ENABLED, DEFAULT_MAX_MAPPINGS);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept; any value is accepted.
   *
   * @param enabled whether this engine's own allocations live in memfds published in Describe, so
   *     that same-host peers can map them
   * @return a new {@code ShmConfig}; this one is unchanged
   */
  public ShmConfig withEnabled(boolean enabled) {
    return new ShmConfig(enabled, maxMappings);
  }

  /**
   * A copy with {@link #maxMappings()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxMappings most peer allocations one SHM endpoint (one peer incarnation) keeps mapped
   *     at once, in mappings
   * @return a new {@code ShmConfig}; this one is unchanged
   * @throws ConfigException naming {@code shm.maxMappings} if it is outside {@value
   *     #MIN_MAX_MAPPINGS}..{@value #MAX_MAX_MAPPINGS}
   */
  public ShmConfig withMaxMappings(int maxMappings) {
    return new ShmConfig(enabled, maxMappings);
  }

  static ShmConfig read(ConfigReader r) {
    return new ShmConfig(
        r.booleanValue("enabled", DEFAULT_ENABLED),
        r.intValue("maxMappings", DEFAULT_MAX_MAPPINGS, MIN_MAX_MAPPINGS, MAX_MAX_MAPPINGS));
  }
}
