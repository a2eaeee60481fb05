package io.orbite.transport.tcp;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of the persistent data lanes to one peer incarnation (endpoint, epoch). Child of the
 * TcpTransport. Connecting runs on the blocking-I/O executor; each lane then runs on its own
 * thread, which tells this actor when it ends.
 *
 * <p>States: {@link #opening} → {@link #active} → {@link #draining} (lanes closed, waiting for
 * every lane thread to end) → stopped; or, when a lane thread has not ended a destruction window
 * after its socket was closed, {@link #quarantined}: closers are answered, the endpoint is listed
 * in the engine's quarantine with the lanes it waits for, and it stops only once they end. A
 * lifecycle only moves forward; a peer reached again is a fresh endpoint.
 */
final class TcpEndpoint {
  sealed interface Command {}

  /** Answer with the channel once the lanes are open (at once if they are). */
  record Attach(ActorRef<TransportCommand.OpenPeerReply> replyTo) implements Command {}

  /**
   * Close every lane; reply when their threads have ended. Marked {@code DeadLetterSuppression}:
   * the transport may send it to an endpoint that has just stopped by itself (its lanes ended with
   * the peer) before its {@code Terminated} arrives, and that watch, not this reply, then removes
   * the endpoint, so the undelivered Close is expected, not a lost message.
   */
  record Close(ActorRef<Closed> replyTo)
      implements Command, org.apache.pekko.actor.DeadLetterSuppression {}

  record Closed(SegmentDescriptor peer) {}

  private record Connected(List<SocketChannel> channels, Throwable failure) implements Command {}

  private record LaneEnded(int lane, Throwable cause) implements Command {}

  /** The channel was fenced (a newer epoch answers at this endpoint): drain and retire. */
  private enum Fenced implements Command {
    INSTANCE
  }

  /** The destruction window since the lanes were closed has passed. */
  private enum DrainOverdue implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final SegmentDescriptor peer;
  private final EngineConfig config;
  private final long localEpoch;
  private final EngineTally counters;
  private final QuarantineLedger quarantine;
  private final FaultHooks hooks;
  private RequesterLane[] lanes = new RequesterLane[0];

  /** What this endpoint reports to the owner view: its state and how many lane threads run. */
  private OwnerState state = OwnerState.OPENING;

  private int lanesUp;
  private String why = "";

  private TcpEndpoint(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      SegmentDescriptor peer,
      TransportContext context) {
    this.ctx = ctx;
    this.timers = timers;
    this.peer = peer;
    this.config = context.config();
    this.localEpoch = context.localEpoch();
    this.counters = context.counters();
    this.quarantine = context.quarantine();
    this.hooks = context.hooks();
  }

  static Behavior<Command> create(SegmentDescriptor peer, TransportContext context) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  TcpEndpoint endpoint = new TcpEndpoint(ctx, timers, peer, context);
                  ctx.pipeToSelf(
                      CompletableFuture.supplyAsync(endpoint::connectAll, context.blockingIo()),
                      (channels, failure) -> new Connected(channels, failure));
                  return io.orbite.engine.view.OwnerBoard.reporting(
                      context.owners(),
                      endpoint::report,
                      endpoint.opening(new ArrayList<>(), new ArrayList<>()));
                }));
  }

  private io.orbite.engine.view.OwnerBoard.Report report() {
    long inflight = 0;
    for (RequesterLane lane : lanes) {
      inflight += lane.chargedBytes();
    }
    return new io.orbite.engine.view.OwnerBoard.Report(
        "TcpEndpoint",
        state,
        java.util.Map.of("lanes", (long) lanesUp, "inflightBytes", inflight),
        "peer " + peer + (why.isEmpty() ? "" : ": " + why));
  }

  private List<SocketChannel> connectAll() {
    List<SocketChannel> channels = new ArrayList<>();
    try {
      for (int i = 0; i < config.tcp().lanes(); i++) {
        channels.add(LaneConnector.connect(peer, i, localEpoch, config.tcp()));
        counters.increment(Count.CONNECTIONS_OPENED);
      }
      return channels;
    } catch (RuntimeException e) {
      channels.forEach(LaneConnector::closeQuietly);
      throw e;
    }
  }

  private Behavior<Command> opening(
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters, List<ActorRef<Closed>> closers) {
    return Behaviors.receive(Command.class)
        .onMessage(
            Attach.class,
            m -> {
              waiters.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(Connected.class, m -> onConnected(m, waiters, closers))
        .build();
  }

  private Behavior<Command> onConnected(
      Connected m,
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters,
      List<ActorRef<Closed>> closers) {
    if (m.failure() != null) {
      Throwable cause =
          m.failure() instanceof CompletionException ce && ce.getCause() != null
              ? ce.getCause()
              : m.failure();
      ErrorKind kind = cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
      waiters.forEach(
          w ->
              w.tell(new TransportCommand.PeerOpenFailed(kind, TransferException.describe(cause))));
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    List<SocketChannel> channels = m.channels();
    RequesterLane[] lanes = new RequesterLane[channels.size()];
    this.lanes = lanes;
    ActorRef<Command> self = ctx.getSelf();
    FramePool frames = new FramePool();
    try {
      for (int i = 0; i < lanes.length; i++) {
        int index = i;
        lanes[i] =
            new RequesterLane(
                "lane " + i + " to " + peer,
                channels.get(i),
                peer.epoch(),
                config.tcp().maxFramePayloadBytes(),
                config.tcp().laneWindowFrames(),
                config.tcp().laneWindowBytes(),
                frames,
                counters,
                hooks,
                cause -> self.tell(new LaneEnded(index, cause)));
      }
    } catch (IOException e) {
      channels.forEach(LaneConnector::closeQuietly);
      waiters.forEach(
          w ->
              w.tell(
                  new TransportCommand.PeerOpenFailed(
                      ErrorKind.UNAVAILABLE,
                      "lanes to " + peer + ": " + TransferException.describe(e))));
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    for (RequesterLane lane : lanes) {
      Thread.ofPlatform().daemon().name("orbite-tcp-" + lane.name()).start(lane);
    }
    SlicePlanner planner =
        new SlicePlanner(
            config.slicing().baseBlockBytes(),
            config.slicing().maxReadSlices(),
            config.slicing().maxWriteSlices());
    TcpPeerChannel channel =
        new TcpPeerChannel(
            peer,
            lanes,
            frames,
            planner,
            config.tcp().maxFramePayloadBytes(),
            () -> self.tell(Fenced.INSTANCE),
            counters);
    if (config.tcp().retryReadOnOtherLane()) {
      for (RequesterLane lane : lanes) {
        lane.retryOn(channel::retry);
      }
    }
    waiters.forEach(w -> w.tell(new TransportCommand.PeerOpened(channel)));
    if (!closers.isEmpty()) {
      return startDraining(channel, lanes, lanes.length, closers);
    }
    return active(channel, lanes, lanes.length);
  }

  private Behavior<Command> active(
      TcpPeerChannel channel, RequesterLane[] lanes, int lanesRunning) {
    state = OwnerState.ACTIVE;
    lanesUp = lanesRunning;
    return Behaviors.receive(Command.class)
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      channel.active()
                          ? new TransportCommand.PeerOpened(channel)
                          : new TransportCommand.PeerOpenFailed(
                              ErrorKind.PEER_LOST, "every lane to " + peer + " has closed"));
              return Behaviors.same();
            })
        .onMessage(
            LaneEnded.class,
            m -> {
              ctx.getLog()
                  .info(
                      "{} ended{}",
                      lanes[m.lane()].name(),
                      m.cause() == null ? "" : ": " + m.cause());
              if (lanesRunning == 1) {
                // No lane left: this endpoint is done; a later open of the peer gets a fresh one.
                channel.deactivate();
                return Behaviors.stopped();
              }
              return active(channel, lanes, lanesRunning - 1);
            })
        .onMessage(
            Close.class,
            m -> startDraining(channel, lanes, lanesRunning, new ArrayList<>(List.of(m.replyTo()))))
        .onMessageEquals(
            Fenced.INSTANCE,
            () -> {
              ctx.getLog()
                  .info(
                      "endpoint {} fenced: {}; draining its lanes", peer, channel.fencedBecause());
              state = OwnerState.FENCED;
              why = String.valueOf(channel.fencedBecause());
              return startDraining(channel, lanes, lanesRunning, new ArrayList<>());
            })
        .build();
  }

  private Behavior<Command> startDraining(
      TcpPeerChannel channel,
      RequesterLane[] lanes,
      int lanesRunning,
      List<ActorRef<Closed>> closers) {
    channel.deactivate();
    if (state != OwnerState.FENCED) {
      state = OwnerState.DRAINING;
    }
    for (RequesterLane lane : lanes) {
      lane.close();
    }
    timers.startSingleTimer(
        DrainOverdue.INSTANCE, Duration.ofMillis(config.timeouts().destructionWindowMillis()));
    return draining(lanesRunning, closers);
  }

  private Behavior<Command> draining(int lanesRunning, List<ActorRef<Closed>> closers) {
    lanesUp = lanesRunning;
    if (lanesRunning == 0) {
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    return Behaviors.receive(Command.class)
        .onMessage(LaneEnded.class, m -> draining(lanesRunning - 1, closers))
        .onMessageEquals(DrainOverdue.INSTANCE, () -> quarantine(lanesRunning, closers))
        .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNAVAILABLE, "endpoint " + peer + " is closing"));
              return Behaviors.same();
            })
        .build();
  }

  /**
   * A lane thread has not ended a destruction window after its socket was closed: it cannot be
   * shown to have stopped touching its frames' memory, so this endpoint is quarantined. Its closers
   * are answered (the engine can finish closing around it), the loans its lanes' tasks hold stay
   * with their batches, and the endpoint stays listed until every lane thread has ended.
   */
  private Behavior<Command> quarantine(int lanesRunning, List<ActorRef<Closed>> closers) {
    List<String> stuck = new ArrayList<>();
    for (RequesterLane lane : lanes) {
      if (!lane.ended()) {
        stuck.add(lane.name());
      }
    }
    RequesterLane[] held = lanes;
    String owner = "endpoint " + peer;
    quarantine.enter(
        new QuarantinedOwner(
            owner,
            QuarantinedOwner.Kind.ENDPOINT,
            stuck.size()
                + " lane thread(s) still running "
                + config.timeouts().destructionWindowMillis()
                + " ms after their sockets were closed: "
                + String.join(", ", stuck),
            0,
            0,
            Instant.now()),
        () -> java.util.Arrays.stream(held).anyMatch(l -> !l.ended()));
    ctx.getLog()
        .error(
            "{} quarantined: {} lane thread(s) did not end within the destruction window: {}",
            owner,
            stuck.size(),
            stuck);
    closers.forEach(c -> c.tell(new Closed(peer)));
    return quarantined(lanesRunning, owner);
  }

  private Behavior<Command> quarantined(int lanesRunning, String owner) {
    state = OwnerState.QUARANTINED;
    lanesUp = lanesRunning;
    if (lanesRunning == 0) {
      quarantine.leave(owner);
      ctx.getLog().info("{}: its last lane thread ended; no longer quarantined", owner);
      return Behaviors.stopped();
    }
    return Behaviors.receive(Command.class)
        .onMessage(LaneEnded.class, m -> quarantined(lanesRunning - 1, owner))
        .onMessage(
            Close.class,
            m -> {
              m.replyTo().tell(new Closed(peer));
              return Behaviors.same();
            })
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNAVAILABLE, "endpoint " + peer + " is quarantined"));
              return Behaviors.same();
            })
        .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
        .onMessageEquals(DrainOverdue.INSTANCE, Behaviors::same)
        .build();
  }
}
