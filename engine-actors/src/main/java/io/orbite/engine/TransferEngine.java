package io.orbite.engine;

import io.orbite.config.EngineConfig;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.TransportSelector;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.guardian.EngineLifecycle;
import io.orbite.engine.notify.Notifier;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.NotificationSender;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.EngineIdentity;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The public face of one engine incarnation: a thin API over the messages of its actors. Start one
 * with its own ActorSystem ({@link #start}) or inside an application's ({@link #spawn}). Every
 * blocking method has a CompletionStage form, and fails with a {@link TransferException} (its stage
 * with the same). Thread-safe.
 *
 * <p>The engine's guardian owns its lifecycle ({@code RUNNING → CLOSING → CLOSED}) and what it
 * owes; once a close has begun every operation fails UNAVAILABLE at once ({@code "engine <name>
 * closing|closed (<call>)"}). Either way of starting joins the system's {@code
 * CoordinatedShutdown}: a task in phase {@code service-requests-done} closes the engine when the
 * system shuts down, and logs at ERROR what it still {@link #owed() owes} if that close is not
 * confirmed in time.
 *
 * <p>Longer than 500 lines: it implements every call of {@link Engine}, each a few lines that send
 * one message or read one published object; the logic lives in the owners it asks.
 */
public final class TransferEngine implements Engine {
  private static final Logger LOG = LoggerFactory.getLogger(TransferEngine.class);

  /** The region id of a file segment's one region (the whole file). */
  public static final long FILE_REGION_ID = 1;

  /**
   * The most engine names one region's allow-list may hold ({@link #allocate(long, Access, String,
   * Set)}).
   */
  public static final int MAX_ALLOWED_PEERS = 1024;

  static {
    FaultInjection.bind(EngineBootstrap::startOwn);
  }

  private final EngineConfig config;
  private final ActorSystem<?> system;
  private final EngineGuardian.Handles handles;
  private final EngineLifecycle lifecycle;
  private final EngineBootstrap parts;
  private final EngineServices services;
  private final BatchAllocator batches;
  private final EngineClose closing;
  private final EngineNotifications notifications;
  private final DashboardPanels dashboardPanels = new DashboardPanels();

  /** Whether a close has begun, checked by every call (the batches' too). */
  final CallGate calls;

  /** The configuration's transport policies, compiled once: every batch routes through them. */
  final TransportSelector selector;

  TransferEngine(
      EngineConfig config,
      ActorSystem<?> system,
      boolean ownsSystem,
      ActorRef<EngineGuardian.Command> guardian,
      EngineBootstrap parts) {
    this.config = config;
    this.system = system;
    this.parts = parts;
    this.handles = Batch.join(parts.started(), CallTimeouts.CONTROL, "start " + config.name());
    this.lifecycle = handles.lifecycle();
    this.services = new EngineServices(this, lifecycle.identity());
    this.calls = new CallGate(config.name(), lifecycle);
    this.selector = TransportSelector.compile(config.policies());
    this.batches =
        new BatchAllocator(
            config.budgets().maxBatchCapacity(), handles.gate(), guardian, system.scheduler());
    SegmentDescriptor self = handles.self();
    this.notifications =
        new EngineNotifications(
            new Notifier(
                config.notifications(),
                config.tcp().connectTimeoutMillis(),
                new EngineIdentity(config.name(), self.host(), self.port()),
                self.epoch(),
                parts.counters(),
                handles.gate()::fencedBecause,
                parts.hooks(),
                parts.auth()),
            parts.notifications(),
            calls,
            system.executionContext());
    this.closing =
        new EngineClose(
            calls,
            lifecycle,
            batches,
            services,
            system,
            ownsSystem,
            guardian,
            parts.shared(),
            notifications);
  }

  /**
   * Starts an engine in an ActorSystem of its own, named after {@code config.name()}; terminating
   * that system (or running its CoordinatedShutdown) closes the engine first. The system runs on
   * daemon threads, so the engine never keeps the JVM alive: when the JVM exits without {@link
   * #close} (main returned or threw, SIGTERM), its shutdown hook runs that CoordinatedShutdown and
   * the engine is closed on the way out. A main that serves must block while it serves.
   *
   * @param config the engine's configuration
   * @return the running engine, listening at {@link #localSegment()}
   * @throws TransferException as {@link #spawn} does; the new system is terminated again
   */
  public static TransferEngine start(EngineConfig config) {
    return EngineBootstrap.startOwn(config, FaultHooks.NONE);
  }

  /**
   * Starts an engine as a system actor of {@code host}; closing the engine leaves the host running,
   * and the host's CoordinatedShutdown closes the engine (phase {@code service-requests-done}).
   *
   * @param host the application's actor system
   * @param config the engine's configuration
   * @return the running engine, listening at {@link #localSegment()}
   * @throws TransferException UNAVAILABLE at once when no TCP transport is on the class path (the
   *     message names {@code io.orbite:orbite-transport-actors}), when the listen address cannot be
   *     bound, or when {@code shm.enabled} and shared memory is unusable here; INVALID_ARGUMENT
   *     when observability is enabled but cannot start
   */
  public static TransferEngine spawn(ActorSystem<?> host, EngineConfig config) {
    return EngineBootstrap.spawnIn(host, config);
  }

  /** Joins CoordinatedShutdown and serves observability; a failure closes the engine. */
  TransferEngine startServices() {
    services.joinCoordinatedShutdown();
    services.serveObservability();
    return this;
  }

  @Override
  public Map<String, String> observabilityUrls() {
    return calls.close() != null ? Map.of() : services.urls();
  }

  @Override
  public DashboardPanels dashboardPanels() {
    return dashboardPanels;
  }

  @Override
  public io.orbite.engine.OwnerView ownerView() {
    return parts.owners().snapshot();
  }

  @Override
  public EngineOwed owed() {
    return lifecycle.owed();
  }

  @Override
  public EngineConfig config() {
    return config;
  }

  @Override
  public SegmentDescriptor localSegment() {
    return handles.self();
  }

  @Override
  public EngineCounters counters() {
    return parts.counters().snapshot();
  }

  @Override
  public SourceLedger sourceLedger() {
    return parts.counters().sourceLedger();
  }

  /** The writers behind {@link #counters()}, for the observability provider (engine-internal). */
  io.orbite.engine.spi.EngineTally tally() {
    return parts.counters();
  }

  @Override
  public ActorSystem<?> system() {
    return system;
  }

  @Override
  public CompletionStage<RegisteredMemory> allocateAsync(
      long bytes, Access access, String name, Set<String> allowedPeers) {
    return calls.whileOpen(
        "allocate",
        () -> {
          refuseIfDown("allocate", EngineGuardian.REGISTRY);
          LocalMemory m =
              LocalMemory.allocate(
                  parts.shared(),
                  config.name(),
                  bytes,
                  access,
                  name,
                  allowedPeers,
                  parts.auth().provesNames());
          return ask(
              "allocate", null, handles.registry(), CallTimeouts.CONTROL, m::register, m::answer);
        });
  }

  @Override
  public CompletionStage<RegisteredMemory> registerAsync(
      MemorySegment range, Access access, String name, Set<String> allowedPeers) {
    return calls.whileOpen(
        "register",
        () -> {
          LocalMemory m =
              LocalMemory.callers(range, access, name, allowedPeers, parts.auth().provesNames());
          return ask(
              "register",
              EngineGuardian.REGISTRY,
              handles.registry(),
              CallTimeouts.CONTROL,
              m::register,
              m::answer);
        });
  }

  @Override
  public List<RegisteredMemory> localRegions() {
    return parts.view().snapshot().values().stream()
        .sorted(java.util.Comparator.comparingLong(Registration::regionId))
        .map(RegisteredMemory.class::cast)
        .toList();
  }

  @Override
  public void markReady() {
    TransferException closed = calls.closedError("markReady");
    if (closed != null) {
      throw closed;
    }
    parts.view().markReady();
  }

  @Override
  public boolean isReady() {
    return parts.view().ready();
  }

  @Override
  public CompletionStage<Void> unregisterAsync(RegisteredMemory memory) {
    Registration registration;
    try {
      registration = Registration.of(memory, "unregister: memory");
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    return ask(
        "unregister",
        EngineGuardian.REGISTRY,
        handles.registry(),
        CallTimeouts.unregister(config),
        (ActorRef<Registry.UnregisterReply> to) -> new Registry.Unregister(memory.regionId(), to),
        reply -> {
          if (reply instanceof Registry.UnregisterFailed f) {
            if (f.kind() == ErrorKind.UNQUIESCED) {
              lifecycle.retainUnquiesced(registration.regionId(), registration);
            }
            throw new TransferException(f.kind(), "unregister: " + f.detail());
          }
          return null;
        });
  }

  @Override
  public Source<PeerEvent, NotUsed> peerEvents() {
    TransferException closed = calls.closedError("peerEvents");
    if (closed != null) {
      throw closed;
    }
    return Source.<PeerEvent>queue(PeerEventHub.BACKLOG, OverflowStrategy.dropHead())
        .mapMaterializedValue(
            queue -> {
              AutoCloseable subscription = parts.peerEvents().subscribe(queue::offer);
              queue
                  .watchCompletion()
                  .whenComplete(
                      (done, failure) -> {
                        try {
                          subscription.close();
                        } catch (Exception ignored) {
                          // Removing a listener cannot fail.
                        }
                      });
              return NotUsed.getInstance();
            });
  }

  @Override
  public AutoCloseable onPeerEvent(Consumer<PeerEvent> listener) {
    TransferException closed = calls.closedError("onPeerEvent");
    if (closed != null) {
      throw closed;
    }
    java.util.Objects.requireNonNull(listener, "onPeerEvent: listener");
    return parts.peerEvents().subscribe(listener);
  }

  /**
   * The engine's notification sender (engine-internal): the batches' notified submissions send with
   * it once their tasks completed, as {@link #notifyAsync} does at once.
   */
  NotificationSender notificationSender() {
    return notifications.notifier();
  }

  @Override
  public CompletionStage<NotificationResult> notifyAsync(
      RemoteSegment segment, String tag, byte[] bytes) {
    return notifications.notifyAsync(segment, tag, bytes);
  }

  @Override
  public NotificationResult notify(RemoteSegment segment, String tag, byte[] bytes) {
    return notifications.notifyBlocking(segment, tag, bytes);
  }

  @Override
  public Source<ReceivedNotification, NotUsed> notifications() {
    return notifications.notifications();
  }

  @Override
  public List<ReceivedNotification> pollNotifications(int max) {
    return notifications.poll(max);
  }

  @Override
  public Optional<ReceivedNotification> pollNotification(Duration timeout) {
    return notifications.poll(timeout);
  }

  @Override
  public List<PeerEntry> peers() {
    return Batch.join(
        ask(
            "peers",
            EngineGuardian.SEGMENT_TABLE,
            handles.segmentTable(),
            CallTimeouts.CONTROL,
            SegmentTable.GetPeers::new,
            Function.identity()),
        CallTimeouts.CONTROL,
        "peers");
  }

  @Override
  public CompletionStage<RemoteSegment> openSegmentAsync(String endpoint) {
    return open(endpoint, null);
  }

  @Override
  public CompletionStage<RemoteSegment> openSegmentAsync(SegmentDescriptor expected) {
    return open(expected.endpoint(), expected.epoch());
  }

  private CompletionStage<RemoteSegment> open(String endpoint, Long epoch) {
    return open("openSegment", endpoint, epoch, "");
  }

  /** Asks the segment table to open {@code endpoint}; a refusal's detail follows {@code prefix}. */
  private CompletionStage<RemoteSegment> open(
      String call, String endpoint, Long epoch, String prefix) {
    return ask(
        call,
        EngineGuardian.SEGMENT_TABLE,
        handles.segmentTable(),
        CallTimeouts.open(config),
        (ActorRef<SegmentTable.OpenReply> to) -> new SegmentTable.OpenSegment(endpoint, epoch, to),
        reply ->
            switch (reply) {
              case SegmentTable.Opened o -> o.segment();
              case SegmentTable.OpenFailed f ->
                  throw new TransferException(f.kind(), prefix + f.detail());
            });
  }

  @Override
  public CompletionStage<PeerCheck> checkPeer(String endpoint, String reason) {
    InetSocketAddress address;
    try {
      address = DescribeClient.parseEndpoint(endpoint);
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(
          new TransferException(e.kind(), "checkPeer: " + e.detail()));
    }
    String why = reason == null || reason.isBlank() ? "a check was asked for" : reason;
    return ask(
        "checkPeer",
        EngineGuardian.SEGMENT_TABLE,
        handles.segmentTable(),
        CallTimeouts.open(config),
        (ActorRef<PeerCheck> to) -> new SegmentTable.CheckPeer(address, why, to),
        check -> check);
  }

  @Override
  public CompletionStage<RemoteSegment> reopenAsync(RemoteSegment old) {
    // RemoteSegment is sealed: every one is a PeerSegment, whose own channel says what it reaches.
    if (!(old instanceof PeerSegment segment) || segment.channel().transport() == Transport.FILE) {
      return CompletableFuture.failedFuture(
          new TransferException(
              ErrorKind.INVALID_ARGUMENT,
              old == null
                  ? "reopen: segment must not be null"
                  : "reopen "
                      + old.label()
                      + ": a file segment has no peer to describe; open the file again with"
                      + " openFileSegment"));
    }
    return open("reopen", old.descriptor().endpoint(), null, "reopen " + old.label() + ": ")
        .thenApply(fresh -> ((PeerSegment) fresh).reopenedFrom(old));
  }

  @Override
  public CompletionStage<RemoteSegment> openFileSegmentAsync(Path path, Access access) {
    var transport = handles.transports().get(Transport.FILE);
    if (path == null || access == null || transport == null) {
      return CompletableFuture.failedFuture(
          path == null || access == null
              ? new TransferException(
                  ErrorKind.INVALID_ARGUMENT, "openFileSegment: path and access must not be null")
              : new TransferException(
                  ErrorKind.UNAVAILABLE,
                  "openFileSegment " + path + ": no file transport on the class path"));
    }
    return ask(
        "openFileSegment",
        null,
        transport,
        CallTimeouts.CONTROL,
        (ActorRef<TransportCommand.OpenFileReply> to) ->
            new TransportCommand.OpenFile(path, access, handles.self(), to),
        reply ->
            switch (reply) {
              case TransportCommand.FileOpened o -> o.segment(handles.self());
              case TransportCommand.FileOpenFailed f ->
                  throw new TransferException(f.kind(), f.detail());
            });
  }

  @Override
  public CompletionStage<Batch> allocateBatchAsync(int capacity) {
    return calls.whileOpen("allocateBatch", () -> batches.allocate(capacity, this));
  }

  /** A batch was freed: pooled for reuse, or retired once a close has begun. */
  void recycle(BatchCore core) {
    batches.recycle(core, calls.close() != null);
  }

  @Override
  public CompletionStage<EngineOwed> closeRequesterAsync(Duration timeout) {
    return closing.closeSide(EngineGuardian.Side.REQUESTER, timeout);
  }

  @Override
  public CompletionStage<EngineOwed> closeSourceAsync(Duration timeout) {
    return closing.closeSide(EngineGuardian.Side.SOURCE, timeout);
  }

  @Override
  public CompletionStage<EngineOwed> closeAsync(Duration timeout) {
    return closing.close(timeout);
  }

  @Override
  public void close() {
    EngineOwed owed = close(Duration.ofSeconds(30));
    if (!owed.isClear()) {
      LOG.warn("closed with resources retained: {}", owed);
    }
  }

  @Override
  public List<QuarantinedOwner> quarantined() {
    return parts.quarantine().list();
  }

  /** The engine's close, begun once however many callers ask (see {@link EngineClose}). */
  CompletableFuture<Void> shutdown() {
    return closing.shutdown();
  }

  /** Fails UNAVAILABLE naming {@code owner} when the guardian marked it quarantined. */
  private void refuseIfDown(String call, String owner) {
    String down = owner == null ? null : handles.supervision().unavailable(owner);
    if (down != null) {
      throw new TransferException(ErrorKind.UNAVAILABLE, call + ": " + down);
    }
  }

  /**
   * The one ask of the facade: unless the engine is closing or {@code owner} (when not null) is
   * quarantined, sends the message {@code message} builds to {@code to} and maps the reply with
   * {@code answer} (which may throw the refusal it carries).
   */
  private <C, R, T> CompletionStage<T> ask(
      String call,
      String owner,
      ActorRef<C> to,
      Duration timeout,
      Function<ActorRef<R>, C> message,
      Function<R, T> answer) {
    return calls.whileOpen(
        call,
        () -> {
          refuseIfDown(call, owner);
          return AskPattern.<C, R>ask(to, message::apply, timeout, system.scheduler())
              .thenApply(answer);
        });
  }
}
