package io.orbite.engine;

import io.orbite.engine.spi.PeerChannel;
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
 * <p>Each RemoteSegment is a reference to its peer's entry in the engine's bounded segment table
 * (C9): the entry, and its endpoint charge, are reclaimed only once no RemoteSegment refers to it
 * and its peer incarnation is fenced or gone. {@link #close()} drops the reference at once; a
 * RemoteSegment that becomes unreachable drops it when the garbage collector notices.
 */
public final class RemoteSegment implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final SegmentDescriptor descriptor;
  private final List<RemoteRegion> regions;
  private final Map<Long, RemoteRegion> byId;
  private final PeerChannel channel;
  private final Cleaner.Cleanable reference;
  private volatile boolean closed;

  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel) {
    this(descriptor, regions, channel, () -> { });
  }

  /**
   * @param release run exactly once when this reference is dropped (by {@link #close()} or after
   *     the segment became unreachable); it must not refer to this segment
   */
  public RemoteSegment(SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel, Runnable release) {
    this.descriptor = descriptor;
    this.regions = List.copyOf(regions);
    this.byId = this.regions.stream().collect(Collectors.toMap(RemoteRegion::regionId, Function.identity()));
    this.channel = channel;
    this.reference = CLEANER.register(this, release);
  }

  /**
   * Drops this reference to the peer's table entry; later submissions naming it are refused
   * (INVALID_ARGUMENT). Tasks already admitted are not affected. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    reference.clean();
  }

  /** Whether {@link #close()} was called. */
  public boolean isClosed() {
    return closed;
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

  /** The transport channel to this peer incarnation (engine-internal). */
  public PeerChannel channel() {
    return channel;
  }

  @Override
  public String toString() {
    return "RemoteSegment(" + descriptor + ", " + regions.size() + " regions)";
  }
}
