package io.orbite.engine.guardian;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.batch.BatchActor;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.control.ControlService;
import io.orbite.engine.guardian.EngineGuardian.Command;
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
import io.orbite.engine.wire.TransferLimits;
import java.io.IOException;
import java.time.Duration;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.ActorContext;

/**
 * The {@link EngineGuardian}'s children: it spawns the engine's owners (the Registry, Admission,
 * one supervisor per transport, the SegmentTable and the ControlService, each under {@link
 * OwnerSupervision} and watched) when the guardian sets up, and one BatchActor per batch later;
 * marks a child that stops while the engine runs quarantined; and does the children's part of a
 * close (stopping the listener, shutting the transports down, stopping the owners). Used on the
 * guardian's thread only; the guardian's states decide when each step runs.
 */
final class GuardianChildren {
  /** How long the guardian waits for the ControlService to answer a Stop. */
  static final Duration STOP_CONTROL_TIMEOUT = Duration.ofSeconds(30);

  /** How long the guardian waits for a transport to answer a side close or its shutdown. */
  static final Duration TRANSPORT_TIMEOUT = Duration.ofSeconds(60);

  private final ActorContext<Command> ctx;
  private final EngineConfig config;
  private final SegmentDescriptor self;
  private final EngineTally counters;
  private final OwnerBoard board;
  private final QuarantineLedger quarantine;

  /**
   * The budgets, charged here and by the batches directly; owned (fenced, reported) by Admission.
   */
  private final AdmissionGate gate;

  private final OwnerSupervision supervision;
  private final ActorRef<Registry.Command> registry;
  private final ActorRef<Admission.Command> admission;
  private final ActorRef<SegmentTable.Command> segmentTable;
  private final ActorRef<ControlService.Command> control;
  private final Map<Transport, ActorRef<TransportCommand>> transports;

  /** The batches' owners, watched: one that stops without being retired is quarantined. */
  private final Map<ActorRef<?>, BatchCore> batches = new HashMap<>();

  /** The supervised owners and the transports' supervisors by actor, for the guardian's watch. */
  private final Map<ActorRef<?>, String> owners = new HashMap<>();

  private long batchSequence;

