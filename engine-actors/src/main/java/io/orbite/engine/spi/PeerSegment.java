package io.orbite.engine.spi;

import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The engine's {@link RemoteSegment}: the API view of an opened peer (or file) plus what the batch
 * path needs to run a request on it: the channel of its own transport, the SHM channel when the
 * peer is on this host and exports memory, and the SegmentTable reference that {@link #close()}
 * drops. The SegmentTable and the transports make them; a batch finds a request's channel with
 * {@link #channelFor}.
 */
public final class PeerSegment implements RemoteSegment {
  private static final Cleaner CLEANER = Cleaner.create();

  /**
   * One reference to a table entry, shared by the copies the engine derives while opening (with or
   * without SHM); released once, by the first close or when no copy is reachable any more.
   */
  private static final class Reference {
    private final Cleaner.Cleanable cleanable;
    private volatile boolean closed;

    Reference(Runnable release) {
      this.cleanable = CLEANER.register(this, release);
    }
  }

  private final SegmentDescriptor descriptor;
  private final List<RemoteRegion> regions;
  private final Map<Long, RemoteRegion> byId;
  private final PeerChannel channel;
  private final SharedExports shared;
  private final Map<Long, SharedRegion> sharedById;

  /** The keys of {@link #sharedById}, sorted: looked up on every submission without boxing. */
  private final long[] sharedIds;

  private final PeerChannel sharedChannel;
  private final String sharedRefusal;
  private final PeerChannel rdmaChannel;
  private final String rdmaRefusal;

  /** The route UNSPEC reports when it falls back to TCP while this segment has no RDMA channel. */
  private final Route noRdmaRoute;

  private final Reference reference;
  private final String label;

  /**
   * A peer reached over {@code channel} only, without SHM, labelled by its descriptor; it is not
   * counted in the peer table and closing it releases nothing (engine-internal, and for tests).
   *
   * @param descriptor the peer incarnation
   * @param regions the ranges it published
   * @param channel the channel requests to it run on
   */
  public PeerSegment(
      SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel) {
    this(descriptor, regions, channel, null, () -> {});
  }

  /**
   * A segment named {@code label} in messages (a file segment: {@code "file /path"}); a peer's
   * label is its descriptor. Not counted in the peer table (engine-internal).
   *
   * @param descriptor the incarnation the segment belongs to (for a file segment, this engine's
   *     own)
   * @param regions the ranges requests may name
   * @param channel the channel requests to it run on
   * @param label what messages call the segment
   */
  public PeerSegment(
      SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel, String label) {
    this(
        descriptor,
        regions,
        channel,
        null,
        null,
        "not a peer with shared memory",
        new Reference(() -> {}),
        label,
        null,
        "not a peer reached over RDMA",
        Route.TCP_RDMA_NOT_ENABLED);
  }

  /**
   * A peer opened over TCP whose Describe answer carried {@code shared} (may be null)
   * (engine-internal: the segment table makes these).
   *
   * @param descriptor the peer incarnation, as Describe answered
   * @param regions the ranges it published
   * @param channel the TCP channel to it
   * @param shared what it exports through SHM, or null
   * @param release run exactly once when this reference is dropped (by {@link #close()} or after
   *     the segment and its derived copies became unreachable); it must not refer to the segment
   */
  public PeerSegment(
      SegmentDescriptor descriptor,
      List<RemoteRegion> regions,
      PeerChannel channel,
      SharedExports shared,
      Runnable release) {
    this(
        descriptor,
        regions,
        channel,
        shared,
        null,
        shared == null
            ? "the peer exports no memory through SHM"
            : "SHM to the peer was not opened",
        new Reference(release),
        descriptor.toString(),
        null,
        "RDMA is not enabled here (rdma.enabled is false)",
        Route.TCP_RDMA_NOT_ENABLED);
  }

  private PeerSegment(
      SegmentDescriptor descriptor,
      List<RemoteRegion> regions,
      PeerChannel channel,
      SharedExports shared,
      PeerChannel sharedChannel,
      String sharedRefusal,
      Reference reference,
      String label,
      PeerChannel rdmaChannel,
      String rdmaRefusal,
      Route noRdmaRoute) {
    this.label = label;
    this.rdmaChannel = rdmaChannel;
    this.rdmaRefusal = rdmaRefusal;
    this.noRdmaRoute = noRdmaRoute;
    this.descriptor = descriptor;
    this.regions = List.copyOf(regions);
    this.byId =
        this.regions.stream()
            .collect(Collectors.toMap(RemoteRegion::regionId, Function.identity()));
    this.channel = channel;
    this.shared = shared;
    this.sharedById = shared == null ? Map.of() : shared.byRegion();
    this.sharedIds = sharedById.keySet().stream().mapToLong(Long::longValue).sorted().toArray();
    this.sharedChannel = sharedChannel;
    this.sharedRefusal = sharedRefusal;
    this.reference = reference;
  }

  /**
   * This segment with its SHM channel (engine-internal).
   *
   * @param sharedChannel the channel the SHM transport opened to the peer's exported memory
   * @return a copy that shares this segment's table reference (closing either closes both)
   */
  public PeerSegment withSharedChannel(PeerChannel sharedChannel) {
    return new PeerSegment(
        descriptor,
        regions,
        channel,
        shared,
        sharedChannel,
        null,
        reference,
        label,
        rdmaChannel,
        rdmaRefusal,
        noRdmaRoute);
  }

  /**
   * This segment with its RDMA channel, or without one saying why, in an engine with RDMA enabled
   * (engine-internal; a segment never given one reports {@link Route#TCP_RDMA_NOT_ENABLED}).
   *
   * @param rdma the channel the RDMA transport opened to the peer, or null
   * @param why why there is none (when {@code rdma} is null), as {@link #unreachableBecause} then
   *     reports for RDMA requests
   * @return a copy that shares this segment's table reference (closing either closes both)
   */
  public PeerSegment withRdmaChannel(PeerChannel rdma, String why) {
    return new PeerSegment(
        descriptor,
        regions,
        channel,
        shared,
        sharedChannel,
        sharedRefusal,
        reference,
        label,
        rdma,
        rdma != null ? null : why,
        Route.TCP_NO_RDMA_ENDPOINT);
  }

  /**
   * This segment without SHM, saying why (engine-internal).
   *
   * @param why why SHM is not used, as {@link #unreachableBecause} then reports for SHM requests
   * @return a copy that shares this segment's table reference (closing either closes both)
   */
  public PeerSegment withoutSharedChannel(String why) {
    return new PeerSegment(
        descriptor,
        regions,
        channel,
        shared,
        null,
        why,
        reference,
        label,
        rdmaChannel,
        rdmaRefusal,
        noRdmaRoute);
  }

  /**
   * Drops this reference to the peer's table entry; later submissions naming it are refused
   * (INVALID_ARGUMENT). Tasks already admitted are not affected. Idempotent.
   */
  @Override
  public void close() {
    reference.closed = true;
    reference.cleanable.clean();
  }

  /**
   * Whether {@link #close()} was called.
   *
   * @return true once this segment, or a copy sharing its table reference, was closed
   */
  @Override
  public boolean isClosed() {
    return reference.closed;
  }

  /**
   * The incarnation this segment names.
   *
   * @return the peer's endpoint and epoch as Describe answered (a file segment: this engine's own)
   */
  @Override
  public SegmentDescriptor descriptor() {
    return descriptor;
  }

  /**
   * The ranges the peer published when it was described; a file segment has one, {@link
   * TransferEngine#FILE_REGION_ID}.
   *
   * @return an unmodifiable list, in the order the Describe answer gave them
   */
  @Override
  public List<RemoteRegion> regions() {
    return regions;
  }

  /**
   * The published range with id {@code regionId}.
   *
   * @param regionId the region's id
   * @return the range, or empty when the peer did not publish it
   */
  @Override
  public Optional<RemoteRegion> region(long regionId) {
    return Optional.ofNullable(byId.get(regionId));
  }

  /**
   * What messages call this segment: the peer's descriptor, or {@code "file <path>"}.
   *
   * @return the label
   */
  @Override
  public String label() {
    return label;
  }

  /**
   * The channel of the segment's own transport (TCP to a peer, or the file transport)
   * (engine-internal).
   *
   * @return the channel, never null
   */
  public PeerChannel channel() {
    return channel;
  }

  /**
   * What the peer's Describe answer said about its shared memory, or {@code null}
   * (engine-internal).
   *
   * @return the peer's SHM exports, or {@code null} when it exports none (and for a file segment)
   */
  public SharedExports sharedExports() {
    return shared;
  }

  /**
   * Whether requests to {@code regionId} can go through SHM (same host, exported, proven openable).
   *
   * @param regionId the region's id
   * @return true when this segment has an SHM channel and the peer exports that region through it
   */
  @Override
  public boolean sharedReachable(long regionId) {
    return sharedChannel != null && Arrays.binarySearch(sharedIds, regionId) >= 0;
  }

  /**
   * The channel a request for {@code regionId} over {@code transport} runs on, or {@code null} when
   * that transport cannot reach it (then {@link #unreachableBecause} says why). UNSPEC picks SHM
   * for a region the peer exports to this host, else RDMA when the segment's RDMA channel has a
   * healthy rail pair, else TCP (engine-internal).
   *
   * @param transport the transport the request names
   * @param regionId the region it names
   * @return the channel to run the request on, or {@code null}
   */
  public PeerChannel channelFor(Transport transport, long regionId) {
    return switch (transport) {
      case UNSPEC ->
          sharedReachable(regionId)
              ? sharedChannel
              : rdmaChannel != null && rdmaChannel.healthy() ? rdmaChannel : channel;
      case SHM -> sharedReachable(regionId) ? sharedChannel : null;
      case RDMA -> rdmaChannel;
      default -> transport == channel.transport() ? channel : null;
    };
  }

  /**
   * Why a request naming {@code transport} runs on {@code chosen}, the channel {@link #channelFor}
   * gave it (engine-internal). Derived from the chosen channel, so it agrees with that choice even
   * when rail health changed since.
   *
   * @param transport the transport the request names
   * @param chosen what {@link #channelFor} returned for it, not null
   * @return {@link Route#REQUESTED} unless {@code transport} is UNSPEC, else the step that chose
   */
  public Route routeFor(Transport transport, PeerChannel chosen) {
    if (transport != Transport.UNSPEC) {
      return Route.REQUESTED;
    }
    return switch (chosen.transport()) {
      case SHM -> Route.SHM_SAME_HOST;
      case RDMA -> Route.RDMA_HEALTHY_RAIL;
      case FILE -> Route.FILE_SEGMENT;
      default -> rdmaChannel != null ? Route.TCP_NO_HEALTHY_RAIL : noRdmaRoute;
    };
  }

  /**
   * Why {@link #channelFor} has no channel for this transport and region.
   *
   * @param transport the transport the request names
   * @param regionId the region it names
   * @return a sentence for the refusal's message
   */
  @Override
  public String unreachableBecause(Transport transport, long regionId) {
    if (transport == Transport.RDMA) {
      return rdmaRefusal != null ? rdmaRefusal : "its RDMA endpoint is closed";
    }
    if (transport != Transport.SHM) {
      return "it is reached over " + channel.transport() + ", not " + transport;
    }
    if (sharedChannel == null) {
      return sharedRefusal;
    }
    return "region "
        + regionId
        + " is not exported through SHM (only engine-allocated memory of an engine with "
        + "shm.enabled is)";
  }

  @Override
  public String toString() {
    return "RemoteSegment("
        + label
        + ", "
        + regions.size()
        + " regions"
        + (sharedChannel != null ? ", SHM" : "")
        + (rdmaChannel != null ? ", RDMA" : "")
        + ")";
  }
}
