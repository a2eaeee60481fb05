package io.orbite.engine;

import java.util.Objects;

/**
 * Identity of one engine incarnation: where it listens and the epoch drawn at its start. A
 * restarted engine at the same host and port has a different epoch (C3).
 */
public record SegmentDescriptor(String host, int port, long epoch) {
  public SegmentDescriptor {
    Objects.requireNonNull(host, "host");
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port must be 1..65535, got " + port);
    }
  }

  /** {@code host:port}, the form {@link TransferEngine#openSegment(String)} accepts. */
  public String endpoint() {
    return host + ":" + port;
  }

  @Override
  public String toString() {
    return endpoint() + "@" + Long.toHexString(epoch);
  }
}
