package io.orbite.transport.shm;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.engine.wire.TransferLimits;
import io.orbite.nativebind.HostIdentity;
import io.orbite.transport.endpoint.EndpointLink;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneRuntime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SHM path to one same-host peer incarnation: the proof that its memory opens from here (its
 * token), the {@code shm.lanes} copy lanes with the mappings each holds, and the channel batches
 * dispatch to; what an SHM endpoint owns ({@link io.orbite.transport.endpoint.PeerEndpoint} runs
 * its lifecycle). Drained once every lane has ended.
 */
final class ShmLink implements EndpointLink {
  private static final Logger LOG = LoggerFactory.getLogger(ShmLink.class);

  private final SegmentDescriptor peer;
  private final List<ShmLane> lanes = new ArrayList<>();
  private final ShmPeerChannel channel;
  private final AtomicInteger running;
  private final CompletableFuture<List<String>> drained = new CompletableFuture<>();

  private ShmLink(
      SegmentDescriptor peer,
      SharedExports exports,
      long mergeLimitBytes,
      int tokenFd,
      TransportContext context,
      Runnable fenced) {
    this.peer = peer;
    int laneCount = context.config().shm().lanes();
    this.running = new AtomicInteger(laneCount);
    ChannelGate gate = new ChannelGate("the SHM channel to " + peer);
    Map<Long, SharedRegion> table = ShmPeerChannel.exportTable(exports);
    ShmMappings.Token token = new ShmMappings.Token(tokenFd, laneCount);
    ShmPeerChannel[] channelOf = new ShmPeerChannel[1];
    for (int i = 0; i < laneCount; i++) {
      String name = (laneCount == 1 ? "shm lane to " : "shm lane " + i + " to ") + peer;
      lanes.add(
          new ShmLane(
              name,
              peer,
              gate,
              new ShmMappings(
                  name,
                  exports.host(),
                  table,
                  context.config().shm().maxMappings(),
                  token,
                  context.counters(),
                  context.quarantine()),
              context.counters(),
              context.hooks(),
              reason -> channelOf[0].peerLost(),
              this::laneEnded));
    }
    lanes.forEach(l -> l.siblings(lanes));
    this.channel = new ShmPeerChannel(peer, gate, lanes, table, mergeLimitBytes, fenced);
    channelOf[0] = channel;
  }

  /**
   * Proves that {@code peer}'s memory opens from here (same host, live token), then starts the copy
   * lanes; blocks.
   *
   * @param peerLimits what the peer's Describe answer advertised, or null when it advertised none
   * @param fenced told when the channel is fenced
   */
  static ShmLink open(
      SegmentDescriptor peer,
      SharedExports exports,
      TransferLimits peerLimits,
      HostIdentity local,
      TransportContext context,
      Runnable fenced) {
    int tokenFd;
    try {
      tokenFd = PeerProof.prove(peer, exports, local);
    } catch (RuntimeException e) {
      context.counters().increment(Count.SHM_OPENS_REFUSED);
      LOG.info("SHM to {} not used: {}", peer, e.getMessage());
      throw e;
    }
    ShmLink link =
        new ShmLink(
            peer,
            exports,
            ShmPeerChannel.mergeLimit(context.config().merge(), peerLimits),
            tokenFd,
            context,
            fenced);
    for (ShmLane lane : link.lanes) {
      LaneRuntime.start(lane);
    }
    return link;
  }

  private void laneEnded(Throwable cause) {
    if (cause != null) {
      LOG.info("an SHM lane to {} ended: {}", peer, cause.toString());
      // A lane that ended by itself (a broken invariant): the others close too.
      channel.closeLanes();
    }
    if (running.decrementAndGet() == 0) {
      drained.complete(List.of());
    }
  }

  @Override
  public PeerChannel channel() {
    return channel;
  }

  /** A later open of the same incarnation adds the allocations its Describe exported. */
  @Override
  public TransportCommand.OpenPeerReply attach(Object detail) {
    SharedExports exports = (SharedExports) detail;
    channel.addExports(exports);
    return new TransportCommand.PeerOpened(
        channel, exports.byRegion().keySet().stream().mapToLong(Long::longValue).toArray());
  }

  @Override
  public void close(String reason) {
    channel.closeLanes();
  }

  @Override
  public CompletionStage<List<String>> drained() {
    return drained;
  }

  @Override
  public List<String> running() {
    return LaneAgent.stillRunning(lanes);
  }

  @Override
  public Map<String, Long> charges() {
    long up = lanes.stream().filter(ShmLane::running).count();
    return Map.of("lanes", up);
  }
}
