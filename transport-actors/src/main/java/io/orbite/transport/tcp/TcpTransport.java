package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.transport.endpoint.PeerEndpoint;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Supervisor of the TCP transport. Child of the EngineGuardian. Requester side: one endpoint
 * ({@link PeerEndpoint} over a {@link TcpLink}) child per peer incarnation. Source side: one
 * SourceLane thread per accepted data connection, handed over by the ControlService.
 *
 * <p>States: {@link #serving}, {@link #stopping} (every endpoint and source lane closing), then
 * stopped.
 */
final class TcpTransport {
  private record SourceLaneEnded(SourceLane lane) implements TransportCommand {}

  private record EndpointClosed(SegmentDescriptor peer) implements TransportCommand {}

  private record EndpointRefused(PeerEndpoint.Refused refused) implements TransportCommand {}

  private final ActorContext<TransportCommand> ctx;
  private final TransportContext context;
  private final OwnerBoard board;
  private final Authority authority;

  /** At most this many source lanes at once: budgets.maxEndpoints x tcp.lanes. */
  private final int maxSourceLanes;

  private final Map<SegmentDescriptor, ActorRef<PeerEndpoint.Command>> endpoints = new HashMap<>();
  private final Set<SourceLane> sourceLanes = new HashSet<>();
  private long laneSequence;
  private long endpointSequence;

  private TcpTransport(ActorContext<TransportCommand> ctx, TransportContext context) {
    this.ctx = ctx;
    this.context = context;
    this.board = context.owners();
    this.authority = new Authority(context.registry(), context.localEpoch());
    this.maxSourceLanes =
        context.config().budgets().maxEndpoints() * context.config().tcp().lanes();
  }

  static Behavior<TransportCommand> create(TransportContext context) {
    return Behaviors.setup(
        ctx -> {
          TcpTransport transport = new TcpTransport(ctx, context);
          return OwnerBoard.reporting(
              context.owners(), transport::report, transport.serving(new Sides(true, true)));
        });
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

  private final List<ActorRef<TransportCommand.SideClosed>> requesterClosers = new ArrayList<>();
  private final List<ActorRef<TransportCommand.SideClosed>> sourceClosers = new ArrayList<>();

  /** Serving; a closed side is refused here, and still shown serving. */
  private Behavior<TransportCommand> serving(Sides sides) {
    return board.in(
        OwnerState.SERVING,
        Behaviors.receive(TransportCommand.class)
            .onMessage(
                TransportCommand.OpenPeer.class,
                m -> {
                  if (!sides.requester()) {
                    m.replyTo()
                        .tell(
                            new TransportCommand.PeerOpenFailed(
                                ErrorKind.UNAVAILABLE,
                                "the requester side of this engine is closed"));
                    return Behaviors.same();
                  }
                  return onOpenPeer(m);
                })
            .onMessage(
                TransportCommand.AdoptConnection.class,
                m -> {
                  if (!sides.source()) {
                    closeQuietly(m.channel());
                    return Behaviors.same();
                  }
                  return onAdopt(m);
                })
            .onMessage(
                SourceLaneEnded.class,
                m -> {
                  sourceLanes.remove(m.lane());
                  answerSideClosers();
                  return Behaviors.same();
                })
            .onMessage(
                EndpointClosed.class,
                m -> {
                  // Closed, or quarantined (it then lives on, listed in the engine's quarantine).
                  endpoints.remove(m.peer());
                  answerSideClosers();
                  return Behaviors.same();
                })
            .onMessage(
                EndpointRefused.class,
                m -> {
                  onRefused(m.refused());
                  answerSideClosers();
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  requesterClosers.add(m.replyTo());
                  closeEndpoints("the requester side was closed");
                  answerSideClosers();
                  return serving(new Sides(false, sides.source()));
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  sourceClosers.add(m.replyTo());
                  sourceLanes.forEach(SourceLane::close);
                  answerSideClosers();
                  return serving(new Sides(sides.requester(), false));
                })
            .onMessage(TransportCommand.Shutdown.class, this::onShutdown)
            .onSignal(
                Terminated.class,
                t -> {
                  onEndpointStopped(t);
                  answerSideClosers();
                  return Behaviors.same();
                })
            .build());
  }

  /** Asks every endpoint to close; each answers (EndpointClosed) once its lanes drained. */
  private void closeEndpoints(String reason) {
    ActorRef<PeerEndpoint.Closed> closedAdapter =
        ctx.messageAdapter(PeerEndpoint.Closed.class, c -> new EndpointClosed(c.peer()));
    endpoints.values().forEach(e -> e.tell(new PeerEndpoint.Close(reason, closedAdapter)));
  }

  /** An endpoint whose open failed: no later open waits on it; it stops once closed. */
  private void onRefused(PeerEndpoint.Refused r) {
    endpoints.remove(r.peer(), r.endpoint());
    r.endpoint().tell(new PeerEndpoint.Close("its open failed", ctx.getSystem().ignoreRef()));
  }

  /** Answers side closes whose lanes have all ended. */
  private void answerSideClosers() {
    if (endpoints.isEmpty() && !requesterClosers.isEmpty()) {
      requesterClosers.forEach(r -> r.tell(new TransportCommand.SideClosed("TCP")));
      requesterClosers.clear();
    }
    if (sourceLanes.isEmpty() && !sourceClosers.isEmpty()) {
      sourceClosers.forEach(r -> r.tell(new TransportCommand.SideClosed("TCP")));
      sourceClosers.clear();
    }
  }

  private static void closeQuietly(java.nio.channels.SocketChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // Refusing a connection: nothing else to do.
    }
  }

  private Behavior<TransportCommand> onOpenPeer(TransportCommand.OpenPeer m) {
    ActorRef<PeerEndpoint.Command> endpoint = endpoints.get(m.peer());
    PeerEndpoint.Attach attach = new PeerEndpoint.Attach(null, m.replyTo());
    if (endpoint == null) {
      ActorRef<PeerEndpoint.Refused> refused =
          ctx.messageAdapter(PeerEndpoint.Refused.class, EndpointRefused::new);
      // The sequence keeps names unique: a quarantined endpoint may outlive its entry here.
      endpoint =
          ctx.spawn(
              PeerEndpoint.create(
                  "TcpEndpoint",
                  m.peer(),
                  context,
                  fenced -> TcpLink.open(m.peer(), context, fenced),
                  attach,
                  refused::tell),
              "endpoint-"
                  + m.peer().port()
                  + "-"
                  + Long.toHexString(m.peer().epoch())
                  + "-"
                  + (++endpointSequence));
      ctx.watch(endpoint);
      endpoints.put(m.peer(), endpoint);
      return Behaviors.same();
    }
    endpoint.tell(attach);
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
          .setOption(
              java.net.StandardSocketOptions.SO_SNDBUF, context.config().tcp().socketBufferBytes());
      m.channel()
          .setOption(
              java.net.StandardSocketOptions.SO_RCVBUF, context.config().tcp().socketBufferBytes());
    } catch (IOException e) {
      ctx.getLog().debug("{}: socket options: {}", name, e.toString());
    }
    // C9: source lanes are bounded like the requester's endpoints. A lane over the bound is still
    // answered (HELLO_ACK RESOURCE_EXHAUSTED) and closed, so the peer learns why.
    int refusal =
        sourceLanes.size() >= maxSourceLanes
            ? io.orbite.engine.ErrorKind.RESOURCE_EXHAUSTED.code()
            : 0;
    SourceLane lane =
        new SourceLane(
            name,
            m.channel(),
            m.hello(),
            authority,
            context.localEpoch(),
            context.config().tcp().maxFramePayloadBytes(),
            context.counters(),
            refusal,
            l -> self.tell(new SourceLaneEnded(l)));
    sourceLanes.add(lane);
    LaneRuntime.start("orbite-tcp-" + name, lane);
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onEndpointStopped(Terminated t) {
    endpoints.values().removeIf(ref -> ref.equals(t.getRef()));
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onShutdown(TransportCommand.Shutdown m) {
    sourceLanes.forEach(SourceLane::close);
    closeEndpoints("the engine is closing");
    return stopping(new ArrayList<>(List.of(m.replyTo())));
  }

  /** Every endpoint and source lane closing; each Shutdown is answered when they all have. */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo) {
    answerSideClosers();
    if (endpoints.isEmpty() && sourceLanes.isEmpty()) {
      replyTo.forEach(r -> r.tell(new TransportCommand.ShutdownDone("TCP")));
      return Behaviors.stopped();
    }
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(TransportCommand.class)
            .onMessage(
                SourceLaneEnded.class,
                m -> {
                  sourceLanes.remove(m.lane());
                  return stopping(replyTo);
                })
            .onMessage(
                EndpointClosed.class,
                m -> {
                  endpoints.remove(m.peer());
                  return stopping(replyTo);
                })
            .onMessage(
                EndpointRefused.class,
                m -> {
                  onRefused(m.refused());
                  return stopping(replyTo);
                })
            .onSignal(
                Terminated.class,
                t -> {
                  onEndpointStopped(t);
                  return stopping(replyTo);
                })
            .onMessage(
                TransportCommand.AdoptConnection.class,
                m -> {
                  try {
                    m.channel().close();
                  } catch (IOException ignored) {
                    // Refusing a connection while stopping: nothing else to do.
                  }
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.OpenPeer.class,
                m -> {
                  m.replyTo()
                      .tell(
                          new TransportCommand.PeerOpenFailed(
                              ErrorKind.UNAVAILABLE, "TCP transport is stopping"));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  replyTo.add(m.replyTo());
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  requesterClosers.add(m.replyTo());
                  return stopping(replyTo);
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  sourceClosers.add(m.replyTo());
                  return stopping(replyTo);
                })
            .build());
  }
}
