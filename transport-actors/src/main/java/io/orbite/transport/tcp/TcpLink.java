package io.orbite.transport.tcp;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.TransferLimits;
import io.orbite.transport.endpoint.EndpointLink;
import io.orbite.transport.endpoint.PeerBytes;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persistent data lanes to one peer incarnation (endpoint, epoch) and the channel over them:
 * what a TCP endpoint owns ({@link io.orbite.transport.endpoint.PeerEndpoint} runs its lifecycle).
 * Each lane is a {@link RequesterLane} on the lane runtime, in a slot of its own.
 *
 * <p>Self-healing: a lane whose connection breaks, or whose peer misses its keepalives, drains
 * alone (offering its READs to another lane; a WRITE that may have been sent is never replayed, C6)
 * and then its slot reconnects, after {@code tcp.reconnectInitialBackoffMillis}, doubling up to
 * {@code tcp.reconnectMaxBackoffMillis}, each step with up to 25% jitter. The new lane's HELLO must
 * be accepted by the same epoch: then it takes the slot ({@link PeerEvent.LaneRestored}). With no
 * lane working the channel's gate is RECONNECTING and tasks wait for a lane within their deadline.
 * A HELLO refused by another epoch fences the channel and tells the segment table, which fences the
 * peer's whole entry ({@link PeerEvent.PeerFenced}); a slot that cannot reconnect within {@code
 * tcp.reconnectGiveUpMillis} gives up, and when the last slot has, the gate closes PEER_LOST
 * ({@link PeerEvent.PeerLost}) and the link is drained. A lane ended by this engine (a close), or
 * by a frame that breaks the protocol, is not reconnected.
 */
final class TcpLink implements EndpointLink {
  private static final Logger LOG = LoggerFactory.getLogger(TcpLink.class);

  private final SegmentDescriptor peer;
  private final TransportContext context;
  private final TcpConfig tcp;
  private final FramePool frames;
  private final TcpPeerChannel channel;
  private final ChannelGate gate;

  /** Lanes started and not yet ended (old ones of a slot included, until they end). */
  private final Set<RequesterLane> alive = ConcurrentHashMap.newKeySet();

  /** Lanes running now. */
  private final AtomicInteger working = new AtomicInteger();

  /**
   * The slot that keeps trying a lost peer's endpoint (after it refused connections) to learn a
   * replacement; -1 while none does.
   */
  private final AtomicInteger watcher = new AtomicInteger(-1);

  /** Slots whose reconnection is under way. */
  private final AtomicInteger reconnecting = new AtomicInteger();

  private final CompletableFuture<List<String>> drained = new CompletableFuture<>();

  /**
   * Set by {@link #close}, under this link's monitor: no lane is reconnected or installed after.
   * Read without the monitor by {@link #healing}, which the channel calls under its own monitor
   * (the link takes the channel's monitor inside its own when it installs a lane, so the channel
   * must never wait for the link's).
   */
  private volatile boolean closing;

  /** The reason of the last lane lost, for the gate and events. */
  private volatile String lastLoss = "";

  /** Bytes copied over SHM to and from this peer and not yet reported on a keepalive. */
  private final PeerBytes shmReport;

  private TcpLink(
      SegmentDescriptor peer,
      TransferLimits peerLimits,
      List<Conduit> sockets,
      TransportContext context,
      Runnable fenced)
      throws IOException {
    EngineConfig config = context.config();
    this.peer = peer;
    this.context = context;
    this.tcp = config.tcp();
    this.frames = new FramePool();
    this.gate = new ChannelGate("the TCP channel to " + peer);
    this.shmReport = PeerBytes.of(context.counters(), peer);
    RequesterLane[] lanes = new RequesterLane[sockets.size()];
    SlicePlanner planner =
        new SlicePlanner(
            config.slicing().baseBlockBytes(),
            config.slicing().maxReadSlices(),
            config.slicing().maxWriteSlices());
    this.channel =
        new TcpPeerChannel(
            peer,
            gate,
            lanes,
            frames,
            planner,
            // Frames no longer than the peer takes: a longer one would break its lane's protocol.
            TransferLimits.framePayloadTowards(tcp.maxFramePayloadBytes(), peerLimits),
            mergeLimit(config, peerLimits),
            fenced,
            context.counters(),
            tcp.waitWhileReconnecting(),
            this::healing,
            this::sweepParkedWhileReconnecting);
    // The channel only keeps the array: its slots are filled now, each lane knowing the channel.
    for (int i = 0; i < lanes.length; i++) {
      lanes[i] = lane(i, sockets.get(i));
    }
  }

