package io.orbite.transport.rdma;

import io.orbite.config.RdmaConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.nativebind.verbs.NativeVerbs;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.nativebind.verbs.soft.SoftVerbs;
import io.orbite.transport.tcp.Authority;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
 * starting} (the provider and its devices open on the blocking-I/O executor; messages wait), {@link
 * #serving}, then {@link #stopping}.
 */
final class RdmaTransport {
  private record Started(Opened opened, Throwable failure) implements TransportCommand {}

  /** The rails the transport opened, and the selection policy over them. */
  private record Opened(List<Rail> rails, RailPolicy policy) {}

  private record SessionEnded(SourceSession session) implements TransportCommand {}

  private record EndpointClosed(SegmentDescriptor peer) implements TransportCommand {}

  private record ContextClosed(String device) implements TransportCommand {}

  /** Re-publishes the owner view's figures (they move on lane threads, between messages). */
  private enum Refresh implements TransportCommand {
    INSTANCE
  }

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

  private final Map<SegmentDescriptor, ActorRef<RdmaEndpoint.Command>> endpoints = new HashMap<>();
  private final Set<SourceSession> sessions = new HashSet<>();
  private final List<ActorRef<RdmaContext.Command>> contexts = new ArrayList<>();
  private List<Rail> rails = List.of();
  private RailSelector selector;
  private OwnerState state = OwnerState.OPENING;
  private String why = "";
  private long endpointSequence;
  private long sessionSequence;
  private boolean requesterOpen = true;
  private boolean sourceOpen = true;
  private final List<ActorRef<TransportCommand.SideClosed>> requesterClosers = new ArrayList<>();
  private final List<ActorRef<TransportCommand.SideClosed>> sourceClosers = new ArrayList<>();

  private RdmaTransport(ActorContext<TransportCommand> ctx, TransportContext context) {
    this.ctx = ctx;
    this.context = context;
    this.config = context.config().rdma();
    this.counters = new RdmaCounters(context.counters());
    this.direct = new DirectBytes(config.maxDirectBytes());
    this.parents = new DirectBytes("rdma.maxGrants", config.maxGrants());
    this.health =
        new RailHealth(
            new RailHealth.Policy(
                config.railErrors(),
                java.time.Duration.ofMillis(config.railErrorWindowMillis()),
                java.time.Duration.ofMillis(config.railCooldownMillis()),
                java.time.Duration.ofMillis(config.railProbeIntervalMillis()),
                java.time.Duration.ofMillis(config.railMaxCooldownMillis()),
                RailHealth.Policy.DEFAULTS.maxPairs()),
            System::nanoTime);
  }

  static Behavior<TransportCommand> create(TransportContext context) {
    return Behaviors.setup(
        ctx -> {
          RdmaTransport t = new RdmaTransport(ctx, context);
          Behavior<TransportCommand> first;
          if (!t.config.enabled()) {
            t.state = OwnerState.CLOSED;
            t.why = "RDMA is not enabled here (rdma.enabled is false)";
            first = t.refusing();
          } else {
            first =
                Behaviors.withTimers(
                    timers -> {
                      timers.startTimerWithFixedDelay(Refresh.INSTANCE, VIEW_REFRESH);
                      return Behaviors.withStash(256, stash -> t.starting(stash));
                    });
          }
          return OwnerBoard.reporting(context.owners(), t::report, first);
        });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "RdmaTransport",
        state,
        Map.ofEntries(
            Map.entry("rails", (long) rails.size()),
            Map.entry("endpoints", (long) endpoints.size()),
            Map.entry("sourceSessions", (long) sessions.size()),
            Map.entry("grants", (long) grantsHeld.get()),
            Map.entry("grantsLimit", (long) config.maxGrants()),
            Map.entry("grantsBound", counters.grantsBound.sum()),
            Map.entry("grantsRefused", counters.grantsRefused.sum()),
            Map.entry("grantsRetained", counters.grantsRetained.sum()),
            Map.entry("directBytes", direct.usedBytes()),
            Map.entry("directBytesLimit", direct.limitBytes()),
            Map.entry("directBytesWaiting", direct.waitingBytes()),
            Map.entry("tasksAwaitingDirectBytes", counters.tasksAwaitingDirectBytes.sum()),
            Map.entry("parentsReserved", parents.usedBytes()),
            Map.entry("tasksAwaitingGrants", counters.tasksAwaitingGrants.sum()),
            Map.entry("directBytesRefused", counters.directBytesRefused.sum()),
            Map.entry("slicesDispatched", counters.slicesDispatched.sum()),
            Map.entry("slicesRefusedByHealth", counters.slicesRefusedByHealth.sum()),
            Map.entry("slicesPastDeadline", counters.slicesPastDeadline.sum()),
            Map.entry("tasksPastDeadline", counters.tasksPastDeadline.sum()),
            Map.entry("tasksRefusedByPolicy", counters.tasksRefusedByPolicy.sum()),
            Map.entry("qpsFailed", counters.qpsFailed.sum()),
            Map.entry("qpsRepaired", counters.qpsRepaired.sum()),
            Map.entry("lanesFaulted", rails.stream().mapToLong(r -> r.lanesFaulted.sum()).sum()),
            Map.entry("monitorTicks", counters.monitorTicks.sum()),
            Map.entry("eventScans", counters.eventScans.sum()),
            Map.entry("qpsGoneAtSource", counters.qpsGoneAtSource.sum()),
            Map.entry("routeQueries", counters.routeQueries.sum()),
            Map.entry("routeFences", counters.routeFences.sum()),
            Map.entry("routeRecoveries", counters.routeRecoveries.sum()),
            Map.entry(
                "railPairsOpen",
                health.view().stream().filter(p -> p.state() != RailHealth.State.CLOSED).count())),
        why);
  }

  // ---------------------------------------------------------------- refusing and starting

  private Behavior<TransportCommand> starting(StashBuffer<TransportCommand> stash) {
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(this::openRails, context.blockingIo()), Started::new);
    return Behaviors.receive(TransportCommand.class)
        .onMessage(
            Started.class,
            m -> {
              if (m.failure() != null) {
                Throwable cause =
                    m.failure() instanceof java.util.concurrent.CompletionException c
                        ? c.getCause()
                        : m.failure();
                why =
                    (cause instanceof RailPolicy.Refused
                                || cause instanceof io.orbite.config.ConfigException
                            ? "RDMA rail selection refused the rails: "
                            : "no RDMA rail: ")
                        + cause.getMessage();
                state = OwnerState.FENCED;
                ctx.getLog().warn("RDMA transport unavailable: {}", why);
                return stash.unstashAll(refusing());
              }
              rails = m.opened().rails();
              selector =
                  new RailSelector(
                      rails.stream().mapToDouble(Rail::gbps).toArray(), m.opened().policy());
              for (Rail rail : rails) {
                rail.lanes.forEach(CqLane::start);
                ActorRef<RdmaContext.Command> c =
                    ctx.spawn(
                        RdmaContext.create(rail, context, health, selector, counters),
                        "context-" + rail.device);
                contexts.add(c);
              }
              state = OwnerState.SERVING;
              return stash.unstashAll(serving());
            })
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onAnyMessage(
            m -> {
              stash.stash(m);
              return Behaviors.same();
            })
        .build();
  }

  /**
   * The software provider's devices: {@code soft0}... ({@code rdma.softwareDevices} of them), each
   * listening on its address ({@code rdma.softwareAddresses}, device i on entry i modulo the list's
   * length, or all on {@code rdma.softwareAddress}), so rails can run over different links.
   */
  private SoftFabric softwareFabric() {
    List<SoftFabric.DeviceSpec> devices = new ArrayList<>();
    for (int i = 0; i < config.softwareDevices(); i++) {
      devices.add(
          SoftFabric.DeviceSpec.of(
              "soft" + i, config.softwareAddressOf(i), 0x0200_5e00_0000_0000L | (i + 1)));
    }
    return SoftFabric.of(devices);
  }

  /**
   * The provider's devices (those {@code rdma.devices} names, or all), opened as rails, and the
   * selection policy over them ({@code rdma.selection}: the mask and the matrix checked against the
   * opened devices, the topology file read here, off the mailbox). A failure closes what was
   * opened.
   */
  private Opened openRails() {
    Verbs verbs =
        "native".equals(config.provider())
            ? NativeVerbs.system()
            : SoftVerbs.create(
                softwareFabric(),
                context.hooks().rdmaFaults() instanceof SoftFaults f ? f : SoftFaults.NONE);
    VerbsResult<List<Verbs.Device>> listed = verbs.getDeviceList();
    if (!listed.ok()) {
      throw new IllegalStateException(verbs.provider() + ": " + listed.describe());
    }
    List<Verbs.Device> chosen = new ArrayList<>();
    for (Verbs.Device d : listed.value()) {
      if (config.devices().isEmpty() || config.devices().contains(d.name())) {
        chosen.add(d);
      }
    }
    for (String wanted : config.devices()) {
      if (listed.value().stream().noneMatch(d -> d.name().equals(wanted))) {
        throw new IllegalStateException(
            "rdma.devices names "
                + wanted
                + ", which "
                + verbs.provider()
                + " does not list (it lists "
                + listed.value().stream().map(Verbs.Device::name).toList()
                + ")");
      }
    }
    if (chosen.isEmpty()) {
      throw new IllegalStateException(verbs.provider() + " lists no RDMA device");
    }
    List<Rail> opened = new ArrayList<>();
    try {
      for (Verbs.Device d : chosen) {
        opened.add(
            Rail.open(verbs, d, opened.size(), config, context.registry(), context.counters()));
        opened.getLast().hooks = context.hooks();
      }
      return new Opened(opened, policy(opened));
    } catch (RuntimeException e) {
      opened.forEach(Rail::close);
      throw e;
    }
  }

  /**
   * {@code rdma.selection} over the opened rails; the inline matrix wins over the topology file.
   *
   * @throws RailPolicy.Refused for a mask or matrix name that is not an opened device
   * @throws io.orbite.config.ConfigException for a topology file that cannot be read or parsed
   */
  private RailPolicy policy(List<Rail> opened) {
    io.orbite.config.RdmaSelectionConfig selection = config.selection();
    io.orbite.config.RdmaPriorityMatrix matrix = selection.priorityMatrix();
    if (matrix.isEmpty() && !selection.customJsonPath().isEmpty()) {
      java.nio.file.Path file;
      try {
        file = java.nio.file.Path.of(selection.customJsonPath());
      } catch (java.nio.file.InvalidPathException e) {
        throw new io.orbite.config.ConfigException(
            "rdma.selection.customJsonPath", "not a path: " + e.getMessage(), e);
      }
      matrix = io.orbite.config.RdmaPriorityMatrix.readFile(file);
    }
    return RailPolicy.of(
        selection,
        opened.stream().map(r -> r.device).toList(),
        opened.stream().mapToInt(r -> r.numaNode).toArray(),
        matrix);
  }

  /**
   * Refusing: RDMA is off here, or no rail could be opened ({@code why} says which). Every open is
   * refused UNAVAILABLE naming it, every RDMA connection is answered (HELLO_ACK UNAVAILABLE) and
   * closed, and closes are answered at once: there is nothing to drain.
   */
  private Behavior<TransportCommand> refusing() {
    return Behaviors.receive(TransportCommand.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(
            TransportCommand.OpenPeer.class,
            m -> {
              m.replyTo().tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, why));
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.AdoptConnection.class,
            m -> {
              refuseConnection(m.channel(), m.hello(), ErrorKind.UNAVAILABLE);
              return Behaviors.same();
            })
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
        .build();
  }

  /** Answers an RDMA HELLO with a refusal (HELLO_ACK {@code kind}) and closes the connection. */
  private void refuseConnection(SocketChannel channel, ByteBuffer hello, ErrorKind kind) {
    context
        .blockingIo()
        .execute(
            () -> {
              try (channel) {
                channel.configureBlocking(true);
                ByteBuffer ack = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
                FrameCodec.encode(
                    ack,
                    0,
                    FrameType.HELLO_ACK,
                    kind.code(),
                    0,
                    FrameCodec.requestId(hello, 0),
                    context.localEpoch(),
                    0,
                    0,
                    0);
                while (ack.hasRemaining()) {
                  channel.write(ack);
                }
              } catch (IOException ignored) {
                // The peer went away: it learns nothing more either way.
              }
            });
  }

  // ---------------------------------------------------------------- serving

  private Behavior<TransportCommand> serving() {
    return Behaviors.receive(TransportCommand.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(TransportCommand.OpenPeer.class, this::onOpenPeer)
        .onMessage(TransportCommand.AdoptConnection.class, this::onAdopt)
        .onMessage(
            SessionEnded.class,
            m -> {
              sessions.remove(m.session());
              answerSideClosers();
              return Behaviors.same();
            })
        .onMessage(
            EndpointClosed.class,
            m -> {
              endpoints.remove(m.peer());
              answerSideClosers();
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.CloseRequesterSide.class,
            m -> {
              requesterOpen = false;
              requesterClosers.add(m.replyTo());
              closeEndpoints("the requester side of this engine closed");
              answerSideClosers();
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.CloseSourceSide.class,
            m -> {
              sourceOpen = false;
              sourceClosers.add(m.replyTo());
              List.copyOf(sessions).forEach(s -> s.close("the source side of this engine closed"));
              answerSideClosers();
              return Behaviors.same();
            })
        .onMessage(TransportCommand.Shutdown.class, this::onShutdown)
        .build();
  }

  private Behavior<TransportCommand> onOpenPeer(TransportCommand.OpenPeer m) {
    if (!requesterOpen) {
      m.replyTo()
          .tell(
              new TransportCommand.PeerOpenFailed(
                  ErrorKind.UNAVAILABLE, "the requester side of this engine is closed"));
      return Behaviors.same();
    }
    ActorRef<RdmaEndpoint.Command> endpoint = endpoints.get(m.peer());
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
      endpoint =
          ctx.spawn(
              RdmaEndpoint.create(
                  m.peer(), context, rails, health, selector, counters, direct, parents),
              "endpoint-"
                  + m.peer().port()
                  + "-"
                  + Long.toHexString(m.peer().epoch())
                  + "-"
                  + (++endpointSequence));
      ctx.watchWith(endpoint, new EndpointClosed(m.peer()));
      endpoints.put(m.peer(), endpoint);
      counters.endpointsOpened.increment();
    }
    endpoint.tell(new RdmaEndpoint.Attach(m.replyTo()));
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onAdopt(TransportCommand.AdoptConnection m) {
    if (!sourceOpen) {
      refuseConnection(m.channel(), m.hello(), ErrorKind.UNAVAILABLE);
      return Behaviors.same();
    }
    int refusal =
        sessions.size() >= config.maxEndpoints() ? ErrorKind.RESOURCE_EXHAUSTED.code() : 0;
    ActorRef<TransportCommand> self = ctx.getSelf();
    SourceSession session =
        new SourceSession(
            "rdma source session " + (++sessionSequence),
            m.channel(),
            m.hello(),
            context.localEpoch(),
            refusal,
            rails,
            new Authority(context.registry(), context.localEpoch()),
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
    sessions.add(session);
    Thread.ofPlatform().daemon().name("orbite-" + session.name().replace(' ', '-')).start(session);
    return Behaviors.same();
  }

  private void closeEndpoints(String reason) {
    ActorRef<RdmaEndpoint.Closed> adapter =
        ctx.messageAdapter(RdmaEndpoint.Closed.class, c -> new EndpointClosed(c.peer()));
    endpoints.values().forEach(e -> e.tell(new RdmaEndpoint.Close(reason, adapter)));
  }

  private void answerSideClosers() {
    if (endpoints.isEmpty() && !requesterClosers.isEmpty()) {
      requesterClosers.forEach(r -> r.tell(new TransportCommand.SideClosed("RDMA")));
      requesterClosers.clear();
    }
    if (sessions.isEmpty() && !sourceClosers.isEmpty()) {
      sourceClosers.forEach(r -> r.tell(new TransportCommand.SideClosed("RDMA")));
      sourceClosers.clear();
    }
  }

  // ---------------------------------------------------------------- stopping

  private Behavior<TransportCommand> onShutdown(TransportCommand.Shutdown m) {
    state = OwnerState.STOPPING;
    requesterOpen = false;
    sourceOpen = false;
    closeEndpoints("the engine is shutting down");
    List.copyOf(sessions).forEach(s -> s.close("the engine is shutting down"));
    return stopping(new ArrayList<>(List.of(m.replyTo())), false);
  }

  /** Endpoints and sessions first, then the contexts (their lanes and native objects). */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo, boolean contextsClosing) {
    answerSideClosers();
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
    return Behaviors.receive(TransportCommand.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(
            SessionEnded.class,
            m -> {
              sessions.remove(m.session());
              return stopping(replyTo, closingNow);
            })
        .onMessage(
            EndpointClosed.class,
            m -> {
              endpoints.remove(m.peer());
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
        .onMessage(
            TransportCommand.AdoptConnection.class,
            m -> {
              refuseConnection(m.channel(), m.hello(), ErrorKind.UNAVAILABLE);
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.OpenPeer.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNAVAILABLE, "RDMA transport is stopping"));
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
              return stopping(replyTo, closingNow);
            })
        .onMessage(
            TransportCommand.CloseSourceSide.class,
            m -> {
              sourceClosers.add(m.replyTo());
              return stopping(replyTo, closingNow);
            })
        .build();
  }
}
