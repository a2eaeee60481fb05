package io.orbite.engine;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.BatchPool;
import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.guardian.EngineLifecycle;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
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
 */
public final class TransferEngine implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TransferEngine.class);
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);

  /** How long a close waits for the guardian: control service (30 s), transports (60 s), slack. */
  private static final Duration SHUTDOWN_LIMIT = Duration.ofSeconds(120);

  /** The region id of a file segment's one region (the whole file). */
  public static final long FILE_REGION_ID = 1;

  private final EngineConfig config;
  private final ActorSystem<?> system;
  private final boolean ownsSystem;
  private final ActorRef<EngineGuardian.Command> guardian;
  private final EngineGuardian.Handles handles;
  private final EngineLifecycle lifecycle;
  private final EngineCounters counters;
  private final OwnerBoard owners;
  private final QuarantineLedger quarantine;
  private final SharedMemory shared;
  private final EngineServices services;
  private final BatchPool batchPool = new BatchPool();

  /** The engine's close, shared by every closer; null while running. */
  private final AtomicReference<CompletableFuture<Void>> shutdown = new AtomicReference<>();

  /** Stages waiting on actors with no timeout of their own; failed if the engine closes first. */
  private final Set<CompletableFuture<?>> untilClosed = ConcurrentHashMap.newKeySet();

  private TransferEngine(
      EngineConfig config,
      ActorSystem<?> system,
      boolean ownsSystem,
      ActorRef<EngineGuardian.Command> guardian,
      EngineBootstrap parts) {
    this.config = config;
    this.system = system;
    this.ownsSystem = ownsSystem;
    this.guardian = guardian;
    this.counters = parts.counters();
    this.owners = parts.owners();
    this.quarantine = parts.quarantine();
    this.shared = parts.shared();
    this.handles = Batch.join(parts.started(), CONTROL_TIMEOUT, "start " + config.name());
    this.lifecycle = handles.lifecycle();
    this.services = new EngineServices(this, lifecycle.identity());
  }

  /**
   * Starts an engine in an ActorSystem of its own, named after {@code config.name()}; terminating
   * that system (or running its CoordinatedShutdown) closes the engine first.
   *
   * @param config the engine's configuration
   * @return the running engine, listening at {@link #localSegment()}
   * @throws TransferException as {@link #spawn} does; the new system is terminated again
   */
  public static TransferEngine start(EngineConfig config) {
    return start(config, FaultHooks.NONE);
  }

  /**
   * {@link #start(EngineConfig)} with fault-injection hooks in the workers' data path, for
   * qualification tests that must hold a worker or break a connection; never needed in production.
   *
   * @param config the engine's configuration
   * @param hooks the hooks the workers call ({@link FaultHooks#NONE} for none); not null
   * @return the running engine
   * @throws TransferException as {@link #start(EngineConfig)} does
   */
  public static TransferEngine start(EngineConfig config, FaultHooks hooks) {
    EngineBootstrap parts = EngineBootstrap.prepare(config, hooks);
    ActorSystem<EngineGuardian.Command> system;
    try {
      Config loaded = ConfigFactory.load();
      system =
          ActorSystem.create(
              parts.guardian(config),
              config.name(),
              loaded.getConfig("orbite.engine-system").withFallback(loaded));
    } catch (RuntimeException e) {
      parts.abandon();
      throw e;
    }
    try {
      return new TransferEngine(config, system, true, system, parts).startServices();
    } catch (RuntimeException e) {
      system.terminate();
      parts.abandon();
      throw e;
    }
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
    EngineBootstrap parts = EngineBootstrap.prepare(config, FaultHooks.NONE);
    try {
      String name = "orbite-" + config.name() + "-" + Long.toHexString(parts.self().epoch());
      var guardian = host.systemActorOf(parts.guardian(config), name, Props.empty());
      return new TransferEngine(config, host, false, guardian, parts).startServices();
    } catch (RuntimeException e) {
      parts.abandon();
      throw e;
    }
  }

  private TransferEngine startServices() {
    services.joinCoordinatedShutdown();
    services.serveObservability();
    return this;
  }

  /**
   * The observability endpoints by name ({@code "metrics"}, {@code "dashboard"}): empty unless
   * {@code observability} enables them, and once the engine closes.
   *
   * @return a map from endpoint name to its URL
   */
  public Map<String, String> observabilityUrls() {
    return shutdown.get() != null ? Map.of() : services.urls();
  }

  /**
   * What every owner actor last reported, retired owners and peers; still answers after close.
   *
   * @return a snapshot of the owner board
   */
  public io.orbite.engine.OwnerView ownerView() {
    return owners.snapshot();
  }

  /**
   * What the engine still has charged ({@link EngineOwed}), read at once from objects the guardian
   * publishes, never from a mailbox: current while the engine runs and closes, and after a
   * confirmed close what it retains. Never throws.
   *
   * @return the figures, in phase RUNNING, CLOSING or CLOSED
   */
  public EngineOwed owed() {
    return lifecycle.owed();
  }

  /**
   * {@link #owed()} as a stage, completed at once.
   *
   * @return a completed stage with the figures
   */
  public CompletionStage<EngineOwed> owedAsync() {
    return CompletableFuture.completedFuture(lifecycle.owed());
  }

  /**
   * The configuration the engine was started with; still answers after close.
   *
   * @return the configuration
   */
  public EngineConfig config() {
    return config;
  }

  /**
   * This incarnation's endpoint and epoch, to publish to peers; still answers after close.
   *
   * @return the descriptor peers open with {@link #openSegment(SegmentDescriptor)}
   */
  public SegmentDescriptor localSegment() {
    return handles.self();
  }

  /**
   * Cumulative counters of this incarnation; still answers after close.
   *
   * @return the live counters
   */
  public EngineCounters counters() {
    return counters;
  }

  /**
   * The actor system the engine runs in (its own, or the host's).
   *
   * @return the system; after a close of an engine started with {@link #start} it has terminated
   */
  public ActorSystem<?> system() {
    return system;
  }

  /**
   * Allocates {@code bytes} of zeroed, 64-byte aligned off-heap memory owned by the engine; with
   * {@code shm.enabled} a memfd (page aligned) that same-host peers may map.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return a stage with the registered range, visible to peers at once; it fails INVALID_ARGUMENT
   *     for {@code bytes <= 0} or a null {@code access}, RESOURCE_EXHAUSTED when the memory cannot
   *     be allocated or {@code budgets.maxRegistrations} is in use (a memfd that cannot be made:
   *     RESOURCE_EXHAUSTED or UNAVAILABLE), UNAVAILABLE when the Registry is quarantined or a close
   *     has begun
   */
  public CompletionStage<RegisteredMemory> allocateAsync(long bytes, Access access) {
    return whileOpen(
        "allocate",
        () -> {
          refuseIfDown("allocate", EngineGuardian.REGISTRY);
          LocalMemory m = LocalMemory.allocate(shared, config.name(), bytes, access);
          return ask("allocate", null, handles.registry(), CONTROL_TIMEOUT, m::register, m::answer);
        });
  }

  /**
   * Blocking form of {@link #allocateAsync}.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return the registered range
   */
  public RegisteredMemory allocate(long bytes, Access access) {
    return Batch.join(allocateAsync(bytes, access), CONTROL_TIMEOUT, "allocate");
  }

  /**
   * Registers caller-owned native memory; the caller keeps it alive until unregister completes.
   *
   * @param range the native memory to register; the engine never frees it
   * @param access what peers may do with it
   * @return a stage with the registered range, visible to peers at once; it fails INVALID_ARGUMENT
   *     for a null range or access, a heap segment or an empty range, RESOURCE_EXHAUSTED when
   *     {@code budgets.maxRegistrations} is in use, UNAVAILABLE as {@link #allocateAsync} does
   */
  public CompletionStage<RegisteredMemory> registerAsync(MemorySegment range, Access access) {
    return whileOpen(
        "register",
        () -> {
          LocalMemory m = LocalMemory.callers(range, access);
          return ask(
              "register",
              EngineGuardian.REGISTRY,
              handles.registry(),
              CONTROL_TIMEOUT,
              m::register,
              m::answer);
        });
  }

  /**
   * Blocking form of {@link #registerAsync}.
   *
   * @param range the native memory to register
   * @param access what peers may do with it
   * @return the registered range
   */
  public RegisteredMemory register(MemorySegment range, Access access) {
    return Batch.join(registerAsync(range, access), CONTROL_TIMEOUT, "register");
  }

  /**
   * Hides the range from peers at once, waits for admitted work to return its loans, then releases
   * it (engine-owned memory is freed).
   *
   * @param memory the range to unregister
   * @return a stage that completes once the range is released; it fails INVALID_ARGUMENT for null
   *     or a range that is not (or no longer) registered, UNQUIESCED when its loans did not come
   *     back within the destruction window (the range stays hidden and retained, and is listed by
   *     {@link #quarantined()}), UNAVAILABLE as {@link #allocateAsync} does
   */
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
        unregisterWait(),
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

  /**
   * Blocking form of {@link #unregisterAsync}.
   *
   * @param memory the range to unregister
   */
  public void unregister(RegisteredMemory memory) {
    Batch.join(unregisterAsync(memory), unregisterWait(), "unregister");
  }

  private Duration unregisterWait() {
    return Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL_TIMEOUT);
  }

  /**
   * The segment table (C9): every peer incarnation this engine opened that is still active or still
   * referenced by a {@link RemoteSegment}, with its state and reference count.
   *
   * @return one entry per incarnation; UNAVAILABLE when the table is quarantined or a close has
   *     begun
   */
  public List<PeerEntry> peers() {
    return Batch.join(
        ask(
            "peers",
            EngineGuardian.SEGMENT_TABLE,
            handles.segmentTable(),
            CONTROL_TIMEOUT,
            SegmentTable.GetPeers::new,
            Function.identity()),
        CONTROL_TIMEOUT,
        "peers");
  }

  /**
   * Describes the peer at {@code endpoint} ({@code host:port}) and opens its current incarnation.
   *
   * @param endpoint the peer's {@code host:port}
   * @return a stage with the segment, a new reference to the peer's table entry (close it when
   *     done); it fails INVALID_ARGUMENT for a malformed endpoint; UNAVAILABLE, TIMEOUT, PEER_LOST
   *     or PROTOCOL when Describe or the connection fails; RESOURCE_EXHAUSTED when the peer table
   *     or {@code budgets.maxEndpoints} is full; UNAVAILABLE when the requester side is closed, the
   *     table is quarantined or a close has begun
   */
  public CompletionStage<RemoteSegment> openSegment(String endpoint) {
    return open(endpoint, null);
  }

  /**
   * Opens exactly the incarnation {@code expected} names: EPOCH_MISMATCH if a different epoch now
   * answers at its endpoint (without a network round trip when the engine already knows).
   *
   * @param expected the incarnation to open
   * @return a stage with the segment; it fails EPOCH_MISMATCH as above, or as {@link
   *     #openSegment(String)} does
   */
  public CompletionStage<RemoteSegment> openSegment(SegmentDescriptor expected) {
    return open(expected.endpoint(), expected.epoch());
  }

  private CompletionStage<RemoteSegment> open(String endpoint, Long epoch) {
    return ask(
        "openSegment",
        EngineGuardian.SEGMENT_TABLE,
        handles.segmentTable(),
        Duration.ofMillis(
                config.timeouts().describeTimeoutMillis() + config.tcp().connectTimeoutMillis())
            .plus(CONTROL_TIMEOUT),
        (ActorRef<SegmentTable.OpenReply> to) -> new SegmentTable.OpenSegment(endpoint, epoch, to),
        reply ->
            switch (reply) {
              case SegmentTable.Opened o -> o.segment();
              case SegmentTable.OpenFailed f -> throw new TransferException(f.kind(), f.detail());
            });
  }

  /**
   * Blocking form of {@link #openSegment(SegmentDescriptor)}.
   *
   * @param expected the incarnation to open
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment
   */
  public RemoteSegment openSegment(SegmentDescriptor expected, Duration timeout) {
    return Batch.join(openSegment(expected), timeout, "openSegment " + expected);
  }

  /**
   * Blocking form of {@link #openSegment(String)}.
   *
   * @param endpoint the peer's {@code host:port}
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment
   */
  public RemoteSegment openSegment(String endpoint, Duration timeout) {
    return Batch.join(openSegment(endpoint), timeout, "openSegment " + endpoint);
  }

  /**
   * Opens the file at {@code path} as a segment of one region ({@link #FILE_REGION_ID}) covering
   * its bytes at open; requests use it like a peer's segment. {@code READ} lets READ tasks copy
   * file bytes into registered memory, {@code WRITE} lets WRITE tasks copy into the file (never
   * past its size). The file is opened once, so admitted work keeps using it even if the path is
   * replaced; the table is bounded by {@code file.maxFileSegments}.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @return a stage with the segment, labelled {@code "file <path>"}; it fails INVALID_ARGUMENT for
   *     a missing path, a directory or another non-file, PERMISSION_DENIED for a file that may not
   *     be opened as asked, RESOURCE_EXHAUSTED when the table is full, UNAVAILABLE when there is no
   *     file transport or a close has begun
   */
  public CompletionStage<RemoteSegment> openFileSegment(Path path, Access access) {
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
        CONTROL_TIMEOUT,
        (ActorRef<TransportCommand.OpenFileReply> to) ->
            new TransportCommand.OpenFile(path, access, handles.self(), to),
        reply ->
            switch (reply) {
              case TransportCommand.FileOpened o ->
                  new PeerSegment(
                      handles.self(),
                      List.of(new RemoteRegion(FILE_REGION_ID, o.lengthBytes(), o.access())),
                      o.channel(),
                      o.label());
              case TransportCommand.FileOpenFailed f ->
                  throw new TransferException(f.kind(), f.detail());
            });
  }

  /**
   * Blocking form of {@link #openFileSegment(Path, Access)}.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @param timeout how long to wait; TIMEOUT after it
   * @return the file segment
   */
  public RemoteSegment openFileSegment(Path path, Access access, Duration timeout) {
    return Batch.join(openFileSegment(path, access), timeout, "openFileSegment " + path);
  }

  /**
   * Charges a batch slot (on the caller's thread) and creates a batch of at most {@code capacity}
   * tasks, reusing a freed one of that capacity without an ask when there is one.
   *
   * @param capacity how many tasks the batch may hold in all, 1 to {@code budgets.maxBatchCapacity}
   * @return a stage with the batch (free it when done); it fails INVALID_ARGUMENT for a capacity
   *     out of range, RESOURCE_EXHAUSTED when {@code budgets.maxBatches} batches are held,
   *     UNAVAILABLE when the requester side is closed or a close has begun
   */
  public CompletionStage<Batch> allocateBatchAsync(int capacity) {
    return whileOpen(
        "allocateBatch",
        () -> {
          int max = config.budgets().maxBatchCapacity();
          if (capacity < 1 || capacity > max) {
            throw new TransferException(
                ErrorKind.INVALID_ARGUMENT,
                "allocateBatch: capacity must be 1.." + max + ", got " + capacity);
          }
          refuse(handles.gate().tryBatch());
          BatchCore pooled = batchPool.take(capacity);
          if (pooled != null) {
            return CompletableFuture.completedFuture(new Batch(pooled, pooled.lease(), this));
          }
          return AskPattern.<EngineGuardian.Command, EngineGuardian.SpawnBatchReply>ask(
                  guardian,
                  to -> new EngineGuardian.SpawnBatch(capacity, to),
                  CONTROL_TIMEOUT,
                  system.scheduler())
              .handle(
                  (reply, failure) -> {
                    if (reply instanceof EngineGuardian.BatchSpawned s) {
                      return new Batch(s.core(), s.core().lease(), this);
                    }
                    handles.gate().releaseBatch();
                    if (reply instanceof EngineGuardian.BatchRefused r) {
                      refuse(r.decision());
                    }
                    throw new CompletionException(failure);
                  });
        });
  }

  /** Throws the refusal of a budget decision that did not grant. */
  private static void refuse(Admission.Decision decision) {
    if (!decision.granted()) {
      throw new TransferException(
          decision.fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED,
          "allocateBatch: " + decision.refusal());
    }
  }

  /**
   * Blocking form of {@link #allocateBatchAsync}.
   *
   * @param capacity how many tasks the batch may hold in all
   * @return the batch
   */
  public Batch allocateBatch(int capacity) {
    return Batch.join(allocateBatchAsync(capacity), CONTROL_TIMEOUT, "allocateBatch");
  }

  /** A batch was freed: keep it for the next allocation of its capacity, or retire it. */
  void recycle(BatchCore core) {
    if (shutdown.get() != null) {
      core.retire();
    } else {
      batchPool.give(core);
    }
  }

  /**
   * Closes the requester side (C8): new batches, submissions and opens are refused at once
   * (UNAVAILABLE); admitted work may finish within {@code timeout}; then every lane to a peer is
   * closed, so whatever is still in flight fails after local drain. The engine keeps serving peers.
   * Can be called again.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return a stage with what the engine still has charged afterwards
   */
  public CompletionStage<EngineOwed> closeRequesterAsync(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    return ask(
        "closeRequester",
        null,
        guardian,
        timeout.plus(SHUTDOWN_LIMIT),
        (ActorRef<EngineGuardian.SideClosed> to) -> new EngineGuardian.CloseRequester(deadline, to),
        closed -> lifecycle.owed());
  }

  /**
   * Blocking form of {@link #closeRequesterAsync}.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return what the engine still has charged afterwards
   */
  public EngineOwed closeRequester(Duration timeout) {
    return Batch.join(closeRequesterAsync(timeout), timeout.plus(SHUTDOWN_LIMIT), "closeRequester");
  }

  /**
   * Closes the source side (C8): the listener closes, so peers can neither describe nor connect;
   * every source lane is closed and its loans come back once its thread has ended; every range
   * shared with same-host peers (SHM) is fenced, so no peer starts a copy into or out of it. The
   * engine keeps working as a requester. Can be called again.
   *
   * @param timeout how long the source side may take to close
   * @return a stage with what the engine still has charged afterwards
   */
  public CompletionStage<EngineOwed> closeSourceAsync(Duration timeout) {
    return ask(
        "closeSource",
        null,
        guardian,
        timeout.plus(SHUTDOWN_LIMIT),
        EngineGuardian.CloseSource::new,
        closed -> lifecycle.owed());
  }

  /**
   * Blocking form of {@link #closeSourceAsync}.
   *
   * @param timeout how long the source side may take to close
   * @return what the engine still has charged afterwards
   */
  public EngineOwed closeSource(Duration timeout) {
    return Batch.join(closeSourceAsync(timeout), timeout.plus(SHUTDOWN_LIMIT), "closeSource");
  }

  /**
   * Closes the engine: stops serving and requesting, closes the transports and, if the engine owns
   * it, its ActorSystem. Idempotent: once a close has begun (here or by CoordinatedShutdown), a
   * later call completes at once with what is owed.
   *
   * @param timeout how long the engine may take to confirm its close; TIMEOUT after it, and {@link
   *     #owed()} then says what it still holds
   * @return a stage with what is still owed: after a clean close nothing; otherwise the memory kept
   *     under loans and every quarantined owner
   */
  public CompletionStage<EngineOwed> closeAsync(Duration timeout) {
    if (shutdown.get() != null) {
      return owedAsync();
    }
    return shutdown()
        .copy()
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .exceptionallyCompose(
            failure ->
                CompletableFuture.failedFuture(
                    unwrap(failure) instanceof TimeoutException
                        ? new TransferException(
                            ErrorKind.TIMEOUT,
                            "close: the engine did not confirm its close within " + timeout)
                        : unwrap(failure)))
        .thenCompose(
            done -> {
              if (!ownsSystem) {
                return CompletableFuture.completedFuture(done);
              }
              system.terminate();
              return system.getWhenTerminated().thenApply(terminated -> done);
            })
        .thenApply(done -> lifecycle.owed());
  }

  /**
   * Blocking form of {@link #closeAsync}.
   *
   * @param timeout how long the engine may take to confirm its close
   * @return what is still owed, in phase CLOSED once the close is confirmed
   */
  public EngineOwed close(Duration timeout) {
    return Batch.join(closeAsync(timeout), timeout.plusSeconds(5), "close");
  }

  /** {@link #close(Duration)} with 30 s; what is still owed afterwards is logged, not returned. */
  @Override
  public void close() {
    EngineOwed owed = close(Duration.ofSeconds(30));
    if (!owed.isClear()) {
      LOG.warn("closed with resources retained: {}", owed);
    }
  }

  /**
   * The owners that could not prove their drain within the destruction window and keep what they
   * hold (C5, C7); empty on a healthy engine; still answers after close.
   *
   * @return the quarantined owners, each with what it retains
   */
  public List<QuarantinedOwner> quarantined() {
    return quarantine.list();
  }

  /**
   * The engine's close, once however many callers ask: the guardian fences admission, stops
   * serving, the transports and the owners, and confirms once the Registry has stopped. Then the
   * incarnation's shared-memory lock is withdrawn, so same-host peers see it ended.
   */
  CompletableFuture<Void> shutdown() {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    if (!shutdown.compareAndSet(null, mine)) {
      return shutdown.get();
    }
    lifecycle.beginClose();
    batchPool.close();
    services.stopServing();
    CompletionStage<EngineGuardian.ShutdownDone> asked =
        system.whenTerminated().isCompleted()
            ? CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.UNAVAILABLE,
                    "the actor system " + system.name() + " has terminated without the close"))
            : AskPattern.ask(
                guardian, EngineGuardian.Shutdown::new, SHUTDOWN_LIMIT, system.scheduler());
    asked.whenComplete(
        (done, failure) -> {
          if (failure != null) {
            mine.completeExceptionally(unwrap(failure));
            return;
          }
          List.copyOf(untilClosed).forEach(p -> p.completeExceptionally(closedError("completion")));
          if (shared != null) {
            shared.close();
          }
          services.close();
          mine.complete(null);
        });
    return mine;
  }

  /**
   * UNAVAILABLE naming this engine once a close has begun ({@code "engine <name> closing"}) or has
   * been confirmed ({@code "engine <name> closed"}); null while the engine runs.
   */
  TransferException closedError(String call) {
    EngineOwed.Phase phase = lifecycle.phase();
    return phase == EngineOwed.Phase.RUNNING && shutdown.get() == null
        ? null
        : new TransferException(
            ErrorKind.UNAVAILABLE,
            "engine "
                + config.name()
                + (phase == EngineOwed.Phase.CLOSED ? " closed" : " closing")
                + " ("
                + call
                + ")");
  }

  /**
   * {@link #closedError} once the close is confirmed; null while the engine runs or closes (a batch
   * still answers {@code await} and {@code status} then, so callers learn what happened).
   */
  TransferException closedAfterClose(String call) {
    return lifecycle.phase() == EngineOwed.Phase.CLOSED ? closedError(call) : null;
  }

  /** {@code stage}, failed with {@link #closedError} if the close is confirmed before it ends. */
  <T> CompletionStage<T> untilClosed(CompletionStage<T> stage, String call) {
    CompletableFuture<T> result = new CompletableFuture<>();
    untilClosed.add(result);
    stage.whenComplete(
        (value, failure) -> {
          if (failure == null) {
            result.complete(value);
          } else {
            result.completeExceptionally(unwrap(failure));
          }
        });
    result.whenComplete((value, failure) -> untilClosed.remove(result));
    if (lifecycle.phase() == EngineOwed.Phase.CLOSED) {
      result.completeExceptionally(closedError(call));
    }
    return result;
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
    return whileOpen(
        call,
        () -> {
          refuseIfDown(call, owner);
          return AskPattern.<C, R>ask(to, message::apply, timeout, system.scheduler())
              .thenApply(answer);
        });
  }

  /**
   * Runs {@code body} unless a close has begun (then fails at once with {@link #closedError}); a
   * TransferException it throws fails the stage. A failure that arrives after a close began,
   * because an actor stopped under the call, is reported as the close, with the original as cause.
   */
  private <T> CompletionStage<T> whileOpen(String call, Supplier<CompletionStage<T>> body) {
    TransferException refused = closedError(call);
    if (refused != null) {
      return CompletableFuture.failedFuture(refused);
    }
    CompletionStage<T> stage;
    try {
      stage = body.get();
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    return stage.exceptionallyCompose(
        failure -> {
          Throwable cause = unwrap(failure);
          TransferException closing = closedError(call);
          boolean own =
              cause instanceof TransferException te
                  && te.kind() != ErrorKind.UNAVAILABLE
                  && te.kind() != ErrorKind.TIMEOUT;
          if (closing != null && !own) {
            closing.initCause(cause);
            return CompletableFuture.failedFuture(closing);
          }
          return CompletableFuture.failedFuture(cause);
        });
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
