package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.transport.endpoint.PeerEndpoint;
import io.orbite.transport.endpoint.PeerEndpoints;
import io.orbite.transport.endpoint.RequesterIncarnations;
import io.orbite.transport.endpoint.SideClosers;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Supervisor of the TCP transport. Child of the EngineGuardian. Requester side: one endpoint
 * ({@link PeerEndpoint} over a {@link TcpLink}) child per peer incarnation. Source side: one
 * SourceLane thread per accepted data connection, handed over by the ControlService.
 *
 * <p>Source lanes are recorded by the requester incarnation they serve ({@link
 * RequesterIncarnations}): a HELLO from a requester's new incarnation closes its older
 * incarnation's lanes, and the new lane answers only once they have ended. With {@code
 * tcp.sourceIdleTimeoutMillis} set, a sweep closes the lanes that took no data request for that
 * long.
 *
 * <p>States: {@link #serving}, {@link #stopping} (every endpoint and source lane closing), then
 * stopped.
 */
final class TcpTransport {
  private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);

  private record SourceLaneEnded(SourceLane lane) implements TransportCommand {}

  /** Time to look for idle source lanes. */
  private enum IdleSweep implements TransportCommand {
    INSTANCE
  }

  private final ActorContext<TransportCommand> ctx;
  private final TransportContext context;
  private final OwnerBoard board;
  private final Authority authority;

  /** At most this many source lanes at once: budgets.maxEndpoints x tcp.lanes. */
  private final int maxSourceLanes;

  private final PeerEndpoints endpoints;
  private final Set<SourceLane> sourceLanes = new HashSet<>();
  private final SideClosers sourceClosers = new SideClosers("TCP");
  private final RequesterIncarnations<SourceLane> incarnations;

  /** {@code tcp.sourceIdleTimeoutMillis} in nanoseconds; 0: lanes never close idle. */
  private final long idleTimeoutNanos;

  private long laneSequence;

  private TcpTransport(ActorContext<TransportCommand> ctx, TransportContext context) {
    this.ctx = ctx;
    this.context = context;
    this.board = context.owners();
    this.endpoints = new PeerEndpoints(ctx, "TCP");
    this.authority = new Authority(context.registry(), context.localEpoch());
    this.maxSourceLanes =
        context.config().budgets().maxEndpoints() * context.config().tcp().lanes();
    this.incarnations = new RequesterIncarnations<>("TCP source lanes", context.counters());
    this.idleTimeoutNanos =
        TimeUnit.MILLISECONDS.toNanos(context.config().tcp().sourceIdleTimeoutMillis());
  }

  static Behavior<TransportCommand> create(TransportContext context) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers -> {
                  TcpTransport transport = new TcpTransport(ctx, context);
                  long idleMillis = context.config().tcp().sourceIdleTimeoutMillis();
                  if (idleMillis > 0) {
                    // A lane closes between the timeout and a quarter of it later (10 ms to 1 s).
                    timers.startTimerWithFixedDelay(
                        IdleSweep.INSTANCE,
                        Duration.ofMillis(Math.clamp(idleMillis / 4, 10L, 1_000L)));
                  }
                  return OwnerBoard.reporting(
                      context.owners(),
                      transport::report,
                      transport.serving(new Sides(true, true)));
                }));
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "TcpTransport",
        Map.of(
            "endpoints",
            (long) endpoints.size(),
            "sourceLanes",
            (long) sourceLanes.size(),
            "sourceLanesLimit",
            (long) maxSourceLanes),
        "");
  }

  /** Which directions are still open (C8): each only ever closes. */
  private record Sides(boolean requester, boolean source) {}

  /** Serving; a closed side is refused here, and still shown serving. */
  private Behavior<TransportCommand> serving(Sides sides) {
    return board.in(
        OwnerState.SERVING,
        Behaviors.receive(TransportCommand.class)
            .onMessage(
                TransportCommand.OpenPeer.class,
                m -> sides.requester() ? onOpenPeer(m) : PeerEndpoints.refuseRequesterSideClosed(m))
            .onMessage(
                TransportCommand.AdoptConnection.class,
                m -> {
                  if (!sides.source()) {
                    return PeerEndpoints.refuseByClosing(m);
                  }
                  return onAdopt(m);
                })
            .onMessage(
                SourceLaneEnded.class,
                m -> {
                  laneEnded(m.lane());
                  sourceClosers.answerIf(sourceLanes.isEmpty());
                  return Behaviors.same();
                })
            .onMessageEquals(IdleSweep.INSTANCE, this::closeIdleLanes)
            .onMessage(PeerEndpoints.Event.class, endpoints::onEvent)
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  endpoints.closeRequesterSide(m.replyTo(), "the requester side was closed");
                  return serving(new Sides(false, sides.source()));
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  sourceClosers.add(m.replyTo());
                  sourceLanes.forEach(SourceLane::close);
                  sourceClosers.answerIf(sourceLanes.isEmpty());
                  return serving(new Sides(sides.requester(), false));
                })
            .onMessage(TransportCommand.Shutdown.class, this::onShutdown)
            .build());
  }

  private Behavior<TransportCommand> onOpenPeer(TransportCommand.OpenPeer m) {
    ActorRef<PeerEndpoint.Command> endpoint = endpoints.get(m.peer());
    PeerEndpoint.Attach attach = new PeerEndpoint.Attach(null, m.replyTo());
    if (endpoint == null) {
      endpoints.open(
          "TcpEndpoint",
          m.peer(),
          context,
          fenced -> TcpLink.open(m.peer(), m.description().limits(), context, fenced),
          attach);
    } else {
      endpoint.tell(attach);
    }
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onAdopt(TransportCommand.AdoptConnection m) {
    ActorRef<TransportCommand> self = ctx.getSelf();
    String name =
        "source lane "
            + (++laneSequence)
            + " (lane "
            + FrameCodec.offset(m.hello(), 0)
            + " of "
            + Long.toHexString(FrameCodec.regionId(m.hello(), 0))
            + ")";
    try {
      m.channel()
          .setOption(StandardSocketOptions.SO_SNDBUF, context.config().tcp().socketBufferBytes());
      m.channel()
          .setOption(StandardSocketOptions.SO_RCVBUF, context.config().tcp().socketBufferBytes());
    } catch (IOException e) {
      ctx.getLog().debug("{}: socket options: {}", name, e.toString());
    }
    // Its HELLO fences the lanes of its requester's older incarnation first: they are leaving, so
    // they do not count against the bound, and the new lane answers once they have ended.
    long requesterEpoch = FrameCodec.regionId(m.hello(), 0);
    InetAddress from = remoteAddress(m.channel());
    CompletableFuture<Void> fenced =
        incarnations.fence(
            m.requester(),
            requesterEpoch,
            from,
            FrameCodec.epoch(m.hello(), 0) == context.localEpoch(),
            (old, why) -> old.close());
    // C9: source lanes are bounded like the requester's endpoints. A lane over the bound is still
    // answered (HELLO_ACK RESOURCE_EXHAUSTED) and closed, so the peer learns why.
    int refusal =
        sourceLanes.size() - incarnations.fencing() >= maxSourceLanes
            ? ErrorKind.RESOURCE_EXHAUSTED.code()
            : 0;
    SourceLane lane =
        new SourceLane(
            name,
            m.conduit(),
            m.hello(),
            authority.forPeer(m.peer()),
            context.localEpoch(),
            context.config().tcp().maxFramePayloadBytes(),
            context.counters(),
            refusal,
            context.hooks(),
            fenced,
            Math.max(1, context.config().tcp().connectTimeoutMillis() / 2),
            l -> self.tell(new SourceLaneEnded(l)));
    incarnations.record(lane, m.requester(), requesterEpoch, from);
    sourceLanes.add(lane);
    LaneRuntime.start("orbite-tcp-" + name, lane);
    return Behaviors.same();
  }

  private static InetAddress remoteAddress(SocketChannel channel) {
    try {
      return channel.getRemoteAddress() instanceof InetSocketAddress a ? a.getAddress() : null;
    } catch (IOException e) {
      return null; // closed already: the lane ends at once
    }
  }

  private void laneEnded(SourceLane lane) {
    sourceLanes.remove(lane);
    incarnations.ended(lane);
  }

  /** Closes the source lanes that took no data request for {@code tcp.sourceIdleTimeoutMillis}. */
  private Behavior<TransportCommand> closeIdleLanes() {
    long now = System.nanoTime();
    for (SourceLane lane : sourceLanes) {
      if (lane.idle().closeIfIdle(now, idleTimeoutNanos)) {
        context.counters().increment(EngineTally.Count.SOURCE_IDLE_CLOSES);
        LOG.info(
            "{}: no data request for {} ms (tcp.sourceIdleTimeoutMillis): closing it; its"
                + " requester connects again when it needs it",
            lane.name(),
            context.config().tcp().sourceIdleTimeoutMillis());
        lane.close();
      }
    }
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onShutdown(TransportCommand.Shutdown m) {
    sourceLanes.forEach(SourceLane::close);
    endpoints.closeAll("the engine is closing");
    return stopping(new ArrayList<>(List.of(m.replyTo())));
  }

  /** Every endpoint and source lane closing; each Shutdown is answered when they all have. */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo) {
    endpoints.answerRequesterClosers();
    sourceClosers.answerIf(sourceLanes.isEmpty());
    if (endpoints.isEmpty() && sourceLanes.isEmpty()) {
      replyTo.forEach(r -> r.tell(new TransportCommand.ShutdownDone("TCP")));
      return Behaviors.stopped();
    }
    return board.in(
        OwnerState.STOPPING,
        endpoints
            .stopping(replyTo, () -> stopping(replyTo))
            .onMessage(
                SourceLaneEnded.class,
                m -> {
                  laneEnded(m.lane());
                  return stopping(replyTo);
                })
            .onMessageEquals(IdleSweep.INSTANCE, Behaviors::same)
            .onMessage(
                PeerEndpoints.Event.class,
                m -> {
                  endpoints.on(m);
                  return stopping(replyTo);
                })
            .onMessage(TransportCommand.AdoptConnection.class, PeerEndpoints::refuseByClosing)
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  sourceClosers.add(m.replyTo());
                  return stopping(replyTo);
                })
            .build());
  }
}
