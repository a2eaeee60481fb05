package io.orbite.engine.guardian;

import io.orbite.config.EngineConfig;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.notify.NotifyReceiver;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.view.OwnerBoard;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Root of one engine incarnation: spawns and watches the Registry, Admission, SegmentTable,
 * ControlService, one supervisor per available transport (found with {@link ServiceLoader}), and
 * one BatchActor per batch ({@link GuardianChildren}). Runs as the guardian of the engine's own
 * ActorSystem or as a system actor under a host application's system.
 *
 * <p>The guardian owns the engine's lifecycle and publishes it in {@link EngineLifecycle}: {@link
 * #running} (it also runs the directional closes, C8: {@link CloseRequester}, {@link CloseSource},
 * step by step in {@link SideCloses}), {@link #stopping} (control service, then transports), {@link
 * #awaitingRegistry} (the owners were stopped; the close is confirmed when the Registry has
 * terminated), then stopped. It never polls: it waits on the admission gate's drain signal and on
 * its children's answers and Terminated.
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

  /**
   * What an engine start prepared before any actor exists, handed to the guardian and through it to
   * its children.
   *
   * @param config the engine's configuration
   * @param listener the engine's bound listener; ownership passes to the ControlService
   * @param self this incarnation
   * @param registryView the registrations, shared with the facade
   * @param counters the engine's counters
   * @param board the owner view
   * @param quarantine where owners that cannot prove their drain are listed; outlives the actors
   * @param hooks fault-injection points for qualification tests ({@link FaultHooks#NONE} otherwise)
   * @param providers the transports to run ({@link #transportProviders()})
   * @param peerEvents where owners publish what they learn of peers ({@link
   *     io.orbite.engine.Engine#peerEvents()})
   * @param notifications the receiving side of notifications, shared with the facade: the control
   *     service serves its connections
   */
  public record Parts(
      EngineConfig config,
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registryView,
      EngineTally counters,
      OwnerBoard board,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      List<TransportProvider> providers,
      PeerEventHub peerEvents,
      NotifyReceiver notifications,
      io.orbite.engine.security.PeerAuth auth) {}

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

  // The steps of the closes: internal messages, package-private only so that SideCloses and
  // GuardianChildren, which run those steps on the guardian's thread, can make them.

  /** A step of a side close: the requester's admitted work drained (or its deadline passed). */
  record RequesterDrained(ActorRef<SideClosed> replyTo, boolean lanesClosed) implements Command {}

  /** A step of a side close: the listener stopped. */
  record ListenerStopped(ActorRef<SideClosed> replyTo) implements Command {}

  /** A step of a side close: one transport (or, with {@code left} 0, none) answered. */
  record TransportSideClosed(ActorRef<SideClosed> replyTo, Side side, int left)
      implements Command {}

  /** A step of a source close: the Registry fenced the shared ranges. */
  record SharedFenced(ActorRef<SideClosed> replyTo, int stillCopying) implements Command {}

  record ControlStopped() implements Command {}

  record TransportStopped(String transport) implements Command {}

  /** How long a requester close waits, after its lanes ended, for their receipts to be applied. */
  public static final Duration RECEIPTS_AFTER_CLOSE = Duration.ofSeconds(5);

  /** The supervised owners' names, as messages and {@code quarantined()} give them. */
  public static final String REGISTRY = "Registry";

  public static final String ADMISSION = "Admission";

  public static final String SEGMENT_TABLE = "SegmentTable";

  public static final String CONTROL_SERVICE = "ControlService";

  /** What a start without a TCP transport provider says: the artifact to add. */
  public static final String MISSING_TCP =
      "no TCP transport on the class path: add the Maven dependency "
          + "io.orbite:orbite-transport-actors (the engine needs it beside orbite-engine-actors)";

  private final OwnerBoard board;
  private final GuardianChildren children;
  private final SideCloses sideCloses;
  private final Handles handles;

  /** Set once the Registry has terminated: nothing is visible any more, and memory is released. */
  private boolean registryStopped;

  private EngineGuardian(ActorContext<Command> ctx, Parts parts) {
    this.board = parts.board();
    board.root(ctx.getSelf());
    this.children = new GuardianChildren(ctx, parts);
    String identity = parts.config().name() + "@" + parts.self();
    this.handles =
        new Handles(
            parts.self(),
            children.registry(),
            children.segmentTable(),
            children.transports(),
            children.gate(),
            children.supervision(),
            new EngineLifecycle(
                identity, children.gate(), parts.registryView(), parts.quarantine()));
    this.sideCloses =
        new SideCloses(
            ctx,
            children,
            identity,
            Duration.ofMillis(parts.config().timeouts().destructionWindowMillis()));
  }

  /**
   * The transports this engine can run, found with {@link ServiceLoader} on the caller's thread (so
   * that a start without one fails before any actor exists): the first available provider of each
   * kind. Fails naming the artifact when there is no TCP transport.
   */
  public static List<TransportProvider> transportProviders() {
    List<TransportProvider> found = new ArrayList<>();
    Set<Transport> kinds = EnumSet.noneOf(Transport.class);
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
   * @param parts what the start prepared
   * @param started completed with the engine's handles once the guardian has set up, or with the
   *     cause if its setup fails (the guardian then stops)
   */
  public static Behavior<Command> create(Parts parts, CompletableFuture<Handles> started) {
    return Behaviors.setup(
        ctx -> {
          EngineGuardian guardian;
          try {
            guardian = new EngineGuardian(ctx, parts);
          } catch (RuntimeException | Error e) {
            started.completeExceptionally(e);
            throw e;
          }
          started.complete(guardian.handles);
          return OwnerBoard.reporting(
              parts.board(),
              () ->
                  new OwnerBoard.Report(
                      "EngineGuardian",
                      Map.of("batchesSpawned", guardian.children.batchesSpawned()),
                      parts.config().name() + "@" + parts.self()),
              guardian.running());
        });
  }

  /** Spawns batches and runs side closes; watches its children. */
  private Behavior<Command> running() {
    return board.in(
        OwnerState.RUNNING,
        Behaviors.receive(Command.class)
            .onMessage(
                SpawnBatch.class,
                m -> {
                  m.replyTo().tell(new BatchSpawned(children.spawnBatch(m.capacity())));
                  return Behaviors.same();
                })
            .onMessage(CloseRequester.class, m -> step(() -> sideCloses.closeRequester(m)))
            .onMessage(CloseSource.class, m -> step(() -> sideCloses.closeSource(m)))
            .onMessage(RequesterDrained.class, m -> step(() -> sideCloses.requesterDrained(m)))
            .onMessage(ListenerStopped.class, m -> step(() -> sideCloses.listenerStopped(m)))
            .onMessage(
                TransportSideClosed.class, m -> step(() -> sideCloses.transportSideClosed(m)))
            .onMessage(SharedFenced.class, m -> step(() -> sideCloses.sharedFenced(m)))
            .onMessage(Shutdown.class, this::onShutdown)
            .onSignal(
                Terminated.class,
                t -> {
                  children.stoppedWhileRunning(t.getRef());
                  registryStopped |= t.getRef().equals(handles.registry());
                  return Behaviors.same();
                })
            .build());
  }

  /** Runs one step of a side close; the guardian stays as it is. */
  private static Behavior<Command> step(Runnable step) {
    step.run();
    return Behaviors.same();
  }

  private Behavior<Command> onShutdown(Shutdown m) {
    handles.lifecycle().beginClose();
    children.gate().fence("engine is closing");
    // A side close under way is overtaken: the whole engine closes now.
    sideCloses.overtaken();
    children.stopControl(ControlStopped::new);
    List<ActorRef<ShutdownDone>> waiting = new ArrayList<>();
    waiting.add(m.replyTo());
    return stopping(waiting, children.transportNames(), false);
  }

  /**
   * Closing: the control service stops, then every transport; then the owners are stopped, and the
   * close is confirmed once the Registry has terminated (it releases what no worker holds as it
   * stops). Every side close and batch request is answered at once.
   */
  private Behavior<Command> stopping(
      List<ActorRef<ShutdownDone>> waiting, Set<String> transportsLeft, boolean controlDone) {
    if (controlDone && transportsLeft.isEmpty()) {
      children.stopOwners();
      return registryStopped ? confirmed(waiting) : awaitingRegistry(waiting);
    }
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(Command.class)
            .onMessage(
                ControlStopped.class,
                m -> {
                  children.shutdownTransports();
                  return stopping(waiting, transportsLeft, true);
                })
            .onMessage(
                TransportStopped.class,
                m -> {
                  Set<String> left = new HashSet<>(transportsLeft);
                  left.remove(m.transport());
                  return stopping(waiting, left, controlDone);
                })
            .onMessage(Shutdown.class, m -> waitWith(waiting, m))
            .onSignal(
                Terminated.class,
                t -> {
                  registryStopped |= t.getRef().equals(handles.registry());
                  return Behaviors.same();
                })
            .onAnyMessage(this::answerWhileClosing)
            .build());
  }

  /** A further Shutdown while the engine closes waits to be answered with the first. */
  private static Behavior<Command> waitWith(List<ActorRef<ShutdownDone>> waiting, Shutdown m) {
    waiting.add(m.replyTo());
    return Behaviors.same();
  }

  /** The owners are stopping: waits for the Registry's end. */
  private Behavior<Command> awaitingRegistry(List<ActorRef<ShutdownDone>> waiting) {
    // Still shown stopping: the close is confirmed only once the Registry has ended.
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(Command.class)
            .onMessage(Shutdown.class, m -> waitWith(waiting, m))
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
