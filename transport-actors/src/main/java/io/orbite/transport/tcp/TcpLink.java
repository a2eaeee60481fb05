package io.orbite.transport.tcp;

import io.orbite.config.EngineConfig;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportContext;
import io.orbite.transport.endpoint.EndpointLink;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persistent data lanes to one peer incarnation (endpoint, epoch) and the channel over them:
 * what a TCP endpoint owns ({@link io.orbite.transport.endpoint.PeerEndpoint} runs its lifecycle).
 * Each lane is a {@link RequesterLane} on the lane runtime; a lane whose connection breaks ends
 * alone (offering its READs to another lane), and once the last one has ended the channel's gate
 * closes (the peer was lost) and the link is drained.
 */
final class TcpLink implements EndpointLink {
  private static final Logger LOG = LoggerFactory.getLogger(TcpLink.class);

  private final SegmentDescriptor peer;
  private final RequesterLane[] lanes;
  private final TcpPeerChannel channel;
  private final AtomicInteger running;
  private final CompletableFuture<List<String>> drained = new CompletableFuture<>();

  private TcpLink(
      SegmentDescriptor peer,
      List<SocketChannel> sockets,
      TransportContext context,
      Runnable fenced)
      throws IOException {
    EngineConfig config = context.config();
    EngineTally counters = context.counters();
    this.peer = peer;
    this.lanes = new RequesterLane[sockets.size()];
    this.running = new AtomicInteger(lanes.length);
    ChannelGate gate = new ChannelGate("the TCP channel to " + peer);
    FramePool frames = new FramePool();
    for (int i = 0; i < lanes.length; i++) {
      lanes[i] =
          new RequesterLane(
              "lane " + i + " to " + peer,
              sockets.get(i),
              peer.epoch(),
              config.tcp().maxFramePayloadBytes(),
              config.tcp().laneWindowFrames(),
              config.tcp().laneWindowBytes(),
              frames,
              gate,
              counters,
              context.hooks(),
              this::laneEnded);
    }
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
            config.tcp().maxFramePayloadBytes(),
            fenced,
            counters);
    if (config.tcp().retryReadOnOtherLane()) {
      for (RequesterLane lane : lanes) {
        lane.retryOn(channel::retry);
      }
    }
  }

  /**
   * Connects {@code tcp.lanes} lanes to {@code peer} (each with its HELLO) and starts them; blocks.
   *
   * @param fenced told when the channel is fenced
   */
  static TcpLink open(SegmentDescriptor peer, TransportContext context, Runnable fenced)
      throws IOException {
    List<SocketChannel> sockets = new ArrayList<>();
    TcpLink link;
    try {
      for (int i = 0; i < context.config().tcp().lanes(); i++) {
        sockets.add(LaneConnector.connect(peer, i, context));
        context.counters().increment(EngineTally.Count.CONNECTIONS_OPENED);
      }
      link = new TcpLink(peer, sockets, context, fenced);
    } catch (IOException | RuntimeException e) {
      sockets.forEach(LaneConnector::closeQuietly);
      throw e;
    }
    for (RequesterLane lane : link.lanes) {
      LaneRuntime.start("orbite-tcp-" + lane.name(), lane);
    }
    return link;
  }

  private void laneEnded(Throwable cause) {
    if (cause != null) {
      LOG.info("a TCP lane to {} ended: {}", peer, cause.toString());
    }
    if (running.decrementAndGet() == 0) {
      channel
          .gate()
          .close(
              ChannelGate.Why.PEER_LOST,
              "every lane to it ended"
                  + (cause == null ? "" : " (the last: " + cause.getMessage() + ")"));
      drained.complete(List.of());
    }
  }

  @Override
  public PeerChannel channel() {
    return channel;
  }

  @Override
  public void close(String reason) {
    for (RequesterLane lane : lanes) {
      lane.close();
    }
  }

  @Override
  public CompletionStage<List<String>> drained() {
    return drained;
  }

  @Override
  public List<String> running() {
    return LaneAgent.stillRunning(List.of(lanes));
  }

  @Override
  public Map<String, Long> charges() {
    long inflight = 0;
    long up = 0;
    for (RequesterLane lane : lanes) {
      inflight += lane.chargedBytes();
      up += lane.running() ? 1 : 0;
    }
    return Map.of("lanes", up, "inflightBytes", inflight);
  }
}
