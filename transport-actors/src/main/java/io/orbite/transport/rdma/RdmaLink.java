package io.orbite.transport.rdma;

import io.orbite.config.MergeConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.wire.TransferLimits;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.endpoint.EndpointLink;
import io.orbite.transport.tcp.LaneConnector;
import java.io.DataInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * What an RDMA endpoint owns ({@link io.orbite.transport.endpoint.PeerEndpoint} runs its lifecycle,
 * kind {@code RdmaEndpoint}): one peer incarnation's control connection, its fixed QP array and the
 * {@link RdmaChannel} over them. Opened on the blocking-I/O executor ({@link #open}); drained once
 * the channel closed (every QP destroyed, or kept: a QP whose destroy failed is kept for good, and
 * the endpoint is quarantined for it); at each tick, tasks waiting for their charges past their
 * deadline fail.
 */
final class RdmaLink implements EndpointLink {
  private final RdmaChannel channel;
  private final Executor blockingIo;

  private RdmaLink(RdmaChannel channel, Executor blockingIo) {
    this.channel = channel;
    this.blockingIo = blockingIo;
  }

  /**
   * Connects to {@code peer}: the control connection (whose HELLO names the peer's epoch, so a
   * stale one is refused before any QP is made), the peer's rails, then the QPs, connected on both
   * ends; then starts the control reader. Blocking.
   *
   * @param peerLimits what the peer's Describe answer advertised, or null when it advertised none
   * @param fenced told when the channel is fenced
   * @throws TransferException naming the peer and what failed; nothing made is left behind
   */
  static RdmaLink open(
      SegmentDescriptor peer,
      TransferLimits peerLimits,
      TransportContext context,
      RdmaStack stack,
      Runnable fenced) {
    TcpConfig tcp = context.config().tcp();
    Conduit socket = LaneConnector.connect(peer, 0, context, Transport.RDMA);
    ControlLink link;
    try {
      link = new ControlLink(socket);
    } catch (IOException e) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // Already failing: the cause below says why.
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "RDMA control connection to " + peer + ": " + e, e);
    }
    List<Rail> rails = stack.rails();
    List<RcQp> made = new ArrayList<>();
    try {
      socket.socket().socket().setSoTimeout(tcp.connectTimeoutMillis());
      DataInputStream in = link.in;
      RdmaWire.Describe described = RdmaWire.readRails(in);
      List<RdmaWire.Rail> remote = described.rails();
      RdmaWire.writeRails(
          link.out(),
          rails.stream().map(Rail::published).toList(),
          new RdmaWire.Limits(stack.direct().limitBytes(), (int) stack.parents().limitBytes()));
      int lanes = rails.getFirst().lanes.size();
      List<RdmaWire.QpEnd> ends = new ArrayList<>();
      for (Rail rail : rails) {
        for (CqLane lane : rail.lanes) {
          VerbsResult<Verbs.Qp> qp = rail.connector.createQp(lane, false);
          if (!qp.ok()) {
            throw new TransferException(
                ErrorKind.RESOURCE_EXHAUSTED, "RDMA QP on " + rail.device + ": " + qp.describe());
          }
          int remoteRail = rail.index % remote.size();
          made.add(new RcQp(qp.value(), lane, rail, made.size(), remoteRail));
          ends.add(new RdmaWire.QpEnd(rail.index, remoteRail, qp.value().qpNum()));
        }
      }
      RdmaWire.writeConnect(link.out(), ends);
      int[] qpns = RdmaWire.readConnected(in, ends.size());
      for (RcQp qp : made) {
        int rc = qp.connect(remote.get(qp.remoteRail), qpns[qp.index]);
        if (rc != 0 && qp.rail.fenced()) {
          // Its rail is paused: the QP stays unconnected, its monitor retires it, and the slot is
          // repaired once the rail recovered; the other rails carry on.
          qp.life.stop(
              qp.rail.device + " is paused (route generation " + qp.rail.generation() + ")",
              ErrorKind.UNAVAILABLE);
        } else if (rc != 0) {
          throw new TransferException(
              ErrorKind.UNAVAILABLE,
              "RDMA QP on " + qp.rail.device + " to " + peer + ": modify failed, errno " + rc);
        }
      }
      socket.socket().socket().setSoTimeout(0);
      ChannelGate gate = new ChannelGate("the RDMA channel to " + peer);
      RdmaChannel channel =
          new RdmaChannel(
              peer,
              link,
              gate,
              new ChannelQps(made.toArray(RcQp[]::new), remote, lanes, rails.size(), gate),
              described.limits(),
              mergeLimit(
                  context.config().merge(),
                  peerLimits,
                  described.limits(),
                  stack.direct().limitBytes()),
              stack,
              context.config().slicing(),
              fenced);
      ControlReader.start(channel, context.hooks());
      return new RdmaLink(channel, context.blockingIo());
    } catch (IOException | RuntimeException e) {
      link.close();
      for (RcQp qp : made) {
        qp.lane.closer.destroyUnused(qp);
      }
      if (e instanceof TransferException t) {
        throw t;
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "RDMA handshake with " + peer + ": " + TransferException.describe(e),
          e);
    }
  }

  /**
   * The most bytes the channel takes as one merged task: {@code merge.maxBytes} (0 with {@code
   * merge.enabled} off), no more than the peer's Describe advertised, and never more than a task
   * the channel would refuse as oversized (this side's {@code rdma.maxDirectBytes}, the most the
   * peer reserves as its RAILS published): merging must not turn tasks that each fit into one that
   * fails. A merged task is sliced as any task is (C15), so it becomes as few slices as the slicing
   * allows for its length.
   */
  static long mergeLimit(
      MergeConfig merge, TransferLimits peerLimits, RdmaWire.Limits rails, long directLimit) {
    long own = Math.min(merge.requesterLimitBytes(), Math.min(directLimit, rails.maxTaskBytes()));
    return TransferLimits.mergeTowards(own, peerLimits);
  }

  @Override
  public PeerChannel channel() {
    return channel;
  }

  /** The endpoint closed the gate: the channel closes on its lanes (idempotent). */
  @Override
  public void close(String reason) {
    channel.gate().close(ChannelGate.Why.LOCAL_CLOSE, reason);
    channel.close();
  }

  /** Once every QP was destroyed, or kept (a QP whose destroy failed: kept for good, named). */
  @Override
  public CompletionStage<List<String>> drained() {
    return channel.closed();
  }

  @Override
  public List<String> running() {
    return channel.qps().unsettled();
  }

  @Override
  public Map<String, Long> charges() {
    RdmaWire.Limits peerLimits = channel.budget().peerLimits();
    List<RdmaWire.Rail> peerRails = channel.qps().remoteRails();
    return Map.of(
        "qps",
        (long) channel.qps().count(),
        "slicesAwaitingGrant",
        channel.ledger().awaitingGrant(),
        "maxSqDebt",
        (long) channel.qps().maxDebt(),
        "promotions",
        channel.qps().promotions(),
        "peerRails",
        (long) peerRails.size(),
        "peerLinkBytesPerSecond",
        peerRails.stream().mapToLong(r -> r.linkMbps() * 1_000_000 / 8).sum(),
        "peerMaxTaskBytes",
        peerLimits.maxTaskBytes(),
        "peerParentsLimit",
        (long) peerLimits.maxParents(),
        "peerParentsReserved",
        channel.budget().peerUnitsReserved());
  }

  /** The owner view's figures move on lane threads, between messages. */
  @Override
  public Duration tickEvery() {
    return RdmaTransport.VIEW_REFRESH;
  }

  /**
   * Tasks waiting for charges past their deadline fail TIMEOUT: off the mailbox (one that starts
   * after them may write its RESERVE to the control connection).
   */
  @Override
  public void tick() {
    if (channel.budget().anyWaiting()) {
      CompletableFuture.runAsync(channel.budget()::expireWaiting, blockingIo);
    }
  }
}