  private RequesterLane lane(int slot, Conduit socket) throws IOException {
    RequesterLane[] self = new RequesterLane[1];
    RequesterLane lane =
        new RequesterLane(
            "lane " + slot + " to " + peer,
            socket,
            peer.epoch(),
            tcp.maxFramePayloadBytes(),
            tcp.laneWindowFrames(),
            tcp.laneWindowBytes(),
            frames,
            gate,
            context.counters(),
            context.hooks(),
            tcp.keepaliveIntervalMillis(),
            tcp.livenessTimeoutMillis(),
            shmReport::take,
            cause -> laneEnded(slot, self[0], cause));
    self[0] = lane;
    if (tcp.retryReadOnOtherLane()) {
      lane.retryOn(channel::retry);
    }
    return lane;
  }

  /**
   * The most bytes the channel takes as one merged transfer: {@code merge.maxBytes} (0 with {@code
   * merge.enabled} off), no more than one frame to this peer (own limit and the peer's advertised
   * one), nor than the peer's advertised merge limit. One frame is the most one request to the
   * source carries, so merging beyond it would save nothing on the wire.
   */
  static long mergeLimit(EngineConfig config, TransferLimits peerLimits) {
    long own =
        Math.min(
            config.merge().requesterLimitBytes(),
            TransferLimits.framePayloadTowards(config.tcp().maxFramePayloadBytes(), peerLimits));
    return TransferLimits.mergeTowards(own, peerLimits);
  }

  /**
   * Connects {@code tcp.lanes} lanes to {@code peer} (each with its HELLO) and starts them; blocks.
   *
   * @param peerLimits what the peer's Describe answer advertised, or null when it advertised none
   *     (an older engine): this engine's own limits then apply
   * @param fenced told when the channel is fenced
   */
  static TcpLink open(
      SegmentDescriptor peer, TransferLimits peerLimits, TransportContext context, Runnable fenced)
      throws IOException {
    List<Conduit> sockets = new ArrayList<>();
    TcpLink link;
    try {
      for (int i = 0; i < context.config().tcp().lanes(); i++) {
        sockets.add(LaneConnector.connect(peer, i, context));
        context.counters().increment(EngineTally.Count.CONNECTIONS_OPENED);
      }
      link = new TcpLink(peer, peerLimits, sockets, context, fenced);
    } catch (IOException | RuntimeException e) {
      sockets.forEach(LaneConnector::closeQuietly);
      throw e;
    }
    for (RequesterLane lane : link.channel.lanes()) {
      link.start(lane);
    }
    return link;
  }

  private void start(RequesterLane lane) {
    alive.add(lane);
    working.incrementAndGet();
    LaneRuntime.start("orbite-tcp-" + lane.name(), lane);
  }

  /** Whether a lane may still come back: the link is not closing and some slot reconnects. */
  private boolean healing() {
    return !closing && gate.active() && (working.get() > 0 || reconnecting.get() > 0);
  }

  private void laneEnded(int slot, RequesterLane lane, Throwable cause) {
    alive.remove(lane);
    int left = working.decrementAndGet();
    boolean heal;
    synchronized (this) {
      heal =
          !closing && cause != null && !(cause instanceof FrameRejectedException) && gate.active();
      if (heal) {
        reconnecting.incrementAndGet();
      }
    }
    if (!heal) {
      if (cause != null) {
        LOG.info("a TCP lane to {} ended: {}", peer, cause.toString());
      }
      // Frames parked for this slot alone (a rule's lane mask) will not get it back.
      channel.parked().gone(slot);
      finishIfDone(cause == null ? null : cause.getMessage());
      return;
    }
    String reason = cause.getMessage() == null ? cause.toString() : cause.getMessage();
    lastLoss = reason;
    context.counters().increment(EngineTally.Count.LANES_LOST);
    LOG.info("TCP {} lost ({}); {} lane(s) left, reconnecting", lane.name(), reason, left);
    context
        .peerEvents()
        .publish(
            new PeerEvent.LaneLost(peer, Instant.now(), Transport.TCP, lane.name(), reason, left));
    if (left == 0) {
      gate.reconnecting(reason);
      sweepParkedWhileReconnecting();
    }
    schedule(slot, System.nanoTime(), 1, tcp.reconnectInitialBackoffMillis());
  }

