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
 * @param lanes copy threads of one SHM endpoint (one peer incarnation), in threads: the tasks of a
 *     batch are dealt across them in contiguous parts, so many small copies run on this many cores
 *     at once. Each lane maps the peer's allocations on its own (up to {@code maxMappings} each).
 *     Default {@value #DEFAULT_LANES}; range {@value #MIN_LANES}..{@value #MAX_LANES}.
 */
public record ShmConfig(boolean enabled, int maxMappings, int lanes) {
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

  /** Default {@link #lanes()}. */
  public static final int DEFAULT_LANES = 2;

  /** Smallest accepted {@link #lanes()}. */
  public static final int MIN_LANES = 1;

  /** Largest accepted {@link #lanes()}. */
  public static final int MAX_LANES = 16;

  /**
   * Validates {@link #maxMappings()} and {@link #lanes()}; any {@link #enabled()} is accepted.
   *
   * @throws ConfigException naming {@code shm.maxMappings} if {@code maxMappings} is outside
   *     {@value #MIN_MAX_MAPPINGS}..{@value #MAX_MAX_MAPPINGS}, or {@code shm.lanes} if {@code
   *     lanes} is outside {@value #MIN_LANES}..{@value #MAX_LANES}
   */
  public ShmConfig {
    Checks.requireRange(SECTION + ".maxMappings", maxMappings, MIN_MAX_MAPPINGS, MAX_MAX_MAPPINGS);
    Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code shm} section reads as: own allocations are plain
   *     off-heap memory (not published for mapping), and up to {@value #DEFAULT_MAX_MAPPINGS} peer
   *     allocations are kept mapped per SHM endpoint, copied by {@value #DEFAULT_LANES} lanes
   */
  public static ShmConfig defaults() {
    return new ShmConfig(DEFAULT_ENABLED, DEFAULT_MAX_MAPPINGS, DEFAULT_LANES);
  }

  /**
   * A copy with {@link #enabled()} replaced and every other component kept; any value is accepted.
   *
   * @param enabled whether this engine's own allocations live in memfds published in Describe, so
   *     that same-host peers can map them
   * @return a new {@code ShmConfig}; this one is unchanged
   */
  public ShmConfig withEnabled(boolean enabled) {
    return new ShmConfig(enabled, maxMappings, lanes);
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
    return new ShmConfig(enabled, maxMappings, lanes);
  }

  /**
   * A copy with {@link #lanes()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param lanes copy threads of one SHM endpoint, in threads
   * @return a new {@code ShmConfig}; this one is unchanged
   * @throws ConfigException naming {@code shm.lanes} if it is outside {@value #MIN_LANES}..{@value
   *     #MAX_LANES}
   */
  public ShmConfig withLanes(int lanes) {
    return new ShmConfig(enabled, maxMappings, lanes);
  }

  static ShmConfig read(ConfigReader r) {
    return new ShmConfig(
        r.booleanValue("enabled", DEFAULT_ENABLED),
        r.intValue("maxMappings", DEFAULT_MAX_MAPPINGS, MIN_MAX_MAPPINGS, MAX_MAX_MAPPINGS),
        r.intValue("lanes", DEFAULT_LANES, MIN_LANES, MAX_LANES));
  }
}