  /** Spawns and watches the owners, the transports' supervisors and the control service. */
  GuardianChildren(ActorContext<Command> ctx, EngineGuardian.Parts parts) {
    this.ctx = ctx;
    this.config = parts.config();
    this.self = parts.self();
    this.counters = parts.counters();
    this.board = parts.board();
    this.quarantine = parts.quarantine();
    RegistryView registryView = parts.registryView();
    List<TransportProvider> providers = parts.providers();
    Executor blockingIo =
        ctx.getSystem()
            .dispatchers()
            .lookup(DispatcherSelector.fromConfig("orbite.blocking-io-dispatcher"));
    this.supervision =
        new OwnerSupervision(
            config.name() + "@" + self, quarantine, counters, board, parts.hooks());
    this.registry =
        ctx.spawn(
            supervision.supervise(
                EngineGuardian.REGISTRY,
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
                EngineGuardian.ADMISSION,
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
            parts.hooks(),
            supervision,
            parts.peerEvents(),
            self,
            parts.auth());
    parts.peerEvents().runOn(blockingIo);
    Map<Transport, ActorRef<TransportCommand>> spawned = new EnumMap<>(Transport.class);
    for (TransportProvider provider : providers) { // one per kind, TCP among them
      String owner = "transport-" + provider.kind().name().toLowerCase(Locale.ROOT);
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
      spawned.put(provider.kind(), ref);
    }
    this.transports = Map.copyOf(spawned);
    this.segmentTable =
        ctx.spawn(
            supervision.supervise(
                EngineGuardian.SEGMENT_TABLE,
                SegmentTable.Command.class,
                SegmentTable.create(
                    admission,
                    peerTransports(providers, spawned, config, TransportProvider.PeerRole.BASE)
                        .getFirst(),
                    peerTransports(providers, spawned, config, TransportProvider.PeerRole.FURTHER),
                    blockingIo,
                    parts.peerEvents(),
                    counters,
                    Duration.ofMillis(config.timeouts().describeTimeoutMillis()),
                    config.budgets().maxPeerSegments(),
                    board,
                    parts.auth()),
                SegmentTable::refuse),
            "segment-table");
    // Watched, as the transports are: an owner that stops while the engine runs is marked
    // quarantined.
    ctx.watch(registry);
    ctx.watch(admission);
    ctx.watch(segmentTable);
    owners.put(registry, EngineGuardian.REGISTRY);
    owners.put(admission, EngineGuardian.ADMISSION);
    owners.put(segmentTable, EngineGuardian.SEGMENT_TABLE);
    this.control =
        ctx.spawn(
            supervision.supervise(
                EngineGuardian.CONTROL_SERVICE,
                ControlService.Command.class,
                ControlService.create(
                    parts.listener(),
                    self,
                    registryView,
                    new TransferLimits(
                        config.tcp().maxFramePayloadBytes(), config.merge().maxBytes()),
                    spawned,
                    counters,
                    board,
                    (int) config.timeouts().describeTimeoutMillis(),
                    config.budgets().maxEndpoints(),
                    parts.notifications(),
                    parts.auth()),
                // A Stop is not answered: the listener of a quarantined service stays as it was,
                // and the guardian no longer asks (stopControl).
                (msg, why) -> {}),
            "control-service");
    ctx.watch(control);
    owners.put(control, EngineGuardian.CONTROL_SERVICE);
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
        .sorted(Comparator.comparingInt(TransportProvider::preference))
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
        } catch (IOException ignored) {
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

  AdmissionGate gate() {
    return gate;
  }

  OwnerSupervision supervision() {
    return supervision;
  }

  ActorRef<Registry.Command> registry() {
    return registry;
  }

  ActorRef<SegmentTable.Command> segmentTable() {
    return segmentTable;
  }

  Map<Transport, ActorRef<TransportCommand>> transports() {
    return transports;
  }

  /** How many batches were spawned, for the owner view. */
  long batchesSpawned() {
    return batchSequence;
  }

  /**
   * Spawns a batch (the caller charged its slot): its core, and the actor that owns its lifecycle.
   * Only when the engine has no freed batch of that capacity to reuse.
   */
  BatchCore spawnBatch(int capacity) {
    String name = "batch-" + (++batchSequence);
    var core =
        new BatchCore(
            name,
            capacity,
            gate,
            counters,
            board,
            Duration.ofMillis(config.timeouts().defaultDeadlineMillis()),
            Duration.ofMillis(config.timeouts().destructionWindowMillis()),
            quarantine,
            ctx.getExecutionContext(),
            config.retry().maxTransportFailovers());
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
    return core;
  }

  /**
   * A child stopped while the engine runs: unless it is a batch that was retired, it is marked
   * quarantined (a batch's owner, one of the supervised owners or a transport's supervisor: it may
   * have kept what it held).
   */
  void stoppedWhileRunning(ActorRef<?> child) {
    BatchCore batch = batches.remove(child);
    if (batch != null && batch.retired()) {
      return;
    }
    String owner = batch != null ? batch.name() : owners.get(child);
    ctx.getLog().error("engine {}: {} stopped unexpectedly: quarantined", self, owner);
    supervision.stopped(owner, child.path().toString());
  }

  /**
   * Stops the control service, then tells the guardian {@code next}; at once when the service is
   * quarantined (its listener stays as it was, listed by {@code quarantined()}).
   */
  void stopControl(Supplier<Command> next) {
    String down = supervision.unavailable(EngineGuardian.CONTROL_SERVICE);
    if (down != null) {
      ctx.getLog().error("engine {}: not stopping the listener: {}", self, down);
      ctx.getSelf().tell(next.get());
      return;
    }
    ctx.ask(
        ControlService.Stopped.class,
        control,
        STOP_CONTROL_TIMEOUT,
        ControlService.Stop::new,
        (ok, failure) -> next.get());
  }

  /** The transports by name, as {@link EngineGuardian.TransportStopped} names them. */
  Set<String> transportNames() {
    return new HashSet<>(transports.keySet().stream().map(Enum::name).toList());
  }

  /**
   * Asks every transport to shut down; each answers (or its ask times out) with a {@link
   * EngineGuardian.TransportStopped}.
   */
  void shutdownTransports() {
    transports.forEach(
        (kind, ref) ->
            ctx.ask(
                TransportCommand.ShutdownDone.class,
                ref,
                TRANSPORT_TIMEOUT,
                TransportCommand.Shutdown::new,
                (ok, failure) -> new EngineGuardian.TransportStopped(kind.name())));
  }

  /**
   * Stops the owners once the transports are down; the Registry releases, as it stops, what no
   * worker holds.
   */
  void stopOwners() {
    ctx.stop(segmentTable);
    ctx.stop(admission);
    ctx.stop(registry);
  }
}
