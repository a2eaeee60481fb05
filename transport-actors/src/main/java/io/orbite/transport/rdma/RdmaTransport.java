package io.orbite.transport.rdma;

import io.orbite.config.RdmaConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.transport.endpoint.PeerEndpoint;
import io.orbite.transport.endpoint.PeerEndpoints;
import io.orbite.transport.endpoint.RequesterIncarnations;
import io.orbite.transport.endpoint.SideClosers;
import io.orbite.transport.lane.LaneRuntime;
import io.orbite.transport.tcp.Authority;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.StashBuffer;

/**
 * Supervisor of the RDMA transport: one {@link RdmaContext} child per rail (device), one {@link
 * RdmaEndpoint} child per peer incarnation, and, per RDMA control connection a peer opened to this
 * engine, one {@link SourceSession} thread with its owner {@link SourceSessionOwner} as a child
 * (the parent of that session's {@link GrantOwner}s). The rail circuit (C13) is shared by every
 * endpoint.
 *
 * <p>States: {@link #refusing} ({@code rdma.enabled} is false, or no device could be opened: every
 * open is refused UNAVAILABLE naming why, and every RDMA connection is answered and closed), {@code
 * starting} (the provider and its devices open on the blocking-I/O executor; messages wait, opens
 * and connections past {@link #START_OPENS} are refused UNAVAILABLE), {@link #serving}, then {@link
 * #stopping}.
 */
final class RdmaTransport {
  private record Started(RailOpener.Opened opened, Throwable failure) implements TransportCommand {}

  private record SessionEnded(SourceSession session) implements TransportCommand {}

  private record ContextClosed(String device) implements TransportCommand {}

  /** Re-publishes the owner view's figures (they move on lane threads, between messages). */
  private enum Refresh implements TransportCommand {
    INSTANCE
  }

  /** Messages held while the rails open. */
  private static final int START_STASH = 256;

  /**
   * Opens and connections held while the rails open, at most: the rest of the stash keeps room for
   * the closes and the shutdown, which wait for the start's outcome however many opens came.
   */
  static final int START_OPENS = START_STASH - 16;

  /** How often owners whose figures move between messages re-publish them. */
  static final java.time.Duration VIEW_REFRESH = java.time.Duration.ofMillis(200);

  private final ActorContext<TransportCommand> ctx;
  private final TransportContext context;
  private final RdmaConfig config;
  private final RdmaCounters counters;
  private final RailHealth health;
  private final AtomicInteger grantsHeld = new AtomicInteger();

  /** {@code rdma.maxDirectBytes}, shared by this engine's requester slices and source windows. */
  private final DirectBytes direct;

  /**
   * {@code rdma.maxGrants} on the requester side: the parents this engine's endpoints hold reserved
   * at their sources at once (one unit each, RESERVE to DONE); a task beyond it waits, in order.
   */
  private final DirectBytes parents;

  private final PeerEndpoints endpoints;
  private final Set<SourceSession> sessions = new HashSet<>();

  /** Which requester incarnation each session serves: a new one fences the old one's sessions. */
  private final RequesterIncarnations<SourceSession> incarnations;

  private final List<ActorRef<RdmaContext.Command>> contexts = new ArrayList<>();
  private List<Rail> rails = List.of();
  private RailSelector selector;

  /** Why it refuses (data of the refusing state); empty while it serves. */
  private String why = "";

  private long sessionSequence;
  private boolean requesterOpen = true;
  private boolean sourceOpen = true;
  private final SideClosers sourceClosers = new SideClosers("RDMA");

  private RdmaTransport(ActorContext<TransportCommand> ctx, TransportContext context) {
    this.ctx = ctx;
    this.context = context;
    this.config = context.config().rdma();
    this.counters = new RdmaCounters(context.counters());
    this.direct = new DirectBytes(config.maxDirectBytes());
    this.parents = new DirectBytes("rdma.maxGrants", config.maxGrants());
    this.health = RailOpener.health(config);
    this.endpoints = new PeerEndpoints(ctx, "RDMA");
    this.incarnations = new RequesterIncarnations<>("RDMA source sessions", context.counters());
  }

