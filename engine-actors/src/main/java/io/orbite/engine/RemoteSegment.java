package io.orbite.engine;

import io.orbite.engine.spi.PeerChannel;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * An opened peer: its identity (endpoint and epoch, as Describe answered) and the ranges it
 * published then. Requests name a region of it; the peer re-checks authority on every request,
 * so a snapshot never grants more than the live registration (C2).
 */
public final class RemoteSegment {
  private final SegmentDescriptor descriptor;
  private final List<RemoteRegion> regions;
  private final Map<Long, RemoteRegion> byId;
  private final PeerChannel channel;
  private final String label;

  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel) {
    this(descriptor, regions, channel, descriptor.toString());
  }

  /**
   * A segment named {@code label} in messages (a file segment: {@code "file /path"}); a peer's
   * label is its descriptor.
   */
  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel, String label) {
    this.label = label;
    this.descriptor = descriptor;
    this.regions = List.copyOf(regions);
    this.byId = this.regions.stream().collect(Collectors.toMap(RemoteRegion::regionId, Function.identity()));
    this.channel = channel;
  }

  public SegmentDescriptor descriptor() {
    return descriptor;
  }

  public List<RemoteRegion> regions() {
    return regions;
  }

  public Optional<RemoteRegion> region(long regionId) {
    return Optional.ofNullable(byId.get(regionId));
  }

  /** What messages call this segment: the peer's descriptor, or {@code "file <path>"}. */
  public String label() {
    return label;
  }

  /** The transport channel to this peer incarnation (engine-internal). */
  public PeerChannel channel() {
    return channel;
  }

  @Override
  public String toString() {
    return "RemoteSegment(" + label + ", " + regions.size() + " regions)";
  }
}