  /** Tries slot {@code slot} again after {@code backoffMillis} (with up to 25% jitter). */
  private void schedule(int slot, long lostNanos, int attempt, long backoffMillis) {
    long jitter = (long) (backoffMillis * 0.25 * ThreadLocalRandom.current().nextDouble());
    CompletableFuture.delayedExecutor(
            backoffMillis + jitter, TimeUnit.MILLISECONDS, context.blockingIo())
        .execute(() -> attempt(slot, lostNanos, attempt, backoffMillis));
  }

  /** One reconnection attempt of a slot, on the blocking-I/O executor. */
  private void attempt(int slot, long lostNanos, int attempt, long backoffMillis) {
    boolean watching = watcher.get() == slot;
    if (closing || (!gate.active() && !(watching && gate.state() instanceof ChannelGate.Closed))) {
      // Closed by this engine, fenced, or lost and watched by another slot: this slot is done.
      reconnecting.decrementAndGet();
      channel.parked().gone(slot);
      finishIfDone(lastLoss);
      return;
    }
    Conduit socket;
    try {
      socket = LaneConnector.connect(peer, slot, context);
    } catch (TransferException e) {
      Long newer = LaneConnector.EpochRefused.of(e);
      if (newer != null) {
        replaced(newer);
        reconnecting.decrementAndGet();
        finishIfDone(e.getMessage());
        return;
      }
      if (working.get() == 0 && refused(e) && gate.active()) {
        // Nothing listens at the peer's endpoint: its process is gone. Work for it fails now
        // (PEER_LOST) instead of waiting; this slot keeps watching the endpoint, so that a
        // replacement that comes up there is learned (and fences the entry) with no open.
        if (gate.close(
            ChannelGate.Why.PEER_LOST,
            "its endpoint refuses connections (" + e.getMessage() + ")")) {
          watcher.compareAndSet(-1, slot);
          context.peerEvents().publish(new PeerEvent.PeerLost(peer, Instant.now(), gate.refusal()));
          channel.parked().failAll("TCP channel to " + peer);
        }
      }
      long outMillis = (System.nanoTime() - lostNanos) / 1_000_000L;
      if (outMillis >= tcp.reconnectGiveUpMillis()) {
        LOG.warn(
            "TCP lane {} to {}: gave up after {} attempts in {} ms: {}",
            slot,
            peer,
            attempt,
            outMillis,
            e.getMessage());
        reconnecting.decrementAndGet();
        channel.parked().gone(slot);
        giveUpIfLast(
            "no lane reconnected within "
                + tcp.reconnectGiveUpMillis()
                + " ms (tcp.reconnectGiveUpMillis; the last attempt: "
                + e.getMessage()
                + ")");
        return;
      }
      LOG.debug("TCP lane {} to {}: attempt {} failed: {}", slot, peer, attempt, e.getMessage());
      schedule(
          slot,
          lostNanos,
          attempt + 1,
          Math.min(tcp.reconnectMaxBackoffMillis(), backoffMillis * 2));
      return;
    }
    context.counters().increment(EngineTally.Count.CONNECTIONS_OPENED);
    RequesterLane lane;
    try {
      lane = lane(slot, socket);
    } catch (IOException e) {
      LaneConnector.closeQuietly(socket);
      schedule(slot, lostNanos, attempt + 1, tcp.reconnectMaxBackoffMillis());
      return;
    }
    synchronized (this) {
      if (closing || !gate.active()) {
        // Closed or fenced meanwhile, or a watched endpoint answering in the lost epoch's name
        // again: a lost channel never comes back (C18), so the connection is not used.
        LaneConnector.closeQuietly(socket);
        reconnecting.decrementAndGet();
        finishIfDone(lastLoss);
        return;
      }
      channel.install(slot, lane);
      start(lane);
      reconnecting.decrementAndGet();
    }
    gate.restored();
    channel.flush();
    long outage = (System.nanoTime() - lostNanos) / 1_000_000L;
    context.counters().increment(EngineTally.Count.LANES_RESTORED);
    LOG.info("TCP {} restored after {} ms ({} attempts)", lane.name(), outage, attempt);
    context
        .peerEvents()
        .publish(
            new PeerEvent.LaneRestored(
                peer, Instant.now(), Transport.TCP, lane.name(), outage, attempt));
  }

