package io.orbite.engine.spi;

import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The engine's {@link RemoteSegment}: the API view of an opened peer (or file) plus the ordered
 * channels requests to it run on, behind one routing step ({@link #route}). Its first channel is
 * the segment's own (TCP to a peer, FILE for a file); the others were opened by further transports
 * (SHM for a same-host peer, RDMA), each reaching every region or only some. The SegmentTable and
 * the transports make segments; a batch routes each request once, in {@code RequestValidator}, and
 * admits it on the channel that routing chose.
 *
 * <p>Longer than 500 lines: the API view (regions by id and by name, the reopen's regions gone) and
 * the routing step share the segment's immutable state, and each derived copy ({@code withChannel},
 * {@code without}, {@code reopenedFrom}) must carry all of it.
 */
public final class PeerSegment implements RemoteSegment {
  private static final Cleaner CLEANER = Cleaner.create();

  /**
   * One reference to a table entry, shared by the copies the engine derives while opening; released
   * once, by the first close or when no copy is reachable any more.
   */
  private static final class Reference {
    private final Cleaner.Cleanable cleanable;
    private volatile boolean closed;

    Reference(Runnable release) {
      this.cleanable = CLEANER.register(this, release);
    }
  }

  /**
   * A channel of the segment and the regions it reaches.
   *
   * @param channel the channel
   * @param regions the region ids it reaches, sorted; null: every region of the segment
   */
  private record Way(
      PeerChannel channel, long[] regions, Routing requested, Routing chosen, Routing policy) {
    Way(PeerChannel channel, long[] regions) {
      this(
          channel,
          regions,
          new Routing(channel, Route.REQUESTED, null),
          new Routing(channel, Routes.chosen(channel.transport()), null),
          new Routing(channel, Route.POLICY, null));
    }

    boolean reaches(long regionId) {
      return regions == null || Arrays.binarySearch(regions, regionId) >= 0;
    }
  }

  /**
   * What the routing step chose for one request: the channel it runs on and why, or, when no
   * channel of the segment can carry it, why not.
   *
   * @param channel the channel, or null
   * @param route why it runs there (null with no channel)
   * @param refusal why no channel can carry it (null with a channel)
   */
  public record Routing(PeerChannel channel, Route route, String refusal) {}

  private final SegmentDescriptor descriptor;
  private final List<RemoteRegion> regions;
  private final Map<Long, RemoteRegion> byId;
  private final Map<String, RemoteRegion> byName;
  private final String engineName;
  private final String label;
  private final Reference reference;

  /** The segment's own channel: where UNSPEC falls back, and whose fence fences the segment. */
  private final PeerChannel base;

  /** The further channels, in the order UNSPEC tries them. */
  private final List<Way> ways;

  /** Why each transport tried for this segment has no channel here. */
  private final Map<Transport, String> absent;

  /** The regions of the segment this one reopened that the peer no longer publishes. */
  private final List<RemoteRegion> gone;

  /** What {@link #route} answers, made once: routing a request allocates nothing. */
  private final Routing baseRequested;

  private final Routing basePolicy;
  private final Routing fellBack;
  private final Routing fellBackUnhealthy;
  private final Routing failedOver;

  private PeerSegment(
      SegmentDescriptor descriptor,
      List<RemoteRegion> regions,
      String engineName,
      String label,
      Reference reference,
      PeerChannel base,
      List<Way> ways,
      Map<Transport, String> absent,
      List<RemoteRegion> gone) {
    this.descriptor = descriptor;
    this.regions = List.copyOf(regions);
    this.byId =
        this.regions.stream()
            .collect(Collectors.toMap(RemoteRegion::regionId, Function.identity()));
    this.byName =
        this.regions.stream()
            .filter(r -> r.name() != null)
            .collect(Collectors.toMap(RemoteRegion::name, Function.identity()));
    this.engineName = engineName == null ? "" : engineName;
    this.label = label;
    this.reference = reference;
    this.base = base;
    this.ways = List.copyOf(ways);
    this.absent = absent;
    this.gone = List.copyOf(gone);
    this.baseRequested = new Routing(base, Route.REQUESTED, null);
    this.basePolicy = new Routing(base, Route.POLICY, null);
    this.fellBack = new Routing(base, Routes.fellBack(base.transport(), false, absent), null);
    this.fellBackUnhealthy =
        new Routing(base, Routes.fellBack(base.transport(), true, absent), null);
    this.failedOver = new Routing(base, Route.FAILED_OVER, null);
  }

  /**
   * A peer reached over {@code channel} only, labelled by its descriptor; it is not counted in the
   * peer table and closing it releases nothing (engine-internal, and for tests).
   *
   * @param descriptor the peer incarnation
   * @param regions the ranges it published
   * @param channel the channel requests to it run on
   */
  public PeerSegment(
      SegmentDescriptor descriptor, List<RemoteRegion> regions, PeerChannel channel) {
    this(descriptor, regions, channel, descriptor.toString(), () -> {});
  }

  /**
   * A segment over its own channel, named {@code label} in messages (a peer's descriptor, or {@code
   * "file /path"}), whose table reference {@code release} drops (engine-internal).
   *
   * @param descriptor the incarnation the segment belongs to (for a file segment, this engine's
   *     own)
   * @param regions the ranges requests may name
   * @param channel the segment's own channel (TCP to a peer, FILE for a file)
   * @param label what messages call the segment
   * @param release run exactly once when this reference is dropped (by {@link #close()} or after
   *     the segment and its derived copies became unreachable); it must not refer to the segment
   */
  public PeerSegment(
      SegmentDescriptor descriptor,
      List<RemoteRegion> regions,
      PeerChannel channel,
      String label,
      Runnable release) {
    this(descriptor, regions, "", channel, label, release);
  }

  /**
   * A peer's segment over its own channel, with the name its engine gave in Describe
   * (engine-internal).
   *
   * @param descriptor the incarnation the segment belongs to
   * @param regions the ranges requests may name, with their names
   * @param engineName the peer engine's name as Describe gave it; {@code ""} when it gave none
   * @param channel the segment's own channel
   * @param label what messages call the segment
   * @param release run exactly once when this reference is dropped, as for {@link
   *     #PeerSegment(SegmentDescriptor, List, PeerChannel, String, Runnable)}
   */
  public PeerSegment(
      SegmentDescriptor descriptor,
      List<RemoteRegion> regions,
      String engineName,
      PeerChannel channel,
      String label,
      Runnable release) {
    this(
        descriptor,
        regions,
        engineName,
        label,
        new Reference(release),
        channel,
        List.of(),
        new EnumMap<>(Transport.class),
        List.of());
  }

  /**
   * This segment with one more channel, tried after those it has (engine-internal).
   *
   * @param channel a channel another transport opened to the same incarnation
   * @param reaches the region ids it reaches, or null for every region
   * @return a copy that shares this segment's table reference (closing either closes both)
   */
  public PeerSegment withChannel(PeerChannel channel, long[] reaches) {
    List<Way> more = new ArrayList<>(ways);
    long[] sorted = reaches == null ? null : reaches.clone();
    if (sorted != null) {
      Arrays.sort(sorted);
    }
    more.add(new Way(channel, sorted));
    Map<Transport, String> why = new EnumMap<>(Transport.class);
    why.putAll(absent);
    why.remove(channel.transport());
    return new PeerSegment(
        descriptor, regions, engineName, label, reference, base, more, why, gone);
  }

  /**
   * This segment saying why {@code transport} has no channel to it (engine-internal).
   *
   * @param transport a transport tried for this segment
   * @param why why it has no channel, as {@link #unreachableBecause} then reports
   * @return a copy that shares this segment's table reference
   */
  public PeerSegment without(Transport transport, String why) {
    Map<Transport, String> more = new EnumMap<>(Transport.class);
    more.putAll(absent);
    more.put(transport, why);
    return new PeerSegment(
        descriptor, regions, engineName, label, reference, base, ways, more, gone);
  }

  /**
   * This segment as the answer to {@link io.orbite.engine.Engine#reopen} of {@code old}: the same
   * region ids looked up again (engine-internal).
   *
   * @param old the segment that was reopened
   * @return a copy that shares this segment's table reference, whose {@link #regionsGone()} lists
   *     the regions of {@code old} whose ids this segment's peer no longer publishes
   */
  public PeerSegment reopenedFrom(RemoteSegment old) {
    List<RemoteRegion> missing = new ArrayList<>();
    for (RemoteRegion r : old.regions()) {
      if (!byId.containsKey(r.regionId())) {
        missing.add(r);
      }
    }
    return new PeerSegment(
        descriptor, regions, engineName, label, reference, base, ways, absent, missing);
  }

  /**
   * The routing step: the channel a request naming {@code transport} and {@code regionId} runs on,
   * and why. A named transport runs on its channel when it has one that reaches the region. UNSPEC
   * takes the first further channel that reaches the region and is healthy now (SHM before RDMA),
   * else the segment's own. Run once per request, at submit; admission uses what it chose.
   *
   * @param transport the transport the request names
   * @param regionId the region it names
   * @return the routing, with a channel or a refusal
   */
  public Routing route(Transport transport, long regionId) {
    if (transport == Transport.UNSPEC) {
      boolean skippedUnhealthy = false;
      for (Way w : ways) {
        if (!w.reaches(regionId)) {
          continue;
        }
        if (w.channel().healthy()) {
          return w.chosen();
        }
        skippedUnhealthy |= Routes.hasRails(w.channel().transport());
      }
      return skippedUnhealthy ? fellBackUnhealthy : fellBack;
    }
    if (base.transport() == transport) {
      return baseRequested;
    }
    for (Way w : ways) {
      if (w.channel().transport() == transport && w.reaches(regionId)) {
        return w.requested();
      }
    }
    return new Routing(null, null, unreachableBecause(transport, regionId));
  }

  /**
   * The routing step for a transport a policy rule names ({@link Route#POLICY}): the channel of
   * {@code transport} when it reaches {@code regionId} and takes work now (for RDMA, with a healthy
   * rail pair: {@link PeerChannel#healthy()}). Allocates nothing.
   *
   * @param transport a transport the rule names
   * @param regionId the region the request names
   * @return the routing, or null when that transport cannot carry the request now ({@link
   *     #unavailableBecause} says why)
   */
  public Routing policyRoute(Transport transport, long regionId) {
    if (base.transport() == transport) {
      return base.healthy() ? basePolicy : null;
    }
    for (Way w : ways) {
      if (w.channel().transport() == transport && w.reaches(regionId) && w.channel().healthy()) {
        return w.policy();
      }
    }
    return null;
  }

  /**
   * Why {@link #policyRoute} finds no channel of {@code transport} for this region now.
   *
   * @param transport a transport a policy rule names
   * @param regionId the region the request names
   * @return a sentence for the refusal's message
   */
  public String unavailableBecause(Transport transport, long regionId) {
    if (base.transport() == transport) {
      return base.gate().refusal();
    }
    for (Way w : ways) {
      if (w.channel().transport() == transport && w.reaches(regionId)) {
        return Routes.unhealthy(w.channel());
      }
    }
    return unreachableBecause(transport, regionId);
  }

  /**
   * The routing step for a task that one of the further channels ({@code failed}) failed drained
   * with nothing posted: the segment's own channel (TCP to a peer), which reaches every region of
   * the same incarnation, when it takes work now. Run when the failed attempt's last receipt came,
   * on the thread that delivered it; it only reads the gate. Which failures qualify is the batch's
   * rule, not the segment's.
   *
   * @param failed the channel that failed the task
   * @return the segment's own channel with {@link Route#FAILED_OVER}, or a refusal saying why not
   *     (the task failed on that very channel, or it is closed or fenced)
   */
  public Routing failover(PeerChannel failed) {
    if (failed == base) {
      return new Routing(null, null, "the task failed on " + label + "'s own channel");
    }
    if (!base.gate().active()) {
      return new Routing(null, null, base.gate().refusal());
    }
    return failedOver;
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
   * The published range registered under {@code name}, as the Describe answer named it.
   *
   * @param name the region's name
   * @return the range, or empty when the peer published none under that name
   */
  @Override
  public Optional<RemoteRegion> region(String name) {
    return Optional.ofNullable(name == null ? null : byName.get(name));
  }

  /**
   * The peer engine's name as its Describe answer gave it.
   *
   * @return the name; {@code ""} for a file segment or an engine that sent none
   */
  @Override
  public String engineName() {
    return engineName;
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
   * The regions of the segment this one was reopened from that its peer no longer publishes.
   *
   * @return empty unless this segment is the answer of {@link io.orbite.engine.Engine#reopen}
   */
  @Override
  public List<RemoteRegion> regionsGone() {
    return gone;
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
   * The segment's own channel (TCP to a peer, or the file transport) (engine-internal).
   *
   * @return the channel, never null
   */
  public PeerChannel channel() {
    return base;
  }

  /**
   * The channels of the segment, its own first (engine-internal).
   *
   * @return every channel requests to it may run on
   */
  public List<PeerChannel> channels() {
    List<PeerChannel> all = new ArrayList<>(ways.size() + 1);
    all.add(base);
    ways.forEach(w -> all.add(w.channel()));
    return all;
  }

  /**
   * Whether requests to {@code regionId} can go through SHM (same host, exported, proven openable).
   *
   * @param regionId the region's id
   * @return true when this segment has an SHM channel that reaches that region
   */
  @Override
  public boolean sharedReachable(long regionId) {
    for (Way w : ways) {
      if (w.channel().transport() == Transport.SHM && w.reaches(regionId)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Why {@link #route} finds no channel of {@code transport} for this region.
   *
   * @param transport the transport the request names
   * @param regionId the region it names
   * @return a sentence for the refusal's message
   */
  @Override
  public String unreachableBecause(Transport transport, long regionId) {
    for (Way w : ways) {
      if (w.channel().transport() == transport) {
        return Routes.notReached(transport, regionId);
      }
    }
    String why = absent.get(transport);
    if (why != null) {
      return why;
    }
    return Routes.neverTried(transport, base.transport());
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("RemoteSegment(").append(label);
    b.append(", ").append(regions.size()).append(" regions");
    for (Way w : ways) {
      b.append(", ").append(w.channel().transport());
    }
    return b.append(")").toString();
  }
}
