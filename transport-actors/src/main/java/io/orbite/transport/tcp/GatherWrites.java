package io.orbite.transport.tcp;

import io.orbite.engine.spi.Conduit;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Gathering writes that stay allocation-free on the data path. NIO's gathering write allocates a
 * releaser for every arena-backed buffer it is handed, on every call, even for bytes the socket
 * cannot take yet; so each call is offered only about what one call can move, and a lone buffer
 * (typically the rest of a large payload) goes through the one-buffer write, which allocates
 * nothing.
 */
final class GatherWrites {
  /** About the most one write call moves into a socket buffer. */
  static final long CALL_BYTES = 1L << 20;

  private GatherWrites() {}

  /** One write call over {@code buffers[start, end)}; returns the bytes written. */
  static long writeSome(Conduit channel, ByteBuffer[] buffers, int start, int end)
      throws IOException {
    int last = start;
    long offered = 0;
    while (last < end && offered < CALL_BYTES) {
      offered += buffers[last++].remaining();
    }
    return last - start == 1
        ? channel.write(buffers[start])
        : channel.write(buffers, start, last - start);
  }
}
