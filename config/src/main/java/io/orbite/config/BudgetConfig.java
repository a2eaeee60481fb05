package io.orbite.config;

/**
 * Resource budgets: upper bounds on what one engine holds at once. Requests beyond a budget are
 * refused rather than queued without bound. JSON section {@code budgets}.
 *
 * @param maxBatches most transfer batches open at once, in batches. Default {@value
 *     #DEFAULT_MAX_BATCHES}; range {@value #MIN_MAX_BATCHES}..{@value #MAX_MAX_BATCHES}.
 * @param maxBatchCapacity most tasks one batch may hold, in tasks. Default {@value
 *     #DEFAULT_MAX_BATCH_CAPACITY}; range {@value #MIN_MAX_BATCH_CAPACITY}..{@value
 *     #MAX_MAX_BATCH_CAPACITY}.
 * @param maxTasksInFlight most transfer tasks submitted and not yet finished, across all batches,
 *     in tasks. Default {@value #DEFAULT_MAX_TASKS_IN_FLIGHT}; range {@value
 *     #MIN_MAX_TASKS_IN_FLIGHT}..{@value #MAX_MAX_TASKS_IN_FLIGHT}.
 * @param maxInflightBytes most payload bytes submitted and not yet finished, across all batches, in
 *     bytes. Default {@value #DEFAULT_MAX_INFLIGHT_BYTES} (8 GiB); range {@value
 *     #MIN_MAX_INFLIGHT_BYTES}..{@value #MAX_MAX_INFLIGHT_BYTES} (1 MiB..1 TiB).
 * @param maxEndpoints most distinct peer endpoints ({@code host:port}) this engine keeps
 *     connections to at once, in endpoints. Default {@value #DEFAULT_MAX_ENDPOINTS}; range {@value
 *     #MIN_MAX_ENDPOINTS}..{@value #MAX_MAX_ENDPOINTS}.
 * @param maxRegistrations most local memory/file registrations held at once, in registrations.
 *     Default {@value #DEFAULT_MAX_REGISTRATIONS}; range {@value #MIN_MAX_REGISTRATIONS}..{@value
 *     #MAX_MAX_REGISTRATIONS}.
 * @param maxPeerSegments most opened peer segments (remote engines opened by {@code host:port},
 *     each with the regions its Describe answer published) held at once, in segments. Default
 *     {@value #DEFAULT_MAX_PEER_SEGMENTS}; range {@value #MIN_MAX_PEER_SEGMENTS}..{@value
 *     #MAX_MAX_PEER_SEGMENTS}.
 */
