package io.orbite.engine.guardian;

import io.orbite.config.EngineConfig;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.control.ControlService;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.registry.RegistryView;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.EngineCounters;
import io.orbite.engine.spi.FaultHooks;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.view.OwnerState;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.Executor;
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
 * <p>States: {@link #running}, {@link #stopping} (control service and transports draining), then
 * stopped.
 */
public final class EngineGuardian {
  public sealed interface Command {}

  /**
   * The engine's parts, for the public API facade; handed over once, when the guardian has set up.
   */
  public record Handles(
      SegmentDescriptor self,
      ActorRef<Registry.Command> registry,
      ActorRef<Admission.Command> admission,
      ActorRef<SegmentTable.Command> segmentTable,
      Map<Transport, ActorRef<TransportCommand>> transports,
      AdmissionGate gate,
      OwnerSupervision supervision) {}

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
   * Fence one direction: REQUESTER refuses new batches, tasks and opens; SOURCE stops accepting
   * connections. Answered at once.
   */
  public record FenceSide(Side side, ActorRef<SideClosed> replyTo) implements Command {}

  /** Close one direction's lanes in every transport; answered when their threads have ended. */
  public record CloseSide(Side side, ActorRef<SideClosed> replyTo) implements Command {}

  public record SideClosed(Side side) {}

  private record TransportSideClosed(ActorRef<SideClosed> replyTo, Side side, int left)
      implements Command {}

  /** Stop serving, stop the transports, then stop the engine's actors. */
  public record Shutdown(ActorRef<ShutdownDone> replyTo) implements Command {}

  public record ShutdownDone() {}

  private record ControlStopped() implements Command {}

  private record TransportStopped(String transport) implements Command {}

  private final ActorContext<Command> ctx;
  private final EngineConfig config;
  private final EngineCounters counters;
  private final QuarantineLedger quarantine;

  /**
   * The budgets, charged here and by the batches directly; owned (fenced, reported) by Admission.
   */
  private final AdmissionGate gate;

  private final Handles handles;
  private final ActorRef<ControlService.Command> control;
  private final OwnerSupervision supervision;

  /** The supervised owners by actor, for the guardian's watch. */
  private final Map<ActorRef<?>, String> owners = new java.util.HashMap<>();

  private long batchSequence;

  /** Side closes waiting for their transports: reply address to transports still to answer. */
  private final java.util.Map<ActorRef<SideClosed>, Integer> sideClosesLeft =
      new java.util.HashMap<>();

  private EngineGuardian(
      ActorContext<Command> ctx,
      EngineConfig config,
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registryView,
      EngineCounters counters,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      List<TransportProvider> providers) {
    this.ctx = ctx;
    this.config = config;
    this.counters = counters;
    this.quarantine = quarantine;
    counters.owners.root(ctx.getSelf());
    Executor blockingIo =
        ctx.getSystem()
            .dispatchers()
            .lookup(DispatcherSelector.fromConfig("orbite.blocking-io-dispatcher"));
    this.supervision =
        new OwnerSupervision(config.name() + "@" + self, quarantine, counters, hooks);
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
                    counters.owners),
                Registry::refuse),
            "registry");
    this.gate = new AdmissionGate(config.budgets());
    var admission =
        ctx.spawn(
            supervision.supervise(
                ADMISSION,
                Admission.Command.class,
                Admission.create(gate, config.budgets(), counters.owners),
                (m, why) -> Admission.refuse(m, why, gate)),
            "admission");
    TransportContext transportContext =
        new TransportContext(
            config, registryView, self.epoch(), blockingIo, counters, quarantine, hooks);
    Map<Transport, ActorRef<TransportCommand>> transports = new EnumMap<>(Transport.class);
    for (TransportProvider provider :
        providers) { // one per kind, TCP among them (transportProviders)
      var ref =
          ctx.spawn(
              provider.create(transportContext),
              "transport-" + provider.kind().name().toLowerCase());
      ctx.watch(ref);
      transports.put(provider.kind(), ref);
    }
    var segmentTable =
        ctx.spawn(
            supervision.supervise(
                SEGMENT_TABLE,
                SegmentTable.Command.class,
                SegmentTable.create(
                    admission,
                    transports.get(Transport.TCP),
                    transports.get(Transport.SHM),
                    blockingIo,
                    Duration.ofMillis(config.timeouts().describeTimeoutMillis()),
                    config.budgets().maxPeerSegments(),
                    counters.owners),
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
            ControlService.create(
                listener,
                self,
                registryView,
                transports,
                counters,
                (int) config.timeouts().describeTimeoutMillis(),
                config.budgets().maxEndpoints()),
            "control-service");
    this.handles =
        new Handles(
            self, registry, admission, segmentTable, Map.copyOf(transports), gate, supervision);
  }

  /** The supervised owners' names, as messages and {@code quarantined()} give them. */
  public static final String REGISTRY = "Registry";

  public static final String ADMISSION = "Admission";

  public static final String SEGMENT_TABLE = "SegmentTable";

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
      EngineCounters counters,
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
                    quarantine,
                    hooks,
                    providers);
          } catch (RuntimeException | Error e) {
            started.completeExceptionally(e);
            throw e;
          }
          started.complete(guardian.handles);
          return io.orbite.engine.view.OwnerBoard.reporting(
              counters.owners,
              () ->
                  new io.orbite.engine.view.OwnerBoard.Report(
                      "EngineGuardian",
                      guardian.state,
                      Map.of("batchesSpawned", guardian.batchSequence),
                      config.name() + "@" + self),
              guardian.running());
        });
  }

  private OwnerState state = OwnerState.RUNNING;

  private Behavior<Command> running() {
    return Behaviors.receive(Command.class)
        .onMessage(SpawnBatch.class, this::onSpawnBatch)
        .onMessage(FenceSide.class, this::onFenceSide)
        .onMessage(CloseSide.class, this::onCloseSide)
        .onMessage(TransportSideClosed.class, this::onTransportSideClosed)
        .onMessage(Shutdown.class, this::onShutdown)
        .onSignal(
            Terminated.class,
            t -> {
              String owner = owners.get(t.getRef());
              if (owner != null) {
                ctx.getLog()
                    .error(
                        "engine {}: {} stopped unexpectedly: quarantined", handles.self(), owner);
                supervision.stopped(owner, t.getRef().path().toString());
              } else {
                ctx.getLog()
                    .error(
                        "engine {}: transport supervisor {} stopped unexpectedly",
                        handles.self(),
                        t.getRef().path());
              }
              return Behaviors.same();
            })
        .build();
  }

  private Behavior<Command> onFenceSide(FenceSide m) {
    if (m.side() == Side.REQUESTER) {
      // At once, and no message to Admission (it reports the gate's state): nothing to dead-letter.
      gate.fence("the requester side is closed");
      handles
          .segmentTable()
          .tell(new SegmentTable.Fence("the requester side of this engine is closed"));
    } else {
      ctx.ask(
          ControlService.Stopped.class,
          control,
          Duration.ofSeconds(30),
          ControlService.Stop::new,
          (ok, failure) -> new TransportSideClosed(null, Side.SOURCE, 0));
    }
    m.replyTo().tell(new SideClosed(m.side()));
    return Behaviors.same();
  }

  private Behavior<Command> onCloseSide(CloseSide m) {
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
                    replyTo ->
                        m.side() == Side.REQUESTER
                            ? new TransportCommand.CloseRequesterSide(replyTo)
                            : new TransportCommand.CloseSourceSide(replyTo),
                    (ok, failure) -> new TransportSideClosed(m.replyTo(), m.side(), 1)));
    if (transports == 0) {
      m.replyTo().tell(new SideClosed(m.side()));
    } else {
      sideClosesLeft.put(m.replyTo(), transports);
    }
    return Behaviors.same();
  }

  private Behavior<Command> onTransportSideClosed(TransportSideClosed m) {
    if (m.replyTo() == null) {
      return Behaviors.same();
    }
    int left = sideClosesLeft.merge(m.replyTo(), -m.left(), Integer::sum);
    if (left <= 0) {
      sideClosesLeft.remove(m.replyTo());
      m.replyTo().tell(new SideClosed(m.side()));
    }
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
            Duration.ofMillis(config.timeouts().defaultDeadlineMillis()),
            Duration.ofMillis(config.timeouts().destructionWindowMillis()),
            quarantine,
            ctx.getExecutionContext());
    core.bind(ctx.spawn(BatchActor.create(core, counters.owners), name));
    m.replyTo().tell(new BatchSpawned(core));
    return Behaviors.same();
  }

  private Behavior<Command> onShutdown(Shutdown m) {
    state = OwnerState.STOPPING;
    gate.fence("engine is closing");
    ctx.ask(
        ControlService.Stopped.class,
        control,
        Duration.ofSeconds(30),
        ControlService.Stop::new,
        (ok, failure) -> new ControlStopped());
    return stopping(
        m.replyTo(),
        new HashSet<>(handles.transports().keySet().stream().map(Enum::name).toList()),
        false);
  }

  private Behavior<Command> stopping(
      ActorRef<ShutdownDone> replyTo, Set<String> transportsLeft, boolean controlDone) {
    if (controlDone && transportsLeft.isEmpty()) {
      replyTo.tell(new ShutdownDone());
      return Behaviors.stopped();
    }
    return Behaviors.receive(Command.class)
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
              return stopping(replyTo, transportsLeft, true);
            })
        .onMessage(
            TransportStopped.class,
            m -> {
              Set<String> left = new HashSet<>(transportsLeft);
              left.remove(m.transport());
              return stopping(replyTo, left, controlDone);
            })
        .onMessage(
            SpawnBatch.class,
            m -> {
              m.replyTo()
                  .tell(new BatchRefused(new Admission.Decision.Unavailable("engine is closing")));
              return Behaviors.same();
            })
        .onMessage(
            Shutdown.class,
            m -> {
              m.replyTo().tell(new ShutdownDone());
              return Behaviors.same();
            })
        .onMessage(
            FenceSide.class,
            m -> {
              m.replyTo().tell(new SideClosed(m.side()));
              return Behaviors.same();
            })
        .onMessage(
            CloseSide.class,
            m -> {
              m.replyTo().tell(new SideClosed(m.side()));
              return Behaviors.same();
            })
        .onMessage(TransportSideClosed.class, m -> Behaviors.same())
        .onSignal(Terminated.class, t -> Behaviors.same())
        .build();
  }
}
