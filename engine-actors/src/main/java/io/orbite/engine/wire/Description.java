package io.orbite.engine.wire;

import io.orbite.engine.RemoteRegion;
import java.util.List;

/**
 * What a source says about itself in a DESCRIBE_RESPONSE.
 *
 * @param shared what a same-host peer needs to map the source's exported allocations; {@code null}
 *     when the source exports nothing through SHM
 */
public record Description(
    String host, int port, long epoch, List<RemoteRegion> regions, SharedExports shared) {
  public Description {
    regions = List.copyOf(regions);
  }

  /** A description without an SHM part. */
  public Description(String host, int port, long epoch, List<RemoteRegion> regions) {
    this(host, port, epoch, regions, null);
  }
}
