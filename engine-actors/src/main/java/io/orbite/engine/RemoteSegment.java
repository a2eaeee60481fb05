package io.orbite.engine;

import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * An opened peer: its identity (endpoint and epoch, as Describe answered) and the ranges it
 * published then. Requests name a region of it; the peer re-checks authority on every request,
 * so a snapshot never grants more than the live registration (C2).
 *
 * <p>Every opened peer has a TCP channel. A peer on the same host that exports memory through SHM,
 * and whose memory this engine proved it can open, also has an SHM channel; {@link #channelFor}
 * picks one per request (UNSPEC: SHM for an exported region, else TCP).
 *
 * <p>Each RemoteSegment is a reference to its peer's entry in the engine's bounded segment table
 * (C9): the entry, and its endpoint charge, are reclaimed only once no RemoteSegment refers to it
 * and its peer incarnation is fenced or gone. {@link #close()} drops the reference at once; a
 * RemoteSegment that becomes unreachable drops it when the garbage collector notices.
 */
public final class RemoteSegment implements AutoCloseable {
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
  private final PeerChannel sharedChannel;
  private final String sharedRefusal;
  private final Reference reference;
  private final String label;

  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel) {
    this(descriptor, regions, channel, null, () -> { });
  }

  /**
   * A segment named {@code label} in messages (a file segment: {@code "file /path"}); a peer's
   * label is its descriptor. Not counted in the peer table.
   */
  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel, String label) {
    this(descriptor, regions, channel, null, null, "not a peer with shared memory", new Reference(() -> { }), label);
  }

  /**
   * A peer opened over TCP whose Describe answer carried {@code shared} (may be null).
   *
   * @param release run exactly once when this reference is dropped (by {@link #close()} or after
   *     the segment and its derived copies became unreachable); it must not refer to the segment
   */
  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel,
      SharedExports shared, Runnable release) {
    this(descriptor, regions, channel, shared, null,
        shared == null ? "the peer exports no memory through SHM" : "SHM to the peer was not opened",
        new Reference(release), descriptor.toString());
  }

  private RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel,
      SharedExports shared, PeerChannel sharedChannel, String sharedRefusal, Reference reference, String label) {
    this.label = label;
    this.descriptor = descriptor;
    this.regions = List.copyOf(regions);
    this.byId = this.regions.stream().collect(Collectors.toMap(RemoteRegion::regionId, Function.identity()));
    this.channel = channel;
    this.shared = shared;
    this.sharedById = shared == null ? Map.of() : shared.byRegion();
    this.sharedChannel = sharedChannel;
    this.sharedRefusal = sharedRefusal;
    this.reference = reference;
  }

  /** This segment with its SHM channel (engine-internal). */
  public RemoteSegment withSharedChannel(PeerChannel sharedChannel) {
    return new RemoteSegment(descriptor, regions, channel, shared, sharedChannel, null, reference, label);
  }

  /** This segment without SHM, saying why (engine-internal). */
  public RemoteSegment withoutSharedChannel(String why) {
    return new RemoteSegment(descriptor, regions, channel, shared, null, why, reference, label);
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

  /** Whether {@link #close()} was called. */
  public boolean isClosed() {
    return reference.closed;
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

  /** The channel of the segment's own transport (TCP to a peer, or the file transport) (engine-internal). */
  public PeerChannel channel() {
    return channel;
  }

  /** What the peer's Describe answer said about its shared memory, or {@code null} (engine-internal). */
  public SharedExports sharedExports() {
    return shared;
  }

  /** Whether requests to {@code regionId} can go through SHM (same host, exported, proven openable). */
  public boolean sharedReachable(long regionId) {
    return sharedChannel != null && sharedById.containsKey(regionId);
  }

  /**
   * The channel a request for {@code regionId} over {@code transport} runs on, or {@code null} when
   * that transport cannot reach it (then {@link #unreachableBecause} says why). UNSPEC picks SHM for
   * a region the peer exports to this host, otherwise TCP (engine-internal).
   */
  public PeerChannel channelFor(Transport transport, long regionId) {
    return switch (transport) {
      case UNSPEC -> sharedReachable(regionId) ? sharedChannel : channel;
      case SHM -> sharedReachable(regionId) ? sharedChannel : null;
      default -> transport == channel.transport() ? channel : null;
    };
  }

  /** Why {@link #channelFor} has no channel for this transport and region. */
  public String unreachableBecause(Transport transport, long regionId) {
    if (transport != Transport.SHM) {
      return "it is reached over " + channel.transport() + ", not " + transport;
    }
    if (sharedChannel == null) {
      return sharedRefusal;
    }
    return "region " + regionId + " is not exported through SHM (only engine-allocated memory of an engine with "
        + "shm.enabled is)";
  }

  @Override
  public String toString() {
    return "RemoteSegment(" + label + ", " + regions.size() + " regions" + (sharedChannel != null ? ", SHM" : "")
        + ")";
  }
}
