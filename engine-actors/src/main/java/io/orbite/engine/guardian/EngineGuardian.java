package io.orbite.engine.guardian;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.control.ControlService;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.PeerTransport;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.view.OwnerBoard;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Root of one engine incarnation: spawns and watches the Registry, Admission, SegmentTable,
 * ControlService, one supervisor per available transport (found with {@link ServiceLoader}), and
 * one BatchActor per batch. Runs as the guardian of the engine's own ActorSystem or as a system
 * actor under a host application's system.
 *
 * <p>The guardian owns the engine's lifecycle and publishes it in {@link EngineLifecycle}: {@link
 * #running} (it also orchestrates the directional closes, C8: {@link CloseRequester}, {@link
 * CloseSource}), {@link #stopping} (control service, then transports), {@link #awaitingRegistry}
 * (the owners were stopped; the close is confirmed when the Registry has terminated), then stopped.
 * It never polls: it waits on the admission gate's drain signal and on its children's Terminated.
 */
public final class EngineGuardian {
  public sealed interface Command {}

  /**
   * The engine's parts, for the public API facade; handed over once, when the guardian has set up.
   * The actors are there for requests only (register, open, peers); every lifecycle message goes
   * through the guardian.
   */
  public record Handles(
      SegmentDescriptor self,
      ActorRef<Registry.Command> registry,
      ActorRef<SegmentTable.Command> segmentTable,
      Map<Transport, ActorRef<TransportCommand>> transports,
      AdmissionGate gate,
      OwnerSupervision supervision,
      EngineLifecycle lifecycle) {}

  /** Charge a batch slot and spawn its actor. */
  public record SpawnBatch(int capacity, ActorRef<SpawnBatchReply> replyTo) implements Command {}

  public sealed interface SpawnBatchReply {}

  /** A new batch, not leased yet: its actor runs and is bound to {@code core}. */
  public record BatchSpawned(BatchCore core) implements SpawnBatchReply {}

  public record BatchRefused(Admission.Decision decision) implements SpawnBatchReply {}

  /** A direction of the engine (C8). */
  public enum Side {
    /** Submitting transfers to peers. */
    REQUESTER,
    /** Serving peers' transfers. */
    SOURCE
  }

  /**
   * Close the requester side (C8): refuse new batches, tasks and opens at once, let admitted work
   * finish until {@code deadlineNanos}, close every requester lane, then wait (at most {@link
   * #RECEIPTS_AFTER_CLOSE}) for the lanes' last receipts to reach their batches.
   */
  public record CloseRequester(long deadlineNanos, ActorRef<SideClosed> replyTo)
      implements Command {}

  /**
   * Close the source side (C8): stop the listener, close every source lane, then fence every range
   * shared with same-host peers.
   */
  public record CloseSource(ActorRef<SideClosed> replyTo) implements Command {}

  /**
   * A side closed. For SOURCE, {@code sharedStillCopying} is the number of shared ranges a
   * same-host peer was still copying when the destruction window ended, or -1 when the Registry is
   * quarantined and could not fence them; 0 for REQUESTER.
   */
  public record SideClosed(Side side, int sharedStillCopying) {}

  /** Stop serving, stop the transports, then stop the engine's owners and confirm. */
  public record Shutdown(ActorRef<ShutdownDone> replyTo) implements Command {}

  public record ShutdownDone() {}

  /** A step of a side close: the requester's admitted work drained (or its deadline passed). */
  private record RequesterDrained(ActorRef<SideClosed> replyTo, boolean lanesClosed)
      implements Command {}

  /** A step of a side close: the listener stopped. */
  private record ListenerStopped(ActorRef<SideClosed> replyTo) implements Command {}

  /** A step of a side close: one transport (or, with {@code left} 0, none) answered. */
  private record TransportSideClosed(ActorRef<SideClosed> replyTo, Side side, int left)
      implements Command {}

  /** A step of a source close: the Registry fenced the shared ranges. */
  private record SharedFenced(ActorRef<SideClosed> replyTo, int stillCopying) implements Command {}

  private record ControlStopped() implements Command {}

  private record TransportStopped(String transport) implements Command {}

  /** How long a requester close waits, after its lanes ended, for their receipts to be applied. */
  public static final Duration RECEIPTS_AFTER_CLOSE = Duration.ofSeconds(5);

  private final ActorContext<Command> ctx;
  private final EngineConfig config;
  private final EngineTally counters;
  private final OwnerBoard board;
  private final QuarantineLedger quarantine;

  /**
   * The budgets, charged here and by the batches directly; owned (fenced, reported) by Admission.
   */
  private final AdmissionGate gate;

  private final Handles handles;
  private final ActorRef<Admission.Command> admission;
  private final ActorRef<ControlService.Command> control;
  private final OwnerSupervision supervision;

  /** The batches' owners, watched: one that stops without being retired is quarantined. */
  private final Map<ActorRef<?>, BatchCore> batches = new java.util.HashMap<>();

  /** The supervised owners by actor, for the guardian's watch. */
  private final Map<ActorRef<?>, String> owners = new java.util.HashMap<>();

  private long batchSequence;

  /** Set once the Registry has terminated: nothing is visible any more, and memory is released. */
  private boolean registryStopped;

  /** Side closes under way, by reply address; a shutdown answers them all at once. */
  private final Map<ActorRef<SideClosed>, Side> sideCloses = new java.util.HashMap<>();

  /** Side closes waiting for their transports: reply address to transports still to answer. */
  private final java.util.Map<ActorRef<SideClosed>, Integer> sideClosesLeft =
      new java.util.HashMap<>();

  private EngineGuardian(
      ActorContext<Command> ctx,
      EngineConfig config,
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registryView,
      EngineTally counters,
      OwnerBoard board,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      List<TransportProvider> providers) {
    this.ctx = ctx;
    this.config = config;
    this.counters = counters;
    this.board = board;
    this.quarantine = quarantine;
    board.root(ctx.getSelf());
    Executor blockingIo =
        ctx.getSystem()
            .dispatchers()
            .lookup(DispatcherSelector.fromConfig("orbite.blocking-io-dispatcher"));
    this.supervision =
        new OwnerSupervision(config.name() + "@" + self, quarantine, counters, board, hooks);
    var registry =
        ctx.spawn(
            supervision.supervise(
                REGISTRY,
                Registry.Command.class,
                Registry.create(
                    registryView,
                    config.budgets().maxRegistrations(),
                    Duration.ofMillis(config.timeouts().destructionWindowMillis()),
                    quarantine,
                    board),
                Registry::refuse),
            "registry");
    this.gate = new AdmissionGate(config.budgets());
    this.admission =
        ctx.spawn(
            supervision.supervise(
                ADMISSION,
                Admission.Command.class,
                Admission.create(gate, config.budgets(), board),
                (m, why) -> Admission.refuse(m, why, gate)),
            "admission");
    TransportContext transportContext =
        new TransportContext(
            config,
            registryView,
            self.epoch(),
            blockingIo,
            counters,
            board,
            quarantine,
            hooks,
            supervision);
    Map<Transport, ActorRef<TransportCommand>> transports = new EnumMap<>(Transport.class);
    for (TransportProvider provider :
        providers) { // one per kind, TCP among them (transportProviders)
      String owner = "transport-" + provider.kind().name().toLowerCase(java.util.Locale.ROOT);
      var ref =
          ctx.spawn(
              supervision.supervise(
                  owner,
                  TransportCommand.class,
                  provider.create(transportContext),
                  (msg, why) -> refuseTransport(msg, owner, why)),
              owner);
      ctx.watch(ref);
      owners.put(ref, owner);
      transports.put(provider.kind(), ref);
    }
    var segmentTable =
        ctx.spawn(
            supervision.supervise(
                SEGMENT_TABLE,
                SegmentTable.Command.class,
                SegmentTable.create(
                    admission,
                    peerTransports(providers, transports, config, TransportProvider.PeerRole.BASE)
                        .getFirst(),
                    peerTransports(
                        providers, transports, config, TransportProvider.PeerRole.FURTHER),
                    blockingIo,
                    Duration.ofMillis(config.timeouts().describeTimeoutMillis()),
                    config.budgets().maxPeerSegments(),
                    board),
                SegmentTable::refuse),
            "segment-table");
    // Watched, as the transports are: an owner that stops while the engine runs is marked
    // quarantined.
    ctx.watch(registry);
    ctx.watch(admission);
    ctx.watch(segmentTable);
    owners.put(registry, REGISTRY);
    owners.put(admission, ADMISSION);
    owners.put(segmentTable, SEGMENT_TABLE);
    this.control =
        ctx.spawn(
            supervision.supervise(
                CONTROL_SERVICE,
                ControlService.Command.class,
                ControlService.create(
                    listener,
                    self,
                    registryView,
                    transports,
                    counters,
                    board,
                    (int) config.timeouts().describeTimeoutMillis(),
                    config.budgets().maxEndpoints()),
                // A Stop is not answered: the listener of a quarantined service stays as it was,
                // and the guardian no longer asks (stopControl).
                (msg, why) -> {}),
            "control-service");
    ctx.watch(control);
    owners.put(control, CONTROL_SERVICE);
    this.handles =
        new Handles(
            self,
            registry,
            segmentTable,
            Map.copyOf(transports),
            gate,
            supervision,
            new EngineLifecycle(config.name() + "@" + self, gate, registryView, quarantine));
  }

  /**
   * The transports of {@code role} enabled in this engine, as the segment table uses them; the
   * further ones in the order UNSPEC tries them.
   */
  private static List<PeerTransport> peerTransports(
      List<TransportProvider> providers,
      Map<Transport, ActorRef<TransportCommand>> transports,
      EngineConfig config,
      TransportProvider.PeerRole role) {
    return providers.stream()
        .filter(p -> p.peerRole() == role && p.enabled(config))
        .sorted(java.util.Comparator.comparingInt(TransportProvider::preference))
        .map(
            p ->
                new PeerTransport(
                    p.kind(), transports.get(p.kind()), p.chargesEndpoint(), p::unreachable))
        .toList();
  }

  /**
   * How a quarantined transport supervisor answers: opens fail UNAVAILABLE saying why, a
   * handed-over connection is closed, closes and shutdowns are answered (what it held stays listed
   * in {@code quarantined()}), and its own private messages are dropped.
   */
  private static void refuseTransport(TransportCommand msg, String owner, String why) {
    switch (msg) {
      case TransportCommand.OpenPeer m ->
          m.replyTo().tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, why));
      case TransportCommand.OpenFile m ->
          m.replyTo().tell(new TransportCommand.FileOpenFailed(ErrorKind.UNAVAILABLE, why));
      case TransportCommand.AdoptConnection m -> {
        try {
          m.channel().close();
        } catch (java.io.IOException ignored) {
          // Refused either way: the peer sees the connection end.
        }
      }
      case TransportCommand.CloseRequesterSide m ->
          m.replyTo().tell(new TransportCommand.SideClosed(owner));
      case TransportCommand.CloseSourceSide m ->
          m.replyTo().tell(new TransportCommand.SideClosed(owner));
      case TransportCommand.Shutdown m ->
          m.replyTo().tell(new TransportCommand.ShutdownDone(owner));
      default -> {
        // A transport's own message: nothing waits on it.
      }
    }
  }

  /** The supervised owners' names, as messages and {@code quarantined()} give them. */
  public static final String REGISTRY = "Registry";

  public static final String ADMISSION = "Admission";

  public static final String SEGMENT_TABLE = "SegmentTable";

  public static final String CONTROL_SERVICE = "ControlService";

  /** What a start without a TCP transport provider says: the artifact to add. */
  public static final String MISSING_TCP =
      "no TCP transport on the class path: add the Maven dependency "
          + "io.orbite:orbite-transport-actors (the engine needs it beside orbite-engine-actors)";

  /**
   * The transports this engine can run, found with {@link ServiceLoader} on the caller's thread (so
   * that a start without one fails before any actor exists): the first available provider of each
   * kind. Fails naming the artifact when there is no TCP transport.
   */
  public static List<TransportProvider> transportProviders() {
    List<TransportProvider> found = new java.util.ArrayList<>();
    Set<Transport> kinds = java.util.EnumSet.noneOf(Transport.class);
    for (TransportProvider provider : ServiceLoader.load(TransportProvider.class)) {
      if (provider.available() && kinds.add(provider.kind())) {
        found.add(provider);
      }
    }
    if (!kinds.contains(Transport.TCP)) {
      throw new IllegalStateException(MISSING_TCP);
    }
    return List.copyOf(found);
  }

  /**
   * @param listener the engine's bound listener; ownership passes to the ControlService
   * @param quarantine where owners that cannot prove their drain are listed; outlives the actors
   * @param hooks fault-injection points for qualification tests ({@link FaultHooks#NONE} otherwise)
   * @param providers the transports to run ({@link #transportProviders()})
   * @param started completed with the engine's handles once the guardian has set up, or with the
   *     cause if its setup fails (the guardian then stops)
   */
  public static Behavior<Command> create(
      EngineConfig config,
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registryView,
      EngineTally counters,
      OwnerBoard board,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      List<TransportProvider> providers,
      java.util.concurrent.CompletableFuture<Handles> started) {
    return Behaviors.setup(
        ctx -> {
          EngineGuardian guardian;
          try {
            guardian =
                new EngineGuardian(
                    ctx,
                    config,
                    listener,
                    self,
                    registryView,
                    counters,
                    board,
                    quarantine,
                    hooks,
                    providers);
          } catch (RuntimeException | Error e) {
            started.completeExceptionally(e);
            throw e;
          }
          started.complete(guardian.handles);
          return OwnerBoard.reporting(
              board,
              () ->
                  new OwnerBoard.Report(
                      "EngineGuardian",
                      Map.of("batchesSpawned", guardian.batchSequence),
                      config.name() + "@" + self),
              guardian.running());
        });
  }

  private Behavior<Command> running() {
    return board.in(
        OwnerState.RUNNING,
        Behaviors.receive(Command.class)
            .onMessage(SpawnBatch.class, this::onSpawnBatch)
            .onMessage(CloseRequester.class, this::onCloseRequester)
            .onMessage(CloseSource.class, this::onCloseSource)
            .onMessage(RequesterDrained.class, this::onRequesterDrained)
            .onMessage(ListenerStopped.class, m -> closeTransports(Side.SOURCE, m.replyTo()))
            .onMessage(TransportSideClosed.class, this::onTransportSideClosed)
            .onMessage(SharedFenced.class, this::onSharedFenced)
            .onMessage(Shutdown.class, this::onShutdown)
            .onSignal(
                Terminated.class,
                t -> {
                  String owner = owners.get(t.getRef());
                  BatchCore batch = batches.remove(t.getRef());
                  if (batch != null) {
                    if (!batch.retired()) {
                      ctx.getLog()
                          .error(
                              "engine {}: {} stopped unexpectedly: quarantined",
                              handles.self(),
                              batch.name());
                      supervision.stopped(batch.name(), t.getRef().path().toString());
                    }
                  } else if (owner != null) {
                    ctx.getLog()
                        .error(
                            "engine {}: {} stopped unexpectedly: quarantined",
                            handles.self(),
                            owner);
                    supervision.stopped(owner, t.getRef().path().toString());
                    registryStopped |= t.getRef().equals(handles.registry());
                  } else {
                    ctx.getLog()
                        .error(
                            "engine {}: transport supervisor {} stopped unexpectedly",
                            handles.self(),
                            t.getRef().path());
                  }
                  return Behaviors.same();
                })
            .build());
  }

  private Behavior<Command> onCloseRequester(CloseRequester m) {
    sideCloses.put(m.replyTo(), Side.REQUESTER);
    // At once, and no message to Admission (it reports the gate's state): nothing to dead-letter.
    gate.fence("the requester side is closed");
    handles
        .segmentTable()
        .tell(new SegmentTable.Fence("the requester side of this engine is closed"));
    ctx.pipeToSelf(
        drainedBy(m.deadlineNanos()), (ok, failure) -> new RequesterDrained(m.replyTo(), false));
    return Behaviors.same();
  }

  /**
   * Completes when no task is charged any more (the gate is fenced) or at {@code deadlineNanos},
   * whichever comes first; waits on the gate's own signal, never polls.
   */
  private java.util.concurrent.CompletableFuture<Void> drainedBy(long deadlineNanos) {
    return gate.whenDrained()
        .toCompletableFuture()
        .copy()
        .completeOnTimeout(
            null, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
  }

  private Behavior<Command> onRequesterDrained(RequesterDrained m) {
    if (!m.lanesClosed()) {
      return closeTransports(Side.REQUESTER, m.replyTo());
    }
    sideCloses.remove(m.replyTo());
    m.replyTo().tell(new SideClosed(Side.REQUESTER, 0));
    return Behaviors.same();
  }

  private Behavior<Command> onCloseSource(CloseSource m) {
    sideCloses.put(m.replyTo(), Side.SOURCE);
    stopControl(() -> new ListenerStopped(m.replyTo()));
    return Behaviors.same();
  }

  /**
   * Stops the control service, then tells itself {@code next}; at once when the service is
   * quarantined (its listener stays as it was, listed by {@code quarantined()}).
   */
  private void stopControl(java.util.function.Supplier<Command> next) {
    String down = supervision.unavailable(CONTROL_SERVICE);
    if (down != null) {
      ctx.getLog().error("engine {}: not stopping the listener: {}", handles.self(), down);
      ctx.getSelf().tell(next.get());
      return;
    }
    ctx.ask(
        ControlService.Stopped.class,
        control,
        Duration.ofSeconds(30),
        ControlService.Stop::new,
        (ok, failure) -> next.get());
  }

  /** Closes one direction's lanes in every transport; each answers when its threads have ended. */
  private Behavior<Command> closeTransports(Side side, ActorRef<SideClosed> replyTo) {
    int transports = handles.transports().size();
    handles
        .transports()
        .values()
        .forEach(
            ref ->
                ctx.ask(
                    TransportCommand.SideClosed.class,
                    ref,
                    Duration.ofSeconds(60),
                    to ->
                        side == Side.REQUESTER
                            ? new TransportCommand.CloseRequesterSide(to)
                            : new TransportCommand.CloseSourceSide(to),
                    (ok, failure) -> new TransportSideClosed(replyTo, side, 1)));
    sideClosesLeft.put(replyTo, transports);
    return transports == 0
        ? onTransportSideClosed(new TransportSideClosed(replyTo, side, 0))
        : Behaviors.same();
  }

  private Behavior<Command> onTransportSideClosed(TransportSideClosed m) {
    int left = sideClosesLeft.merge(m.replyTo(), -m.left(), Integer::sum);
    if (left > 0) {
      return Behaviors.same();
    }
    sideClosesLeft.remove(m.replyTo());
    if (m.side() == Side.REQUESTER) {
      // The lanes have ended, but their last receipts may still be on their way to the batches. A
      // task still in flight after this wait is held by a worker that did not let go; its batch's
      // watchdog quarantines it.
      ctx.pipeToSelf(
          drainedBy(System.nanoTime() + RECEIPTS_AFTER_CLOSE.toNanos()),
          (ok, failure) -> new RequesterDrained(m.replyTo(), true));
    } else {
      // Same-host peers copy through shared memory without any lane: fence them out too.
      ctx.ask(
          Registry.SharedFenced.class,
          handles.registry(),
          Duration.ofMillis(config.timeouts().destructionWindowMillis()).plusSeconds(30),
          Registry.FenceShared::new,
          (ok, failure) -> new SharedFenced(m.replyTo(), ok == null ? -1 : ok.stillCopying()));
    }
    return Behaviors.same();
  }

  private Behavior<Command> onSharedFenced(SharedFenced m) {
    if (m.stillCopying() < 0) {
      ctx.getLog()
          .error(
              "engine {}: closeSource: the Registry is quarantined and could not fence the ranges"
                  + " shared with same-host peers (owed() lists it)",
              handles.lifecycle().identity());
    } else if (m.stillCopying() > 0) {
      ctx.getLog()
          .warn(
              "engine {}: closeSource: {} shared range(s) still being copied by a same-host peer"
                  + " after the destruction window; no new copy can start",
              handles.lifecycle().identity(),
              m.stillCopying());
    }
    sideCloses.remove(m.replyTo());
    m.replyTo().tell(new SideClosed(Side.SOURCE, m.stillCopying()));
    return Behaviors.same();
  }

  /**
   * Spawns a batch (the caller charged its slot): its core, and the actor that owns its lifecycle.
   * Only when the engine has no freed batch of that capacity to reuse.
   */
  private Behavior<Command> onSpawnBatch(SpawnBatch m) {
    String name = "batch-" + (++batchSequence);
    var core =
        new BatchCore(
            name,
            m.capacity(),
            gate,
            counters,
            board,
            Duration.ofMillis(config.timeouts().defaultDeadlineMillis()),
            Duration.ofMillis(config.timeouts().destructionWindowMillis()),
            quarantine,
            ctx.getExecutionContext());
    ActorRef<BatchActor.Command> actor =
        ctx.spawn(
            supervision.supervise(
                name,
                BatchActor.Command.class,
                BatchActor.create(core, board),
                (msg, why) -> {}), // every message to a batch's owner is a tell
            name);
    core.bind(actor);
    ctx.watch(actor);
    batches.put(actor, core);
    m.replyTo().tell(new BatchSpawned(core));
    return Behaviors.same();
  }

  private Behavior<Command> onShutdown(Shutdown m) {
    handles.lifecycle().beginClose();
    gate.fence("engine is closing");
    // A side close under way is overtaken: the whole engine closes now.
    sideCloses.forEach((replyTo, side) -> replyTo.tell(new SideClosed(side, 0)));
    sideCloses.clear();
    stopControl(ControlStopped::new);
    List<ActorRef<ShutdownDone>> waiting = new java.util.ArrayList<>();
    waiting.add(m.replyTo());
    return stopping(
        waiting,
        new HashSet<>(handles.transports().keySet().stream().map(Enum::name).toList()),
        false);
  }

  /**
   * Closing: the control service stops, then every transport; then the owners are stopped, and the
   * close is confirmed once the Registry has terminated (it releases what no worker holds as it
   * stops). Every side close and batch request is answered at once.
   */
  private Behavior<Command> stopping(
      List<ActorRef<ShutdownDone>> waiting, Set<String> transportsLeft, boolean controlDone) {
    if (controlDone && transportsLeft.isEmpty()) {
      ctx.stop(handles.segmentTable());
      ctx.stop(admission);
      ctx.stop(handles.registry());
      return registryStopped ? confirmed(waiting) : awaitingRegistry(waiting);
    }
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(Command.class)
            .onMessage(
                ControlStopped.class,
                m -> {
                  handles
                      .transports()
                      .forEach(
                          (kind, ref) ->
                              ctx.ask(
                                  TransportCommand.ShutdownDone.class,
                                  ref,
                                  Duration.ofSeconds(60),
                                  TransportCommand.Shutdown::new,
                                  (ok, failure) -> new TransportStopped(kind.name())));
                  return stopping(waiting, transportsLeft, true);
                })
            .onMessage(
                TransportStopped.class,
                m -> {
                  Set<String> left = new HashSet<>(transportsLeft);
                  left.remove(m.transport());
                  return stopping(waiting, left, controlDone);
                })
            .onMessage(
                Shutdown.class,
                m -> {
                  waiting.add(m.replyTo());
                  return Behaviors.same();
                })
            .onSignal(
                Terminated.class,
                t -> {
                  registryStopped |= t.getRef().equals(handles.registry());
                  return Behaviors.same();
                })
            .onAnyMessage(this::answerWhileClosing)
            .build());
  }

  /** The owners are stopping: waits for the Registry's end. */
  private Behavior<Command> awaitingRegistry(List<ActorRef<ShutdownDone>> waiting) {
    // Still shown stopping: the close is confirmed only once the Registry has ended.
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(Command.class)
            .onMessage(
                Shutdown.class,
                m -> {
                  waiting.add(m.replyTo());
                  return Behaviors.same();
                })
            .onSignal(
                Terminated.class,
                t -> t.getRef().equals(handles.registry()) ? confirmed(waiting) : Behaviors.same())
            .onAnyMessage(this::answerWhileClosing)
            .build());
  }

  /** The Registry has stopped: the close is confirmed, and the guardian stops (the batches too). */
  private Behavior<Command> confirmed(List<ActorRef<ShutdownDone>> waiting) {
    registryStopped = true;
    handles.lifecycle().closed();
    waiting.forEach(w -> w.tell(new ShutdownDone()));
    return Behaviors.stopped();
  }

  /** Requests that come while the engine closes get their answer at once. */
  private Behavior<Command> answerWhileClosing(Command m) {
    switch (m) {
      case SpawnBatch b ->
          b.replyTo()
              .tell(new BatchRefused(new Admission.Decision.Unavailable("engine is closing")));
      case CloseRequester c -> c.replyTo().tell(new SideClosed(Side.REQUESTER, 0));
      case CloseSource c -> c.replyTo().tell(new SideClosed(Side.SOURCE, 0));
      default -> {
        // A step of a side close that the shutdown overtook, or a late answer: nothing waits on it.
      }
    }
    return Behaviors.same();
  }
}
