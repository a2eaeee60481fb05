package io.orbite.config;

import java.util.List;

/**
 * The file transport (file segments over io_uring, or FileChannel positioned I/O). JSON section {@code file}.
 *
 * @param engine          which I/O engine file segments use: {@code "auto"} (io_uring when the kernel allows it,
 *                        else FileChannel), {@code "io_uring"} (refuse to open file segments if io_uring is
 *                        unavailable) or {@code "channel"} (always FileChannel positioned I/O). Default
 *                        {@value #DEFAULT_ENGINE}.
 * @param lanes           ring lanes: each owns one io_uring (or one FileChannel worker pool) and one pinned
 *                        thread. Default {@value #DEFAULT_LANES}; range {@value #MIN_LANES}..{@value #MAX_LANES}.
 * @param queueDepth      most operations one lane has in the kernel at once (its ring's submission entries).
 *                        Default {@value #DEFAULT_QUEUE_DEPTH}; range {@value #MIN_QUEUE_DEPTH}..{@value #MAX_QUEUE_DEPTH}.
 * @param maxChunkBytes   largest byte range one operation moves; longer tasks are cut into chunks of this size.
 *                        Default {@value #DEFAULT_MAX_CHUNK_BYTES} (1 MiB); range
 *                        {@value #MIN_MAX_CHUNK_BYTES}..{@value #MAX_MAX_CHUNK_BYTES} (4 KiB..1 GiB).
 * @param maxFileSegments most open file segments (one per path) at once. Default
 *                        {@value #DEFAULT_MAX_FILE_SEGMENTS}; range
 *                        {@value #MIN_MAX_FILE_SEGMENTS}..{@value #MAX_MAX_FILE_SEGMENTS}.
 * @param channelThreads  threads per lane doing blocking positioned I/O when the engine is FileChannel. Default
 *                        {@value #DEFAULT_CHANNEL_THREADS}; range {@value #MIN_CHANNEL_THREADS}..{@value #MAX_CHANNEL_THREADS}.
 */
public record FileConfig(String engine, int lanes, int queueDepth, int maxChunkBytes, int maxFileSegments,
                         int channelThreads) {
    /** JSON key of this section, and the path prefix of its messages. */
    static final String SECTION = "file";

    /** The accepted values of {@link #engine()}. */
    public static final List<String> ENGINES = List.of("auto", "io_uring", "channel");
    /** Default {@link #engine()}. */
    public static final String DEFAULT_ENGINE = "auto";

    public static final int DEFAULT_LANES = 1;
    public static final int MIN_LANES = 1;
    public static final int MAX_LANES = 64;

    public static final int DEFAULT_QUEUE_DEPTH = 64;
    public static final int MIN_QUEUE_DEPTH = 1;
    public static final int MAX_QUEUE_DEPTH = 4096;

    public static final int DEFAULT_MAX_CHUNK_BYTES = 1048576;
    public static final int MIN_MAX_CHUNK_BYTES = 4096;
    public static final int MAX_MAX_CHUNK_BYTES = 1073741824;

    public static final int DEFAULT_MAX_FILE_SEGMENTS = 64;
    public static final int MIN_MAX_FILE_SEGMENTS = 1;
    public static final int MAX_MAX_FILE_SEGMENTS = 65536;

    public static final int DEFAULT_CHANNEL_THREADS = 4;
    public static final int MIN_CHANNEL_THREADS = 1;
    public static final int MAX_CHANNEL_THREADS = 256;

    /** Validates every component. @throws ConfigException naming {@code file.<key>} */
    public FileConfig {
        Checks.requireNonNull(SECTION + ".engine", engine);
        if (!ENGINES.contains(engine)) {
            throw new ConfigException(SECTION + ".engine", "must be one of \"auto\", \"io_uring\", \"channel\", got "
                    + Checks.quote(engine));
        }
        Checks.requireRange(SECTION + ".lanes", lanes, MIN_LANES, MAX_LANES);
        Checks.requireRange(SECTION + ".queueDepth", queueDepth, MIN_QUEUE_DEPTH, MAX_QUEUE_DEPTH);
        Checks.requireRange(SECTION + ".maxChunkBytes", maxChunkBytes, MIN_MAX_CHUNK_BYTES, MAX_MAX_CHUNK_BYTES);
        Checks.requireRange(SECTION + ".maxFileSegments", maxFileSegments, MIN_MAX_FILE_SEGMENTS, MAX_MAX_FILE_SEGMENTS);
        Checks.requireRange(SECTION + ".channelThreads", channelThreads, MIN_CHANNEL_THREADS, MAX_CHANNEL_THREADS);
    }

    /** All components at their defaults. */
    public static FileConfig defaults() {
        return new FileConfig(DEFAULT_ENGINE, DEFAULT_LANES, DEFAULT_QUEUE_DEPTH, DEFAULT_MAX_CHUNK_BYTES,
                DEFAULT_MAX_FILE_SEGMENTS, DEFAULT_CHANNEL_THREADS);
    }

    public FileConfig withEngine(String engine) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    public FileConfig withLanes(int lanes) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    public FileConfig withQueueDepth(int queueDepth) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    public FileConfig withMaxChunkBytes(int maxChunkBytes) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    public FileConfig withMaxFileSegments(int maxFileSegments) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    public FileConfig withChannelThreads(int channelThreads) {
        return new FileConfig(engine, lanes, queueDepth, maxChunkBytes, maxFileSegments, channelThreads);
    }

    static FileConfig read(ConfigReader r) {
        return new FileConfig(
                r.stringValue("engine", DEFAULT_ENGINE),
                r.intValue("lanes", DEFAULT_LANES, MIN_LANES, MAX_LANES),
                r.intValue("queueDepth", DEFAULT_QUEUE_DEPTH, MIN_QUEUE_DEPTH, MAX_QUEUE_DEPTH),
                r.intValue("maxChunkBytes", DEFAULT_MAX_CHUNK_BYTES, MIN_MAX_CHUNK_BYTES, MAX_MAX_CHUNK_BYTES),
                r.intValue("maxFileSegments", DEFAULT_MAX_FILE_SEGMENTS, MIN_MAX_FILE_SEGMENTS, MAX_MAX_FILE_SEGMENTS),
                r.intValue("channelThreads", DEFAULT_CHANNEL_THREADS, MIN_CHANNEL_THREADS, MAX_CHANNEL_THREADS));
    }
}
