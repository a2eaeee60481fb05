package io.orbite.config;

/**
 * How a task's byte range is cut into slices that travel independently (and may use different
 * lanes). JSON section {@code slicing}.
 *
 * @param baseBlockBytes smallest block a task is cut into, in bytes; must be a power of two. Large
 *     tasks use bigger (adaptive) blocks so that the slice caps below hold; a tail shorter than a
 *     block is folded into the slice before it. Default {@value #DEFAULT_BASE_BLOCK_BYTES} (64
 *     KiB); range {@value #MIN_BASE_BLOCK_BYTES}..{@value #MAX_BASE_BLOCK_BYTES} (4 KiB..64 MiB).
 * @param maxReadSlices most slices one READ task (peer to local) is split into, in slices. Default
 *     {@value #DEFAULT_MAX_READ_SLICES}; range {@value #MIN_MAX_READ_SLICES}..{@value
 *     #MAX_MAX_READ_SLICES}.
 * @param maxWriteSlices most slices one WRITE task (local to peer) is split into, in slices.
 *     Default {@value #DEFAULT_MAX_WRITE_SLICES}; range {@value #MIN_MAX_WRITE_SLICES}..{@value
 *     #MAX_MAX_WRITE_SLICES}.
 */
public record SlicingConfig(long baseBlockBytes, int maxReadSlices, int maxWriteSlices) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "slicing";

  /** Default {@link #baseBlockBytes()}: 64 KiB. */
  public static final long DEFAULT_BASE_BLOCK_BYTES = 64L * 1024;

  /** Smallest accepted {@link #baseBlockBytes()}: 4 KiB. */
  public static final long MIN_BASE_BLOCK_BYTES = 4L * 1024;

  /** Largest accepted {@link #baseBlockBytes()}: 64 MiB. */
  public static final long MAX_BASE_BLOCK_BYTES = 64L * 1024 * 1024;

  /** Default {@link #maxReadSlices()}. */
  public static final int DEFAULT_MAX_READ_SLICES = 64;

  /** Smallest accepted {@link #maxReadSlices()}. */
  public static final int MIN_MAX_READ_SLICES = 1;

  /** Largest accepted {@link #maxReadSlices()}. */
  public static final int MAX_MAX_READ_SLICES = 1024;

  /** Default {@link #maxWriteSlices()}. */
  public static final int DEFAULT_MAX_WRITE_SLICES = 32;

  /** Smallest accepted {@link #maxWriteSlices()}. */
  public static final int MIN_MAX_WRITE_SLICES = 1;

  /** Largest accepted {@link #maxWriteSlices()}. */
  public static final int MAX_MAX_WRITE_SLICES = 1024;

  /**
   * Validates every component against its {@code MIN_*}..{@code MAX_*} range; {@link
   * #baseBlockBytes()} must also be a power of two.
   *
   * @throws ConfigException naming {@code slicing.<key>} for the first invalid component
   */
  public SlicingConfig {
    String basePath = SECTION + ".baseBlockBytes";
    Checks.requireRange(basePath, baseBlockBytes, MIN_BASE_BLOCK_BYTES, MAX_BASE_BLOCK_BYTES);
    Checks.requirePowerOfTwo(basePath, baseBlockBytes);
    Checks.requireRange(
        SECTION + ".maxReadSlices", maxReadSlices, MIN_MAX_READ_SLICES, MAX_MAX_READ_SLICES);
    Checks.requireRange(
        SECTION + ".maxWriteSlices", maxWriteSlices, MIN_MAX_WRITE_SLICES, MAX_MAX_WRITE_SLICES);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code slicing} section reads as: 64 KiB base blocks,
   *     at most {@value #DEFAULT_MAX_READ_SLICES} slices per READ and {@value
   *     #DEFAULT_MAX_WRITE_SLICES} per WRITE
   */
  public static SlicingConfig defaults() {
    return new SlicingConfig(
        DEFAULT_BASE_BLOCK_BYTES, DEFAULT_MAX_READ_SLICES, DEFAULT_MAX_WRITE_SLICES);
  }

  /**
   * A copy with {@link #baseBlockBytes()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param baseBlockBytes smallest block a task is cut into, in bytes; a power of two
   * @return a new {@code SlicingConfig}; this one is unchanged
   * @throws ConfigException naming {@code slicing.baseBlockBytes} if it is outside {@value
   *     #MIN_BASE_BLOCK_BYTES}..{@value #MAX_BASE_BLOCK_BYTES} or is not a power of two
   */
  public SlicingConfig withBaseBlockBytes(long baseBlockBytes) {
    return new SlicingConfig(baseBlockBytes, maxReadSlices, maxWriteSlices);
  }

  /**
   * A copy with {@link #maxReadSlices()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxReadSlices most slices one READ task (peer to local) is split into, in slices
   * @return a new {@code SlicingConfig}; this one is unchanged
   * @throws ConfigException naming {@code slicing.maxReadSlices} if it is outside {@value
   *     #MIN_MAX_READ_SLICES}..{@value #MAX_MAX_READ_SLICES}
   */
  public SlicingConfig withMaxReadSlices(int maxReadSlices) {
    return new SlicingConfig(baseBlockBytes, maxReadSlices, maxWriteSlices);
  }

  /**
   * A copy with {@link #maxWriteSlices()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxWriteSlices most slices one WRITE task (local to peer) is split into, in slices
   * @return a new {@code SlicingConfig}; this one is unchanged
   * @throws ConfigException naming {@code slicing.maxWriteSlices} if it is outside {@value
   *     #MIN_MAX_WRITE_SLICES}..{@value #MAX_MAX_WRITE_SLICES}
   */
  public SlicingConfig withMaxWriteSlices(int maxWriteSlices) {
    return new SlicingConfig(baseBlockBytes, maxReadSlices, maxWriteSlices);
  }

  static SlicingConfig read(ConfigReader r) {
    return new SlicingConfig(
        r.longValue(
            "baseBlockBytes", DEFAULT_BASE_BLOCK_BYTES, MIN_BASE_BLOCK_BYTES, MAX_BASE_BLOCK_BYTES),
        r.intValue(
            "maxReadSlices", DEFAULT_MAX_READ_SLICES, MIN_MAX_READ_SLICES, MAX_MAX_READ_SLICES),
        r.intValue(
            "maxWriteSlices",
            DEFAULT_MAX_WRITE_SLICES,
            MIN_MAX_WRITE_SLICES,
            MAX_MAX_WRITE_SLICES));
  }
}
