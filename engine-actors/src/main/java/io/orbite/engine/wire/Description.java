package io.orbite.engine.wire;

import io.orbite.engine.RemoteRegion;
import java.util.List;

/**
 * What a source says about itself in a DESCRIBE_RESPONSE.
 *
 * @param shared what a same-host peer needs to map the source's exported allocations; {@code null}
 *     when the source exports nothing through SHM
 * @param limits the largest single transfers the source takes; {@code null} when its answer carried
 *     none (an engine from before it was advertised)
 */
public record Description(
    String host,
    int port,
    long epoch,
    List<RemoteRegion> regions,
    SharedExports shared,
    TransferLimits limits) {
  public Description {
    regions = List.copyOf(regions);
  }

  /** A description that advertises no limits (as an older engine's answer reads). */
  public Description(
      String host, int port, long epoch, List<RemoteRegion> regions, SharedExports shared) {
    this(host, port, epoch, regions, shared, null);
  }

  /** A description without an SHM part. */
  public Description(String host, int port, long epoch, List<RemoteRegion> regions) {
    this(host, port, epoch, regions, null, null);
  }
}
