package io.orbite.engine;

import java.util.Objects;

/**
 * Identity of one engine incarnation: where it listens and the epoch drawn at its start. A
 * restarted engine at the same host and port has a different epoch (C3).
 *
 * @param host the host peers reach it at (127.0.0.1 for an engine listening on 0.0.0.0)
 * @param port the TCP port of its listener, 1 to 65535
 * @param epoch the nonzero random number drawn when the incarnation started
 */
public record SegmentDescriptor(String host, int port, long epoch) {
  /**
   * Checks the components.
   *
   * @throws NullPointerException if {@code host} is null
   * @throws IllegalArgumentException if {@code port} is outside 1..65535
   */
  public SegmentDescriptor {
    Objects.requireNonNull(host, "host");
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port must be 1..65535, got " + port);
    }
  }

  /**
   * {@code host:port}, the form {@link TransferEngine#openSegmentAsync(String)} accepts.
   *
   * @return the endpoint, without the epoch
   */
  public String endpoint() {
    return host + ":" + port;
  }

  @Override
  public String toString() {
    return endpoint() + "@" + Long.toHexString(epoch);
  }
}