  static Behavior<TransportCommand> create(TransportContext context) {
    return Behaviors.setup(
        ctx -> {
          RdmaTransport t = new RdmaTransport(ctx, context);
          Behavior<TransportCommand> first;
          if (!t.config.enabled()) {
            t.why = "RDMA is not enabled here (rdma.enabled is false)";
            first = t.refusing(OwnerState.OFF);
          } else {
            first =
                Behaviors.withTimers(
                    timers -> {
                      timers.startTimerWithFixedDelay(Refresh.INSTANCE, VIEW_REFRESH);
                      return Behaviors.withStash(START_STASH, stash -> t.starting(stash));
                    });
          }
          return OwnerBoard.reporting(context.owners(), t::report, first);
        });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "RdmaTransport",
        counters.transportFigures(
            rails.size(),
            endpoints.size(),
            sessions.size(),
            grantsHeld.get(),
            config.maxGrants(),
            direct,
            parents,
            rails.stream().mapToLong(r -> r.lanesFaulted.sum()).sum(),
            health.view().stream().filter(p -> p.state() != RailHealth.State.CLOSED).count()),
        why);
  }

  // ---------------------------------------------------------------- refusing and starting

  private Behavior<TransportCommand> starting(StashBuffer<TransportCommand> stash) {
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(new RailOpener(context)::openRails, context.blockingIo()),
        Started::new);
    return context
        .owners()
        .in(
            OwnerState.OPENING,
            Behaviors.receive(TransportCommand.class)
                .onMessage(
                    Started.class,
                    m -> {
                      if (m.failure() != null) {
                        why = RailOpener.refusal(m.failure());
                        ctx.getLog().warn("RDMA transport unavailable: {}", why);
                        return stash.unstashAll(refusing(OwnerState.FENCED));
                      }
                      rails = m.opened().rails();
                      selector =
                          new RailSelector(
                              rails.stream().mapToDouble(Rail::gbps).toArray(),
                              m.opened().policy());
                      for (Rail rail : rails) {
                        rail.lanes.forEach(CqLane::start);
                        ActorRef<RdmaContext.Command> c =
                            ctx.spawn(
                                RdmaContext.create(rail, context, health, selector, counters),
                                "context-" + rail.device);
                        contexts.add(c);
                      }
                      return stash.unstashAll(serving());
                    })
                .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
                .onAnyMessage(
                    m -> {
                      // Past what the start holds, opens are answered now: a stash overflow
                      // would stop the transport with every waiting open unanswered.
                      boolean full = stash.size() >= START_OPENS;
                      if (full && m instanceof TransportCommand.OpenPeer o) {
                        PeerEndpoints.refuse(
                            o, "RDMA transport is starting: its rails are opening");
                        return Behaviors.same();
                      }
                      if (full && m instanceof TransportCommand.AdoptConnection a) {
                        return refuseConnection(a);
                      }
                      stash.stash(m);
                      return Behaviors.same();
                    })
                .build());
  }

  /**
   * Refusing: RDMA is off here, or no rail could be opened ({@code why} says which). Every open is
   * refused UNAVAILABLE naming it, every RDMA connection is answered (HELLO_ACK UNAVAILABLE) and
   * closed, and closes are answered at once: there is nothing to drain.
   */
  private Behavior<TransportCommand> refusing(OwnerState shown) {
    return context
        .owners()
        .in(
            shown,
            Behaviors.receive(TransportCommand.class)
                .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
                .onMessage(
                    TransportCommand.OpenPeer.class,
                    m -> {
                      PeerEndpoints.refuse(m, why);
                      return Behaviors.same();
                    })
                .onMessage(TransportCommand.AdoptConnection.class, this::refuseConnection)
                .onMessage(
                    TransportCommand.CloseRequesterSide.class,
                    m -> {
                      m.replyTo().tell(new TransportCommand.SideClosed("RDMA"));
                      return Behaviors.same();
                    })
                .onMessage(
                    TransportCommand.CloseSourceSide.class,
                    m -> {
                      m.replyTo().tell(new TransportCommand.SideClosed("RDMA"));
                      return Behaviors.same();
                    })
                .onMessage(
                    TransportCommand.Shutdown.class,
                    m -> {
                      m.replyTo().tell(new TransportCommand.ShutdownDone("RDMA"));
                      return Behaviors.stopped();
                    })
                .build());
  }

  /** Answers an RDMA HELLO with a refusal (HELLO_ACK UNAVAILABLE) and closes the connection. */
  private Behavior<TransportCommand> refuseConnection(TransportCommand.AdoptConnection m) {
    context
        .blockingIo()
        .execute(
            () ->
                SourceSession.refuse(
                    m.conduit(), m.hello(), ErrorKind.UNAVAILABLE, context.localEpoch()));
    return Behaviors.same();
  }

  // ---------------------------------------------------------------- serving

  private Behavior<TransportCommand> serving() {
    return context
        .owners()
        .in(
            OwnerState.SERVING,
            Behaviors.receive(TransportCommand.class)
                .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
                .onMessage(TransportCommand.OpenPeer.class, this::onOpenPeer)
                .onMessage(TransportCommand.AdoptConnection.class, this::onAdopt)
                .onMessage(
                    SessionEnded.class,
                    m -> {
                      sessionEnded(m.session());
                      sourceClosers.answerIf(sessions.isEmpty());
                      return Behaviors.same();
                    })
                .onMessage(PeerEndpoints.Event.class, endpoints::onEvent)
                .onMessage(
                    TransportCommand.CloseRequesterSide.class,
                    m -> {
                      requesterOpen = false;
                      endpoints.closeRequesterSide(
                          m.replyTo(), "the requester side of this engine closed");
                      return Behaviors.same();
                    })
                .onMessage(
                    TransportCommand.CloseSourceSide.class,
                    m -> {
                      sourceOpen = false;
                      sourceClosers.add(m.replyTo());
                      List.copyOf(sessions)
                          .forEach(s -> s.close("the source side of this engine closed"));
                      sourceClosers.answerIf(sessions.isEmpty());
                      return Behaviors.same();
                    })
                .onMessage(TransportCommand.Shutdown.class, this::onShutdown)
                .build());
  }

  private Behavior<TransportCommand> onOpenPeer(TransportCommand.OpenPeer m) {
    if (!requesterOpen) {
      return PeerEndpoints.refuseRequesterSideClosed(m);
    }
    ActorRef<PeerEndpoint.Command> endpoint = endpoints.get(m.peer());
    PeerEndpoint.Attach attach = new PeerEndpoint.Attach(null, m.replyTo());
    if (endpoint == null) {
      if (endpoints.size() >= config.maxEndpoints()) {
        counters.endpointsRefused.increment();
        m.replyTo()
            .tell(
                new TransportCommand.PeerOpenFailed(
                    ErrorKind.RESOURCE_EXHAUSTED,
                    "rdma.maxEndpoints: " + config.maxEndpoints() + " RDMA endpoints are open"));
        return Behaviors.same();
      }
      RdmaStack stack = new RdmaStack(rails, health, selector, counters, direct, parents);
      endpoints.open(
          "RdmaEndpoint",
          m.peer(),
          context,
          fenced -> RdmaLink.open(m.peer(), m.description().limits(), context, stack, fenced),
          attach);
      counters.endpointsOpened.increment();
      return Behaviors.same();
    }
    endpoint.tell(attach);
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onAdopt(TransportCommand.AdoptConnection m) {
    if (!sourceOpen) {
      return refuseConnection(m);
    }
    // Its HELLO fences the sessions of its requester's older incarnation first (they are leaving:
    // the bound does not count them); the new session answers once they have ended.
    long requesterEpoch = FrameCodec.regionId(m.hello(), 0);
    InetAddress from = remoteAddress(m);
    CompletableFuture<Void> fenced =
        incarnations.fence(
            m.requester(),
            requesterEpoch,
            from,
            FrameCodec.epoch(m.hello(), 0) == context.localEpoch(),
            SourceSession::close);
    int refusal =
        sessions.size() - incarnations.fencing() >= config.maxEndpoints()
            ? ErrorKind.RESOURCE_EXHAUSTED.code()
            : 0;
    ActorRef<TransportCommand> self = ctx.getSelf();
    SourceSession session =
        new SourceSession(
            "rdma source session " + (++sessionSequence),
            m.conduit(),
            m.hello(),
            context.localEpoch(),
            refusal,
            fenced,
            Math.max(1, context.config().tcp().connectTimeoutMillis() / 2),
            rails,
            new Authority(context.registry(), context.localEpoch(), m.peer()),
            grantsHeld,
            config.maxGrants(),
            direct,
            counters);
    // Its owner (the parent of its grants) tells this transport once the session ended and every
    // grant that can end did, their loans back.
    ActorRef<SourceSessionOwner.Command> owner =
        ctx.spawn(
            SourceSessionOwner.create(session, context, self, new SessionEnded(session)),
            "source-session-" + sessionSequence);
    session.owner(owner);
    incarnations.record(session, m.requester(), requesterEpoch, from);
    sessions.add(session);
    LaneRuntime.startBlocking("orbite-" + session.name().replace(' ', '-'), session);
    return Behaviors.same();
  }

  private static InetAddress remoteAddress(TransportCommand.AdoptConnection m) {
    try {
      return m.channel().getRemoteAddress() instanceof InetSocketAddress a ? a.getAddress() : null;
    } catch (java.io.IOException e) {
      return null; // closed already: the session ends at once
    }
  }

  private void sessionEnded(SourceSession session) {
    sessions.remove(session);
    incarnations.ended(session);
  }

  // ---------------------------------------------------------------- stopping

  private Behavior<TransportCommand> onShutdown(TransportCommand.Shutdown m) {
    requesterOpen = false;
    sourceOpen = false;
    endpoints.closeAll("the engine is shutting down");
    List.copyOf(sessions).forEach(s -> s.close("the engine is shutting down"));
    return stopping(new ArrayList<>(List.of(m.replyTo())), false);
  }

  /** Endpoints and sessions first, then the contexts (their lanes and native objects). */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo, boolean contextsClosing) {
    endpoints.answerRequesterClosers();
    sourceClosers.answerIf(sessions.isEmpty());
    if (endpoints.isEmpty() && sessions.isEmpty()) {
      if (contexts.isEmpty()) {
        replyTo.forEach(r -> r.tell(new TransportCommand.ShutdownDone("RDMA")));
        return Behaviors.stopped();
      }
      if (!contextsClosing) {
        ActorRef<RdmaContext.Closed> adapter =
            ctx.messageAdapter(RdmaContext.Closed.class, c -> new ContextClosed(c.device()));
        contexts.forEach(c -> c.tell(new RdmaContext.Close(adapter)));
        contextsClosing = true;
      }
    }
    boolean closingNow = contextsClosing;
    return context
        .owners()
        .in(
            OwnerState.STOPPING,
            endpoints
                .stopping(replyTo, () -> stopping(replyTo, closingNow))
                .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
                .onMessage(
                    SessionEnded.class,
                    m -> {
                      sessionEnded(m.session());
                      return stopping(replyTo, closingNow);
                    })
                .onMessage(
                    PeerEndpoints.Event.class,
                    m -> {
                      endpoints.on(m);
                      return stopping(replyTo, closingNow);
                    })
                .onMessage(
                    ContextClosed.class,
                    m -> {
                      if (!contexts.isEmpty()) {
                        contexts.removeFirst();
                      }
                      return stopping(replyTo, closingNow);
                    })
                .onMessage(TransportCommand.AdoptConnection.class, this::refuseConnection)
                .onMessage(
                    TransportCommand.CloseSourceSide.class,
                    m -> {
                      sourceClosers.add(m.replyTo());
                      return stopping(replyTo, closingNow);
                    })
                .build());
  }
}
