package io.orbite.engine.wire;

import io.orbite.engine.RemoteRegion;
import java.util.List;

/**
 * What a source says about itself in a DESCRIBE_RESPONSE.
 *
 * @param regions the ranges it publishes, each with its name when it has one
 * @param shared what a same-host peer needs to map the source's exported allocations; {@code null}
 *     when the source exports nothing through SHM
 * @param limits the largest single transfers the source takes; {@code null} when its answer carried
 *     none (an engine from before it was advertised)
 * @param engineName the source engine's {@code EngineConfig.name}; {@code ""} when its answer
 *     carried none (an engine from before it was sent)
 * @param ready false while the source's application has not marked it ready ({@code
 *     listen.readyAtStart} off and no {@code Engine.markReady()} yet): a requester does not open it
 *     then, it asks again; true otherwise, and for an engine from before readiness was sent
 */
public record Description(
    String host,
    int port,
    long epoch,
    List<RemoteRegion> regions,
    SharedExports shared,
    TransferLimits limits,
    String engineName,
    boolean ready) {
  /** Copies the regions; a null engine name reads as {@code ""}. */
  public Description {
    regions = List.copyOf(regions);
    engineName = engineName == null ? "" : engineName;
  }

  /** A ready description without an engine name (as an older engine's answer reads). */
  public Description(
      String host,
      int port,
      long epoch,
      List<RemoteRegion> regions,
      SharedExports shared,
      TransferLimits limits) {
    this(host, port, epoch, regions, shared, limits, "", true);
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
