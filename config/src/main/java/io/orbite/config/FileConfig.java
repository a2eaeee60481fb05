package io.orbite.config;

import java.util.List;

/**
 * The file transport (file segments over io_uring, or FileChannel positioned I/O). JSON section
 * {@code file}.
 *
 * @param engine which I/O engine file segments use: {@code "auto"} (io_uring when the kernel allows
 *     it, else FileChannel), {@code "io_uring"} (refuse to open file segments if io_uring is
 *     unavailable) or {@code "channel"} (always FileChannel positioned I/O). Default {@value
 *     #DEFAULT_ENGINE}.
 * @param lanes ring lanes: each owns one io_uring (or one FileChannel worker pool) and one thread
 *     of its own. Default {@value #DEFAULT_LANES}; range {@value #MIN_LANES}..{@value #MAX_LANES}.
 * @param queueDepth most operations one lane has in the kernel at once (its ring's submission
 *     entries). Default {@value #DEFAULT_QUEUE_DEPTH}; range {@value #MIN_QUEUE_DEPTH}..{@value
 *     #MAX_QUEUE_DEPTH}.
 * @param maxChunkBytes largest byte range one operation moves; longer tasks are cut into chunks of
 *     this size. Default {@value #DEFAULT_MAX_CHUNK_BYTES} (1 MiB); range {@value
 *     #MIN_MAX_CHUNK_BYTES}..{@value #MAX_MAX_CHUNK_BYTES} (4 KiB..1 GiB).
 * @param maxFileSegments most open file segments (one per path) at once. Default {@value
 *     #DEFAULT_MAX_FILE_SEGMENTS}; range {@value #MIN_MAX_FILE_SEGMENTS}..{@value
 *     #MAX_MAX_FILE_SEGMENTS}.
 * @param channelThreads threads per lane doing blocking positioned I/O when the engine is
 *     FileChannel. Default {@value #DEFAULT_CHANNEL_THREADS}; range {@value
 *     #MIN_CHANNEL_THREADS}..{@value #MAX_CHANNEL_THREADS}.
 */