  /** Whether the connection attempt failed because nothing listens at the peer's endpoint. */
  private static boolean refused(TransferException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException && String.valueOf(t.getMessage()).contains("refused")) {
        return true;
      }
    }
    return false;
  }

  /** A reconnecting lane's HELLO was refused by {@code newer}: the peer was replaced. */
  private void replaced(long newer) {
    String reason =
        "the peer at "
            + peer.host()
            + ":"
            + peer.port()
            + " now runs epoch "
            + Long.toHexString(newer)
            + " (a reconnecting lane's HELLO was refused)";
    LOG.info("TCP channel to {}: {}", peer, reason);
    // The table fences the whole entry (every transport's channel) and publishes PeerFenced; the
    // channel is fenced here too, at once, so no task waits for a lane that cannot come.
    channel.fence(newer, reason);
    context.peerEvents().replaced(peer, newer);
    channel.parked().failAll("TCP channel to " + peer);
  }

  /** A slot gave up; if it was the last hope, the peer is lost. */
  private void giveUpIfLast(String reason) {
    if (working.get() == 0 && reconnecting.get() == 0) {
      if (gate.close(ChannelGate.Why.PEER_LOST, reason)) {
        context.peerEvents().publish(new PeerEvent.PeerLost(peer, Instant.now(), reason));
      }
    }
    finishIfDone(reason);
  }

  /**
   * Fails parked frames whose deadline passed or whose batch was cancelled, every few milliseconds
   * while the channel reconnects, and while frames are parked: those of a rule's lane mask wait for
   * their lanes while other lanes work (the channel starts this when it parks the first of them).
   */
  private void sweepParkedWhileReconnecting() {
    CompletableFuture.delayedExecutor(5, TimeUnit.MILLISECONDS, context.blockingIo())
        .execute(
            () -> {
              boolean left = channel.parked().sweep();
              if (gate.active() && (left || !gate.working())) {
                sweepParkedWhileReconnecting();
              }
            });
  }

  /**
   * Completes {@link #drained} once no lane runs and no slot reconnects: the channel's gate is
   * closed (PEER_LOST when the peer was lost, unless it was closed or fenced already) and parked
   * frames fail.
   */
  private void finishIfDone(String reason) {
    // A closing link does not wait for reconnection attempts under way: none of them holds a
    // task's frame, and one that connects after the close closes its socket unused.
    if (!alive.isEmpty() || (!closing && (reconnecting.get() > 0 || working.get() > 0))) {
      return;
    }
    if (!closing
        && gate.close(
            ChannelGate.Why.PEER_LOST,
            "every lane to it ended" + (reason == null ? "" : " (the last: " + reason + ")"))) {
      context
          .peerEvents()
          .publish(
              new PeerEvent.PeerLost(
                  peer, Instant.now(), reason == null ? "every lane ended" : reason));
    }
    channel.parked().failAll("TCP channel to " + peer);
    drained.complete(List.of());
  }

  @Override
  public PeerChannel channel() {
    return channel;
  }

  @Override
  public void close(String reason) {
    synchronized (this) {
      closing = true;
    }
    for (RequesterLane lane : channel.lanes()) {
      lane.close();
    }
    for (RequesterLane lane : alive) {
      lane.close();
    }
    finishIfDone(reason);
  }

  @Override
  public CompletionStage<List<String>> drained() {
    return drained;
  }

  @Override
  public List<String> running() {
    return LaneAgent.stillRunning(List.copyOf(alive));
  }

  @Override
  public Map<String, Long> charges() {
    long inflight = 0;
    long up = 0;
    for (RequesterLane lane : channel.lanes()) {
      inflight += lane.chargedBytes();
      up += lane.running() ? 1 : 0;
    }
    return Map.of(
        "lanes", up, "inflightBytes", inflight, "reconnecting", (long) reconnecting.get());
  }
}
