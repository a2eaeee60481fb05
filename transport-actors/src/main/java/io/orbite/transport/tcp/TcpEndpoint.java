package io.orbite.transport.tcp;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.EngineCounters;
import io.orbite.engine.spi.TransportCommand;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of the persistent data lanes to one peer incarnation (endpoint, epoch). Child of the
 * TcpTransport. Connecting runs on the blocking-I/O executor; each lane then runs on its own
 * thread, which tells this actor when it ends.
 *
 * <p>States: {@link #opening} → {@link #active} → {@link #draining} (lanes closed, waiting for
 * every lane thread to end) → stopped. A lifecycle only moves forward; a peer reached again is a
 * fresh endpoint.
 */
final class TcpEndpoint {
  sealed interface Command {}

  /** Answer with the channel once the lanes are open (at once if they are). */
  record Attach(ActorRef<TransportCommand.OpenPeerReply> replyTo) implements Command {}

  /** Close every lane; reply when their threads have ended. */
  record Close(ActorRef<Closed> replyTo) implements Command {}

  record Closed(SegmentDescriptor peer) {}

  private record Connected(List<SocketChannel> channels, Throwable failure) implements Command {}

  private record LaneEnded(int lane, Throwable cause) implements Command {}

  /** The channel was fenced (a newer epoch answers at this endpoint): drain and retire. */
  private enum Fenced implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final SegmentDescriptor peer;
  private final EngineConfig config;
  private final long localEpoch;
  private final EngineCounters counters;

  private TcpEndpoint(ActorContext<Command> ctx, SegmentDescriptor peer, EngineConfig config, long localEpoch,
      EngineCounters counters) {
    this.ctx = ctx;
    this.peer = peer;
    this.config = config;
    this.localEpoch = localEpoch;
    this.counters = counters;
  }

  static Behavior<Command> create(SegmentDescriptor peer, EngineConfig config, long localEpoch, Executor blockingIo,
      EngineCounters counters) {
    return Behaviors.setup(ctx -> {
      TcpEndpoint endpoint = new TcpEndpoint(ctx, peer, config, localEpoch, counters);
      ctx.pipeToSelf(CompletableFuture.supplyAsync(endpoint::connectAll, blockingIo),
          (channels, failure) -> new Connected(channels, failure));
      return endpoint.opening(new ArrayList<>(), new ArrayList<>());
    });
  }

  private List<SocketChannel> connectAll() {
    List<SocketChannel> channels = new ArrayList<>();
    try {
      for (int i = 0; i < config.tcp().lanes(); i++) {
        channels.add(LaneConnector.connect(peer, i, localEpoch, config.tcp()));
        counters.connectionsOpened.increment();
      }
      return channels;
    } catch (RuntimeException e) {
      channels.forEach(LaneConnector::closeQuietly);
      throw e;
    }
  }

  private Behavior<Command> opening(List<ActorRef<TransportCommand.OpenPeerReply>> waiters, List<ActorRef<Closed>> closers) {
    return Behaviors.receive(Command.class)
        .onMessage(Attach.class, m -> {
          waiters.add(m.replyTo());
          return Behaviors.same();
        })
        .onMessage(Close.class, m -> {
          closers.add(m.replyTo());
          return Behaviors.same();
        })
        .onMessage(Connected.class, m -> onConnected(m, waiters, closers))
        .build();
  }

  private Behavior<Command> onConnected(
      Connected m, List<ActorRef<TransportCommand.OpenPeerReply>> waiters, List<ActorRef<Closed>> closers) {
    if (m.failure() != null) {
      Throwable cause = m.failure() instanceof CompletionException ce && ce.getCause() != null ? ce.getCause() : m.failure();
      ErrorKind kind = cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
      waiters.forEach(w -> w.tell(new TransportCommand.PeerOpenFailed(kind, cause.getMessage())));
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    List<SocketChannel> channels = m.channels();
    RequesterLane[] lanes = new RequesterLane[channels.size()];
    ActorRef<Command> self = ctx.getSelf();
    try {
      for (int i = 0; i < lanes.length; i++) {
        int index = i;
        lanes[i] = new RequesterLane("lane " + i + " to " + peer, channels.get(i), peer.epoch(),
            config.tcp().maxFramePayloadBytes(), config.tcp().laneWindowFrames(), config.tcp().laneWindowBytes(),
            counters, cause -> self.tell(new LaneEnded(index, cause)));
      }
    } catch (IOException e) {
      channels.forEach(LaneConnector::closeQuietly);
      waiters.forEach(w -> w.tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, "lanes to " + peer + ": " + e)));
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    for (RequesterLane lane : lanes) {
      Thread.ofPlatform().daemon().name("orbite-tcp-" + lane.name()).start(lane);
    }
    SlicePlanner planner = new SlicePlanner(config.slicing().baseBlockBytes(), config.slicing().maxReadSlices(),
        config.slicing().maxWriteSlices());
    TcpPeerChannel channel = new TcpPeerChannel(peer, lanes, planner, config.tcp().maxFramePayloadBytes(),
        () -> self.tell(Fenced.INSTANCE));
    waiters.forEach(w -> w.tell(new TransportCommand.PeerOpened(channel)));
    if (!closers.isEmpty()) {
      return startDraining(channel, lanes, lanes.length, closers);
    }
    return active(channel, lanes, lanes.length);
  }

  private Behavior<Command> active(TcpPeerChannel channel, RequesterLane[] lanes, int lanesRunning) {
    return Behaviors.receive(Command.class)
        .onMessage(Attach.class, m -> {
          m.replyTo().tell(channel.active()
              ? new TransportCommand.PeerOpened(channel)
              : new TransportCommand.PeerOpenFailed(ErrorKind.PEER_LOST, "every lane to " + peer + " has closed"));
          return Behaviors.same();
        })
        .onMessage(LaneEnded.class, m -> {
          ctx.getLog().info("{} ended{}", lanes[m.lane()].name(), m.cause() == null ? "" : ": " + m.cause());
          if (lanesRunning == 1) {
            // No lane left: this endpoint is done; a later open of the peer gets a fresh one.
            channel.deactivate();
            return Behaviors.stopped();
          }
          return active(channel, lanes, lanesRunning - 1);
        })
        .onMessage(Close.class, m -> startDraining(channel, lanes, lanesRunning, new ArrayList<>(List.of(m.replyTo()))))
        .onMessageEquals(Fenced.INSTANCE, () -> {
          ctx.getLog().info("endpoint {} fenced: {}; draining its lanes", peer, channel.fencedBecause());
          return startDraining(channel, lanes, lanesRunning, new ArrayList<>());
        })
        .build();
  }

  private Behavior<Command> startDraining(
      TcpPeerChannel channel, RequesterLane[] lanes, int lanesRunning, List<ActorRef<Closed>> closers) {
    channel.deactivate();
    for (RequesterLane lane : lanes) {
      lane.close();
    }
    return draining(lanesRunning, closers);
  }

  private Behavior<Command> draining(int lanesRunning, List<ActorRef<Closed>> closers) {
    if (lanesRunning == 0) {
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    return Behaviors.receive(Command.class)
        .onMessage(LaneEnded.class, m -> draining(lanesRunning - 1, closers))
        .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
        .onMessage(Close.class, m -> {
          closers.add(m.replyTo());
          return Behaviors.same();
        })
        .onMessage(Attach.class, m -> {
          m.replyTo().tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, "endpoint " + peer + " is closing"));
          return Behaviors.same();
        })
        .build();
  }
}