public record FileConfig(
    String engine,
    int lanes,
    int queueDepth,
    int maxChunkBytes,
    int maxFileSegments,
    int channelThreads) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "file";

  /** The accepted values of {@link #engine()}. */
  public static final List<String> ENGINES = List.of("auto", "io_uring", "channel");

  /** Default {@link #engine()}. */
  public static final String DEFAULT_ENGINE = "auto";

  /** Default {@link #lanes()}. */
  public static final int DEFAULT_LANES = 1;

  /** Smallest accepted {@link #lanes()}. */
  public static final int MIN_LANES = 1;

  /** Largest accepted {@link #lanes()}. */
  public static final int MAX_LANES = 64;

  /** Default {@link #queueDepth()}. */
  public static final int DEFAULT_QUEUE_DEPTH = 64;

  /** Smallest accepted {@link #queueDepth()}. */
  public static final int MIN_QUEUE_DEPTH = 1;

  /** Largest accepted {@link #queueDepth()}. */
  public static final int MAX_QUEUE_DEPTH = 4096;

  /** Default {@link #maxChunkBytes()}: 1 MiB. */
  public static final int DEFAULT_MAX_CHUNK_BYTES = 1048576;

  /** Smallest accepted {@link #maxChunkBytes()}: 4 KiB. */
  public static final int MIN_MAX_CHUNK_BYTES = 4096;

  /** Largest accepted {@link #maxChunkBytes()}: 1 GiB. */
  public static final int MAX_MAX_CHUNK_BYTES = 1073741824;

  /** Default {@link #maxFileSegments()}. */
  public static final int DEFAULT_MAX_FILE_SEGMENTS = 64;

  /** Smallest accepted {@link #maxFileSegments()}. */
  public static final int MIN_MAX_FILE_SEGMENTS = 1;

  /** Largest accepted {@link #maxFileSegments()}. */
  public static final int MAX_MAX_FILE_SEGMENTS = 65536;

  /** Default {@link #channelThreads()}. */
  public static final int DEFAULT_CHANNEL_THREADS = 4;

  /** Smallest accepted {@link #channelThreads()}. */
  public static final int MIN_CHANNEL_THREADS = 1;

  /** Largest accepted {@link #channelThreads()}. */
  public static final int MAX_CHANNEL_THREADS = 256;

  /**
   * Validates every component: {@link #engine()} must be one of {@link #ENGINES}, each number must
   * lie in its {@code MIN_*}..{@code MAX_*} range.
   *
   * @throws ConfigException naming {@code file.<key>} for the first invalid component
   */
  public FileConfig {
    Checks.requireNonNull(SECTION + ".engine", engine);
    if (!ENGINES.contains(engine)) {
      throw new ConfigException(
          SECTION + ".engine",
          "must be one of \"auto\", \"io_uring\", \"channel\", got " + Checks.quote(engine));
    }
    Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
    Checks.requireRange(SECTION + ".queueDepth", queueDepth, MIN_QUEUE_DEPTH, MAX_QUEUE_DEPTH);
    Checks.requireRange(
        SECTION + ".maxChunkBytes", maxChunkBytes, MIN_MAX_CHUNK_BYTES, MAX_MAX_CHUNK_BYTES);
    Checks.requireRange(
        SECTION + ".maxFileSegments",
        maxFileSegments,
        MIN_MAX_FILE_SEGMENTS,
        MAX_MAX_FILE_SEGMENTS);
    Checks.requireRange(
        SECTION + ".channelThreads", channelThreads, MIN_CHANNEL_THREADS, MAX_CHANNEL_THREADS);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code file} section reads as: engine {@value
   *     #DEFAULT_ENGINE}, {@value #DEFAULT_LANES} lane of queue depth {@value
   *     #DEFAULT_QUEUE_DEPTH}, 1 MiB chunks, {@value #DEFAULT_MAX_FILE_SEGMENTS} file segments and
   *     {@value #DEFAULT_CHANNEL_THREADS} FileChannel threads per lane
   */
  public static FileConfig defaults() {
    return new FileConfig(
        DEFAULT_ENGINE,
        DEFAULT_LANES,
        DEFAULT_QUEUE_DEPTH,
        DEFAULT_MAX_CHUNK_BYTES,
        DEFAULT_MAX_FILE_SEGMENTS,
        DEFAULT_CHANNEL_THREADS);
  }

  /**
   * A copy with {@link #engine()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param engine I/O engine of file segments: {@code "auto"}, {@code "io_uring"} or {@code
   *     "channel"}
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.engine} if it is {@code null} or not one of {@link
   *     #ENGINES}
   */
  public FileConfig withEngine(String engine) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  /**
   * A copy with {@link #lanes()} replaced and every other component kept; the new value is checked
   * as by the constructor.
   *
   * @param lanes ring lanes, each with its own io_uring (or FileChannel worker pool) and thread
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.lanes} if it is outside {@value #MIN_LANES}..{@value
   *     #MAX_LANES}
   */
  public FileConfig withLanes(int lanes) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  /**
   * A copy with {@link #queueDepth()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param queueDepth most operations one lane has in the kernel at once (its ring's submission
   *     entries)
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.queueDepth} if it is outside {@value
   *     #MIN_QUEUE_DEPTH}..{@value #MAX_QUEUE_DEPTH}
   */
  public FileConfig withQueueDepth(int queueDepth) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  /**
   * A copy with {@link #maxChunkBytes()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param maxChunkBytes largest byte range one operation moves, in bytes; longer tasks are cut
   *     into chunks
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.maxChunkBytes} if it is outside {@value
   *     #MIN_MAX_CHUNK_BYTES}..{@value #MAX_MAX_CHUNK_BYTES}
   */
  public FileConfig withMaxChunkBytes(int maxChunkBytes) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  /**
   * A copy with {@link #maxFileSegments()} replaced and every other component kept; the new value
   * is checked as by the constructor.
   *
   * @param maxFileSegments most open file segments (one per path) held at once, in segments
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.maxFileSegments} if it is outside {@value
   *     #MIN_MAX_FILE_SEGMENTS}..{@value #MAX_MAX_FILE_SEGMENTS}
   */
  public FileConfig withMaxFileSegments(int maxFileSegments) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  /**
   * A copy with {@link #channelThreads()} replaced and every other component kept; the new value is
   * checked as by the constructor.
   *
   * @param channelThreads threads per lane doing blocking positioned I/O when the engine is
   *     FileChannel
   * @return a new {@code FileConfig}; this one is unchanged
   * @throws ConfigException naming {@code file.channelThreads} if it is outside {@value
   *     #MIN_CHANNEL_THREADS}..{@value #MAX_CHANNEL_THREADS}
   */
  public FileConfig withChannelThreads(int channelThreads) {
    return new FileConfig(
        engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
  }

  static FileConfig read(ConfigReader r) {
    return new FileConfig(
        r.stringValue("engine", DEFAULT_ENGINE),
        r.intValue("lanes", DEFAULT_LANES, MIN_LANES, MAX_LANES),
        r.intValue("queueDepth", DEFAULT_QUEUE_DEPTH, MIN_QUEUE_DEPTH, MAX_QUEUE_DEPTH),
        r.intValue(
            "maxChunkBytes", DEFAULT_MAX_CHUNK_BYTES, MIN_MAX_CHUNK_BYTES, MAX_MAX_CHUNK_BYTES),
        r.intValue(
            "maxFileSegments",
            DEFAULT_MAX_FILE_SEGMENTS,
            MIN_MAX_FILE_SEGMENTS,
            MAX_MAX_FILE_SEGMENTS),
        r.intValue(
            "channelThreads", DEFAULT_CHANNEL_THREADS, MIN_CHANNEL_THREADS, MAX_CHANNEL_THREADS));
  }
}