public record BudgetConfig(
    int maxBatches,
    int maxBatchCapacity,
    int maxTasksInFlight,
    long maxInflightBytes,
    int maxEndpoints,
    int maxRegistrations,
    int maxPeerSegments) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "budgets";

  /** Default {@link #maxBatches()}. */
  public static final int DEFAULT_MAX_BATCHES = 256;

  /** Smallest accepted {@link #maxBatches()}. */
  public static final int MIN_MAX_BATCHES = 1;

  /** Largest accepted {@link #maxBatches()}. */
  public static final int MAX_MAX_BATCHES = 1_000_000;

  /** Default {@link #maxBatchCapacity()}. */
  public static final int DEFAULT_MAX_BATCH_CAPACITY = 65_536;

  /** Smallest accepted {@link #maxBatchCapacity()}. */
  public static final int MIN_MAX_BATCH_CAPACITY = 1;

  /** Largest accepted {@link #maxBatchCapacity()}. */
  public static final int MAX_MAX_BATCH_CAPACITY = 1_048_576;

  /** Default {@link #maxTasksInFlight()}. */
  public static final int DEFAULT_MAX_TASKS_IN_FLIGHT = 262_144;

  /** Smallest accepted {@link #maxTasksInFlight()}. */
  public static final int MIN_MAX_TASKS_IN_FLIGHT = 1;

  /** Largest accepted {@link #maxTasksInFlight()}. */
  public static final int MAX_MAX_TASKS_IN_FLIGHT = 16_777_216;

  /** Default {@link #maxInflightBytes()}: 8 GiB. */
  public static final long DEFAULT_MAX_INFLIGHT_BYTES = 8L * 1024 * 1024 * 1024;

  /** Smallest accepted {@link #maxInflightBytes()}: 1 MiB. */
  public static final long MIN_MAX_INFLIGHT_BYTES = 1024L * 1024;

  /** Largest accepted {@link #maxInflightBytes()}: 1 TiB. */
  public static final long MAX_MAX_INFLIGHT_BYTES = 1024L * 1024 * 1024 * 1024;

  /** Default {@link #maxEndpoints()}. */
  public static final int DEFAULT_MAX_ENDPOINTS = 64;

  /** Smallest accepted {@link #maxEndpoints()}. */
  public static final int MIN_MAX_ENDPOINTS = 1;

  /** Largest accepted {@link #maxEndpoints()}. */
  public static final int MAX_MAX_ENDPOINTS = 4096;

  /** Default {@link #maxRegistrations()}. */
  public static final int DEFAULT_MAX_REGISTRATIONS = 4096;

  /** Smallest accepted {@link #maxRegistrations()}. */
  public static final int MIN_MAX_REGISTRATIONS = 1;

  /** Largest accepted {@link #maxRegistrations()}. */
  public static final int MAX_MAX_REGISTRATIONS = 1_000_000;

  /** Default {@link #maxPeerSegments()}. */
  public static final int DEFAULT_MAX_PEER_SEGMENTS = 256;

  /** Smallest accepted {@link #maxPeerSegments()}. */
  public static final int MIN_MAX_PEER_SEGMENTS = 1;

  /** Largest accepted {@link #maxPeerSegments()}. */
  public static final int MAX_MAX_PEER_SEGMENTS = 65_536;

  /**
   * Validates every component against its {@code MIN_*}..{@code MAX_*} range.
   *
   * @throws ConfigException naming {@code budgets.<key>} for the first component out of range
   */
  public BudgetConfig {
    Checks.requireRange(SECTION + ".maxBatches", maxBatches, MIN_MAX_BATCHES, MAX_MAX_BATCHES);
    Checks.requireRange(
        SECTION + ".maxBatchCapacity",
        maxBatchCapacity,
        MIN_MAX_BATCH_CAPACITY,
        MAX_MAX_BATCH_CAPACITY);
    Checks.requireRange(
        SECTION + ".maxTasksInFlight",
        maxTasksInFlight,
        MIN_MAX_TASKS_IN_FLIGHT,
        MAX_MAX_TASKS_IN_FLIGHT);
    Checks.requireRange(
        SECTION + ".maxInflightBytes",
        maxInflightBytes,
        MIN_MAX_INFLIGHT_BYTES,
        MAX_MAX_INFLIGHT_BYTES);
    Checks.requireRange(
        SECTION + ".maxEndpoints", maxEndpoints, MIN_MAX_ENDPOINTS, MAX_MAX_ENDPOINTS);
    Checks.requireRange(
        SECTION + ".maxRegistrations",
        maxRegistrations,
        MIN_MAX_REGISTRATIONS,
        MAX_MAX_REGISTRATIONS);
    Checks.requireRange(
        SECTION + ".maxPeerSegments",
        maxPeerSegments,
        MIN_MAX_PEER_SEGMENTS,
        MAX_MAX_PEER_SEGMENTS);
  }

  /**
   * All components at their defaults.
   *
   * @return the budgets an absent or empty {@code budgets} section reads as, each component at its
   *     {@code DEFAULT_*} constant
   */
  public static BudgetConfig defaults() {
    return new BudgetConfig(
        DEFAULT_MAX_BATCHES,
        DEFAULT_MAX_BATCH_CAPACITY,
        DEFAULT_MAX_TASKS_IN_FLIGHT,
        DEFAULT_MAX_INFLIGHT_BYTES,
        DEFAULT_MAX_ENDPOINTS,
        DEFAULT_MAX_REGISTRATIONS,
        DEFAULT_MAX_PEER_SEGMENTS);
  }

  /**
   * A copy with {@link #maxBatches()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxBatches most transfer batches open at once, in batches
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxBatches} if it is outside {@value
   *     #MIN_MAX_BATCHES}..{@value #MAX_MAX_BATCHES}
   */
  public BudgetConfig withMaxBatches(int maxBatches) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxBatchCapacity()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxBatchCapacity most tasks one batch may hold, in tasks
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxBatchCapacity} if it is outside {@value
   *     #MIN_MAX_BATCH_CAPACITY}..{@value #MAX_MAX_BATCH_CAPACITY}
   */
  public BudgetConfig withMaxBatchCapacity(int maxBatchCapacity) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxTasksInFlight()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxTasksInFlight most transfer tasks submitted and not yet finished, across all batches,
   *     in tasks
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxTasksInFlight} if it is outside {@value
   *     #MIN_MAX_TASKS_IN_FLIGHT}..{@value #MAX_MAX_TASKS_IN_FLIGHT}
   */
  public BudgetConfig withMaxTasksInFlight(int maxTasksInFlight) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxInflightBytes()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxInflightBytes most payload bytes submitted and not yet finished, across all batches,
   *     in bytes
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxInflightBytes} if it is outside {@value
   *     #MIN_MAX_INFLIGHT_BYTES}..{@value #MAX_MAX_INFLIGHT_BYTES}
   */
  public BudgetConfig withMaxInflightBytes(long maxInflightBytes) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxEndpoints()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxEndpoints most distinct peer endpoints ({@code host:port}) the engine keeps
   *     connections to at once, in endpoints
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxEndpoints} if it is outside {@value
   *     #MIN_MAX_ENDPOINTS}..{@value #MAX_MAX_ENDPOINTS}
   */
  public BudgetConfig withMaxEndpoints(int maxEndpoints) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxRegistrations()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxRegistrations most local memory/file registrations held at once, in registrations
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxRegistrations} if it is outside {@value
   *     #MIN_MAX_REGISTRATIONS}..{@value #MAX_MAX_REGISTRATIONS}
   */
  public BudgetConfig withMaxRegistrations(int maxRegistrations) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  /**
   * A copy with {@link #maxPeerSegments()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxPeerSegments most opened peer segments (remote engines opened by {@code host:port})
   *     held at once, in segments
   * @return a new {@code BudgetConfig}; this one is unchanged
   * @throws ConfigException naming {@code budgets.maxPeerSegments} if it is outside {@value
   *     #MIN_MAX_PEER_SEGMENTS}..{@value #MAX_MAX_PEER_SEGMENTS}
   */
  public BudgetConfig withMaxPeerSegments(int maxPeerSegments) {
    return new BudgetConfig(
        maxBatches,
        maxBatchCapacity,
        maxTasksInFlight,
        maxInflightBytes,
        maxEndpoints,
        maxRegistrations,
        maxPeerSegments);
  }

  static BudgetConfig read(ConfigReader r) {
    return new BudgetConfig(
        r.intValue("maxBatches", DEFAULT_MAX_BATCHES, MIN_MAX_BATCHES, MAX_MAX_BATCHES),
        r.intValue(
            "maxBatchCapacity",
            DEFAULT_MAX_BATCH_CAPACITY,
            MIN_MAX_BATCH_CAPACITY,
            MAX_MAX_BATCH_CAPACITY),
        r.intValue(
            "maxTasksInFlight",
            DEFAULT_MAX_TASKS_IN_FLIGHT,
            MIN_MAX_TASKS_IN_FLIGHT,
            MAX_MAX_TASKS_IN_FLIGHT),
        r.longValue(
            "maxInflightBytes",
            DEFAULT_MAX_INFLIGHT_BYTES,
            MIN_MAX_INFLIGHT_BYTES,
            MAX_MAX_INFLIGHT_BYTES),
        r.intValue("maxEndpoints", DEFAULT_MAX_ENDPOINTS, MIN_MAX_ENDPOINTS, MAX_MAX_ENDPOINTS),
        r.intValue(
            "maxRegistrations",
            DEFAULT_MAX_REGISTRATIONS,
            MIN_MAX_REGISTRATIONS,
            MAX_MAX_REGISTRATIONS),
        r.intValue(
            "maxPeerSegments",
            DEFAULT_MAX_PEER_SEGMENTS,
            MIN_MAX_PEER_SEGMENTS,
            MAX_MAX_PEER_SEGMENTS));
  }
}
