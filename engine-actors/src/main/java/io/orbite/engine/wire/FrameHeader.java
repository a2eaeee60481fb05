package io.orbite.engine.wire;

/**
 * A decoded frame header. The data path reads fields straight from its buffers through {@link
 * FrameCodec}; this record is for the control plane and tests.
 */
public record FrameHeader(
    FrameType type,
    int status,
    long payloadLength,
    long requestId,
    long epoch,
    long regionId,
    long offset,
    long count) {}
