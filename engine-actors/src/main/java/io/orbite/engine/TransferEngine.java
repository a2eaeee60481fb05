package io.orbite.engine;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.BatchPool;
import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.registry.Registration;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.registry.RegistryView;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.EngineCounters;
import io.orbite.engine.spi.FaultHooks;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.SharedAllocation;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.spi.SharedMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The public face of one engine incarnation. Start one with its own ActorSystem ({@link #start}) or
 * inside an application's ({@link #spawn}). Every blocking method has a CompletionStage form.
 * Thread-safe.
 *
 * <p>Either way the engine joins its system's {@link CoordinatedShutdown}: a task in phase {@code
 * service-requests-done} closes it when the system shuts down, and if that close is not confirmed
 * in time it logs at ERROR what the engine still {@link #owed() owes} and lets the shutdown go on.
 * Closing the engine earlier removes the task.
 */
public final class TransferEngine implements AutoCloseable {
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);
  private static final Logger LOG = LoggerFactory.getLogger(TransferEngine.class);

  /**
   * How long a close waits for the guardian: its control service (30 s) and transports (60 s) plus
   * slack.
   */
  private static final Duration SHUTDOWN_LIMIT = Duration.ofSeconds(120);

  /**
   * How long the blocking {@link #owed()} waits for {@link #owedAsync()} (which reads no mailbox).
   */
  private static final Duration OWED_TIMEOUT = Duration.ofSeconds(5);

  /**
   * How long closeRequester waits, after its lanes ended, for their receipts to reach the batches.
   */
  private static final Duration RECEIPTS_AFTER_CLOSE = Duration.ofSeconds(5);

  /**
   * How long a confirmed close waits for the Registry to have stopped (it frees memory on stop).
   */
  private static final Duration REGISTRY_STOP_WAIT = Duration.ofSeconds(5);

  private final EngineConfig config;
  private final ActorSystem<?> system;
  private final boolean ownsSystem;
  private final ActorRef<EngineGuardian.Command> guardian;
  private final EngineGuardian.Handles handles;
  private final EngineCounters counters;
  private final Scheduler scheduler;
  private final RegistryView view;
  private final QuarantineLedger quarantine;

  /** Source-side shared memory (memfd allocations, incarnation token); null unless shm.enabled. */
  private final SharedMemory shared;

  private volatile boolean closed;

  /**
   * The engine's own shutdown (guardian drained and stopped), shared by every closer; null while
   * running.
   */
  private final AtomicReference<CompletableFuture<Void>> shutdown = new AtomicReference<>();

  /** Set once the guardian confirmed its shutdown and the Registry has stopped. */
  private volatile boolean shutdownConfirmed;

  /**
   * Registrations visible when the close began (and later reads while closing), to report retained
   * memory.
   */
  private final Map<Long, Registration> atClose = new ConcurrentHashMap<>();

  /** Ranges whose unregister answered UNQUIESCED: hidden, but retained while workers hold loans. */
  private final Map<Long, Registration> unquiesced = new ConcurrentHashMap<>();

  /** This engine's CoordinatedShutdown task; cancelled once the engine has closed. */
  private volatile Cancellable shutdownTask;

  /**
   * Metrics and dashboard endpoints, when {@code observability} enables any; closed first on close.
   */
  private volatile io.orbite.engine.spi.ObservabilityProvider.Served served;

  private TransferEngine(
      EngineConfig config,
      ActorSystem<?> system,
      boolean ownsSystem,
      ActorRef<EngineGuardian.Command> guardian,
      EngineBootstrap parts) {
    this.config = config;
    this.quarantine = parts.quarantine();
    this.shared = parts.shared();
    this.system = system;
    this.ownsSystem = ownsSystem;
    this.guardian = guardian;
    this.counters = parts.counters();
    this.view = parts.view();
    this.scheduler = system.scheduler();
    this.handles = Batch.join(parts.started(), CONTROL_TIMEOUT, "start " + config.name());
  }

  /**
   * Starts an engine in an ActorSystem of its own, named after {@code config.name()}. Terminating
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
   * {@link #start(EngineConfig)} with fault-injection hooks in the workers' data path. For
   * qualification tests that must hold a worker or break one connection; never needed in
   * production.
   *
   * @param config the engine's configuration
   * @param hooks the hooks the workers call ({@link FaultHooks#NONE} for none); not null
   * @return the running engine
   * @throws TransferException as {@link #start(EngineConfig)} does
   */
  public static TransferEngine start(EngineConfig config, FaultHooks hooks) {
    EngineBootstrap parts = EngineBootstrap.prepare(config, hooks);
    ActorSystem<EngineGuardian.Command> system;
    TransferEngine engine;
    try {
      com.typesafe.config.Config loaded = ConfigFactory.load();
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
      engine = new TransferEngine(config, system, true, system, parts);
    } catch (RuntimeException e) {
      system.terminate();
      parts.abandon();
      throw e;
    }
    engine.joinCoordinatedShutdown();
    engine.serveObservability();
    return engine;
  }

  /**
   * Starts an engine as a system actor of {@code host}; closing the engine leaves the host running.
   * The engine adds a task to the host's CoordinatedShutdown (phase {@code service-requests-done})
   * that closes it when the host shuts down; closing the engine earlier removes that task.
   *
   * @param host the application's actor system; it keeps running when the engine closes
   * @param config the engine's configuration
   * @return the running engine, listening at {@link #localSegment()}
   * @throws TransferException UNAVAILABLE at once when no TCP transport is on the class path (the
   *     message names {@code io.orbite:orbite-transport-actors}), when the listen address cannot be
   *     bound, or when {@code shm.enabled} and shared memory is unusable here; INVALID_ARGUMENT
   *     when observability is enabled but cannot start
   */
  public static TransferEngine spawn(ActorSystem<?> host, EngineConfig config) {
    EngineBootstrap parts = EngineBootstrap.prepare(config, FaultHooks.NONE);
    ActorRef<EngineGuardian.Command> guardian;
    TransferEngine engine;
    try {
      guardian =
          host.systemActorOf(
              parts.guardian(config),
              "orbite-" + config.name() + "-" + Long.toHexString(parts.self().epoch()),
              Props.empty());
      engine = new TransferEngine(config, host, false, guardian, parts);
    } catch (RuntimeException e) {
      parts.abandon();
      throw e;
    }
    engine.joinCoordinatedShutdown();
    engine.serveObservability();
    return engine;
  }

  /**
   * Starts the metrics and dashboard endpoints {@code observability} enables, through the first
   * {@link io.orbite.engine.spi.ObservabilityProvider} on the class path. If none is there, or it
   * cannot bind, the engine is closed and the start fails naming why.
   */
  private void serveObservability() {
    if (!config.observability().anyEnabled()) {
      return;
    }
    try {
      var provider =
          java.util.ServiceLoader.load(io.orbite.engine.spi.ObservabilityProvider.class)
              .findFirst()
              .orElseThrow(
                  () ->
                      new TransferException(
                          ErrorKind.INVALID_ARGUMENT,
                          "observability is enabled in the "
                              + "configuration, but no observability provider is on the class path (orbite-observability missing?)"));
      served = provider.start(this);
      served.urls().forEach((name, url) -> LOG.info("engine {}: {} at {}", identity(), name, url));
    } catch (RuntimeException e) {
      try {
        close(Duration.ofSeconds(30));
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e instanceof TransferException
          ? e
          : new TransferException(
              ErrorKind.INVALID_ARGUMENT, "observability could not start: " + e.getMessage());
    }
  }

  /**
   * The observability endpoints this engine serves, by name ({@code "metrics"}, {@code
   * "dashboard"}): empty unless {@code observability} enables them; empty again once the engine
   * closes.
   *
   * @return a map from endpoint name to its URL
   */
  public Map<String, String> observabilityUrls() {
    var s = served;
    return s == null || closed ? Map.of() : s.urls();
  }

  /**
   * The owner view: what every owner actor last reported, retired owners and peers (read-only).
   * Still answers after the engine closed.
   *
   * @return a snapshot of the owner board
   */
  public io.orbite.engine.view.OwnerBoard.Snapshot ownerView() {
    return counters.owners.snapshot();
  }

  /** Adds this engine's close to its system's CoordinatedShutdown (phase service-requests-done). */
  private void joinCoordinatedShutdown() {
    String phase = CoordinatedShutdown.PhaseServiceRequestsDone();
    String taskName =
        "orbite-close-" + config.name() + "-" + Long.toHexString(handles.self().epoch());
    try {
      CoordinatedShutdown cs = CoordinatedShutdown.get(Adapter.toClassic(system));
      shutdownTask =
          cs.addCancellableTask(phase, taskName, () -> closeForCoordinatedShutdown(cs, phase));
    } catch (RuntimeException e) {
      // The system is already shutting down (or has no such phase): the engine still works and
      // closes with close(); nothing runs it at system shutdown.
      LOG.warn(
          "engine {}: could not join CoordinatedShutdown ({}): {}",
          identity(),
          taskName,
          e.toString());
    }
    if (shutdown.get() != null && shutdownTask != null) {
      shutdownTask.cancel();
    }
  }

  /**
   * The CoordinatedShutdown task: close within the engine's destruction window capped by the phase
   * timeout; if the close is not confirmed in time, log at ERROR what the engine still owes. Always
   * completes with Done, so the system's shutdown never waits on the engine beyond that.
   */
  private CompletionStage<Done> closeForCoordinatedShutdown(CoordinatedShutdown cs, String phase) {
    try {
      long phaseMillis = Math.max(1, cs.timeout(phase).toMillis());
      long closeMillis =
          Math.max(1, Math.min(config.timeouts().destructionWindowMillis(), phaseMillis * 8 / 10));
      String reason = cs.getShutdownReason().map(Object::toString).orElse("no reason given");
      if (shutdown.get() == null) {
        // What is outstanding as the close begins (read concurrently, so it never delays the
        // close).
        owedAsync()
            .thenAccept(
                owed -> {
                  if (owed.isIdle()) {
                    LOG.info("CoordinatedShutdown ({}) is closing an engine: {}", reason, owed);
                  } else {
                    LOG.warn(
                        "CoordinatedShutdown ({}) is closing an engine with work outstanding: {}",
                        reason,
                        owed);
                  }
                });
      }
      CompletableFuture<Void> down = shutdownEngine();
      return down.copy()
          .orTimeout(closeMillis, TimeUnit.MILLISECONDS)
          .handle(
              (ok, failure) -> {
                if (failure == null) {
                  LOG.info("engine {}: closed by CoordinatedShutdown ({})", identity(), reason);
                  return CompletableFuture.completedFuture(Done.getInstance());
                }
                Throwable cause = unwrap(failure);
                String why =
                    cause instanceof TimeoutException
                        ? "its close was not confirmed within " + closeMillis + " ms"
                        : "its close failed: " + cause;
                return owedAsync()
                    .handle(
                        (owed, f) -> {
                          LOG.error(
                              "CoordinatedShutdown phase {} ({}) goes on without engine {}: {}; what it still owes: {}",
                              phase,
                              reason,
                              identity(),
                              why,
                              owed != null ? owed : "unknown (" + f + ")");
                          return Done.getInstance();
                        });
              })
          .thenCompose(stage -> stage);
    } catch (RuntimeException e) {
      LOG.error("engine {}: CoordinatedShutdown task failed: {}", identity(), e.toString(), e);
      return CompletableFuture.completedFuture(Done.getInstance());
    }
  }

  /**
   * Shuts the engine's actors down once, however many callers ask: fences admission, stops serving
   * and the transports, then waits for the Registry to have stopped (it frees what no worker
   * holds). Does not touch the ActorSystem. Completes when the guardian confirmed, or fails after
   * {@link #SHUTDOWN_LIMIT}.
   */
  private CompletableFuture<Void> shutdownEngine() {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    if (!shutdown.compareAndSet(null, mine)) {
      return shutdown.get();
    }
    closed = true;
    batchPool.close();
    var s = served;
    if (s != null) {
      try {
        s.close();
      } catch (RuntimeException e) {
        LOG.warn(
            "engine {}: stopping the observability endpoints failed: {}", identity(), e.toString());
      }
    }
    atClose.putAll(view.snapshot());
    CompletionStage<EngineGuardian.ShutdownDone> asked;
    try {
      asked =
          system.whenTerminated().isCompleted()
              ? CompletableFuture.failedFuture(
                  new TransferException(
                      ErrorKind.UNAVAILABLE,
                      "the actor system "
                          + system.name()
                          + " has terminated without the engine's close"))
              : AskPattern.ask(guardian, EngineGuardian.Shutdown::new, SHUTDOWN_LIMIT, scheduler);
    } catch (RuntimeException e) {
      asked = CompletableFuture.failedFuture(e);
    }
    asked
        .thenCompose(
            done -> {
              atClose.putAll(view.snapshot());
              return registryStopped(System.nanoTime() + REGISTRY_STOP_WAIT.toNanos());
            })
        .whenComplete(
            (v, failure) -> {
              if (failure != null) {
                mine.completeExceptionally(unwrap(failure));
                return;
              }
              shutdownConfirmed = true;
              failUntilClosed();
              if (shared != null) {
                // The Registry has stopped: withdraw the incarnation's liveness lock, so same-host
                // peers holding mappings see it ended (EPOCH_MISMATCH) instead of using them.
                shared.close();
              }
              Cancellable task = shutdownTask;
              if (task != null) {
                task.cancel();
              }
              mine.complete(null);
            });
    return mine;
  }

  /**
   * Completes once the Registry has stopped: nothing is visible any more and every range known at
   * close is released or still on loan (then it stays retained). Gives up quietly at the deadline.
   */
  private CompletableFuture<Void> registryStopped(long deadlineNanos) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    pollRegistryStopped(deadlineNanos, done);
    return done;
  }

  /** One poll of {@link #registryStopped}, scheduled afresh each time (no nested completions). */
  private void pollRegistryStopped(long deadlineNanos, CompletableFuture<Void> done) {
    boolean stopped =
        view.snapshot().isEmpty()
            && atClose.values().stream().allMatch(r -> r.released() || r.loans() > 0);
    if (stopped || System.nanoTime() - deadlineNanos > 0) {
      done.complete(null);
    } else {
      CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS)
          .execute(() -> pollRegistryStopped(deadlineNanos, done));
    }
  }

  /**
   * UNAVAILABLE naming this engine once a close has begun ({@code "engine <name> closing"}) or has
   * been confirmed ({@code "engine <name> closed"}); null while the engine runs. Every operation
   * checks it before it asks an actor, so a call on a closed engine fails at once instead of asking
   * actors that have stopped.
   */
  TransferException closedError(String call) {
    if (shutdown.get() == null) {
      return null;
    }
    return new TransferException(
        ErrorKind.UNAVAILABLE,
        "engine "
            + config.name()
            + (shutdownConfirmed ? " closed" : " closing")
            + " ("
            + call
            + ")");
  }

  /**
   * {@link #closedError} once the close has been confirmed; null while the engine runs or closes. A
   * batch still answers {@code await}, {@code status} and {@code completion} while its engine
   * closes, so that callers learn what happened to the tasks they submitted; after the close it
   * cannot.
   */
  TransferException closedAfterClose(String call) {
    return shutdownConfirmed ? closedError(call) : null;
  }

  /** Stages waiting on actors with no timeout of their own; failed if the engine closes first. */
  private final java.util.Set<CompletableFuture<?>> untilClosed = ConcurrentHashMap.newKeySet();

  /**
   * {@code stage}, failed with {@link #closedError} if the engine's close is confirmed before it
   * completes (the actor it waits on stopped without answering). Held only while pending.
   */
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
    if (shutdownConfirmed) {
      result.completeExceptionally(closedError(call));
    }
    return result;
  }

  /** The close was confirmed: whatever still waits on an actor will never be answered. */
  private void failUntilClosed() {
    for (CompletableFuture<?> pending : List.copyOf(untilClosed)) {
      pending.completeExceptionally(closedError("completion"));
    }
  }

  /**
   * Runs {@code body} unless the engine is closing or closed (then fails at once with {@link
   * #closedError}). A failure that arrives after a close began, because an actor stopped under the
   * call, is reported the same way, with the original as its cause.
   */
  private <T> CompletionStage<T> whileOpen(
      String call, java.util.function.Supplier<CompletionStage<T>> body) {
    TransferException refused = closedError(call);
    if (refused != null) {
      return CompletableFuture.failedFuture(refused);
    }
    return body.get()
        .exceptionallyCompose(
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

  /** {@code name@host:port@epoch}, as logs and {@link EngineOwed} name the engine. */
  private String identity() {
    return config.name() + "@" + handles.self();
  }

  private static Throwable unwrap(Throwable t) {
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * What the engine still has charged; see {@link EngineOwed}. Never throws; works after close.
   *
   * @return the figures, as {@link #owedAsync()} completes with them
   */
  public EngineOwed owed() {
    return Batch.join(owedAsync(), OWED_TIMEOUT.plusSeconds(5), "owed");
  }

  /**
   * What the engine still has charged. Never fails and never waits: the budget figures are read
   * from the engine's admission gate (an object, not a mailbox), so they are current while the
   * engine runs and while it closes ({@link EngineOwed#live()} is true); after a confirmed close it
   * reports what is retained.
   *
   * @return a stage that completes with the figures, in phase RUNNING, CLOSING or CLOSED
   */
  public CompletionStage<EngineOwed> owedAsync() {
    return owedNow();
  }

  /**
   * What is owed, read now: the budgets from the engine's AdmissionGate, the rest from the views.
   */
  private CompletableFuture<EngineOwed> owedNow() {
    if (shutdownConfirmed) {
      return CompletableFuture.completedFuture(closedOwed());
    }
    // The gate is an object, not a mailbox: it answers while the engine closes and after.
    Budgets.Usage u = handles.gate().usage();
    Map<Long, Registration> visible = view.snapshot();
    EngineOwed.Phase phase =
        shutdown.get() == null ? EngineOwed.Phase.RUNNING : EngineOwed.Phase.CLOSING;
    int registrations;
    long loans;
    if (phase == EngineOwed.Phase.RUNNING) {
      unquiesced.values().removeIf(Registration::released);
      registrations = visible.size() + unquiesced.size();
      loans =
          visible.values().stream().mapToLong(Registration::loans).sum()
              + unquiesced.values().stream().mapToLong(Registration::loans).sum();
    } else {
      atClose.putAll(unquiesced);
      // Closing: the Registry may already have hidden everything; count what is not yet released.
      atClose.putAll(visible);
      registrations = (int) atClose.values().stream().filter(r -> !r.released()).count();
      loans =
          atClose.values().stream().filter(r -> !r.released()).mapToLong(Registration::loans).sum();
    }
    return CompletableFuture.completedFuture(
        new EngineOwed(
            identity(),
            phase,
            true,
            u.batches(),
            u.tasks(),
            u.bytes(),
            u.endpoints(),
            registrations,
            loans,
            quarantine.list()));
  }

  /**
   * After a confirmed close the budgets ended with the engine; only memory retained under loans
   * remains.
   */
  private EngineOwed closedOwed() {
    atClose.putAll(unquiesced);
    int retained = 0;
    long loans = 0;
    for (Registration r : atClose.values()) {
      if (!r.released()) {
        retained++;
        loans += r.loans();
      }
    }
    return new EngineOwed(
        identity(), EngineOwed.Phase.CLOSED, true, 0, 0, 0, 0, retained, loans, quarantine.list());
  }

  /**
   * The configuration the engine was started with. Still answers after the engine closed.
   *
   * @return the configuration
   */
  public EngineConfig config() {
    return config;
  }

  /**
   * This incarnation's endpoint and epoch, to publish to peers. Still answers after the engine
   * closed.
   *
   * @return the descriptor peers open with {@link #openSegment(SegmentDescriptor)}
   */
  public SegmentDescriptor localSegment() {
    return handles.self();
  }

  /**
   * Cumulative counters of this incarnation. Still answers after the engine closed.
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
   * Allocates {@code bytes} of zeroed, 64-byte aligned off-heap memory owned by the engine. With
   * {@code shm.enabled} the memory is a memfd (page aligned) that same-host peers may map.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return the registered range, visible to peers at once
   * @throws TransferException INVALID_ARGUMENT for {@code bytes <= 0} or a null {@code access};
   *     RESOURCE_EXHAUSTED when the memory cannot be allocated or {@code budgets.maxRegistrations}
   *     is in use (with {@code shm.enabled}, a memfd that cannot be made fails RESOURCE_EXHAUSTED
   *     or UNAVAILABLE); UNAVAILABLE, at once, when a close of the engine has begun ({@code "engine
   *     <name> closing|closed (allocate)"})
   */
  public RegisteredMemory allocate(long bytes, Access access) {
    return Batch.join(allocateAsync(bytes, access), CONTROL_TIMEOUT, "allocate");
  }

  /**
   * {@link #allocate} without blocking; the stage fails with the same {@link TransferException}.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return a stage that completes with the registered range
   */
  public CompletionStage<RegisteredMemory> allocateAsync(long bytes, Access access) {
    return whileOpen(
        "allocate",
        () -> {
          if (bytes <= 0) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT, "allocate: bytes must be positive, got " + bytes));
          }
          if (access == null) {
            return CompletableFuture.failedFuture(
                new TransferException(ErrorKind.INVALID_ARGUMENT, "allocate: access is null"));
          }
          if (shared != null) {
            SharedAllocation allocation;
            try {
              allocation = shared.allocate(bytes, config.name());
            } catch (TransferException e) {
              return CompletableFuture.failedFuture(e);
            }
            return registerInternal(
                allocation.segment(), access, allocation.arena(), allocation.backing());
          }
          Arena arena = Arena.ofShared();
          MemorySegment segment;
          try {
            segment = arena.allocate(bytes, 64);
          } catch (OutOfMemoryError | IllegalArgumentException e) {
            arena.close();
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.RESOURCE_EXHAUSTED,
                    "allocate " + bytes + " B: " + e.getMessage(),
                    e));
          }
          return registerInternal(segment, access, arena, null);
        });
  }

  /**
   * Registers caller-owned native memory; the caller keeps it alive until unregister completes.
   *
   * @param range the native memory to register; the engine never frees it
   * @param access what peers may do with it
   * @return the registered range, visible to peers at once
   * @throws TransferException INVALID_ARGUMENT for a null range or access, a heap segment or an
   *     empty range; RESOURCE_EXHAUSTED when {@code budgets.maxRegistrations} is in use;
   *     UNAVAILABLE, at once, when a close of the engine has begun ({@code "engine <name>
   *     closing|closed (register)"})
   */
  public RegisteredMemory register(MemorySegment range, Access access) {
    return Batch.join(registerAsync(range, access), CONTROL_TIMEOUT, "register");
  }

  /**
   * {@link #register} without blocking; the stage fails with the same {@link TransferException}.
   *
   * @param range the native memory to register
   * @param access what peers may do with it
   * @return a stage that completes with the registered range
   */
  public CompletionStage<RegisteredMemory> registerAsync(MemorySegment range, Access access) {
    return whileOpen(
        "register",
        () -> {
          if (range == null || access == null) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT, "register: range and access must not be null"));
          }
          if (!range.isNative()) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT,
                    "register: heap segments cannot be registered; use off-heap (native) memory"));
          }
          if (range.byteSize() == 0) {
            return CompletableFuture.failedFuture(
                new TransferException(ErrorKind.INVALID_ARGUMENT, "register: range is empty"));
          }
          return registerInternal(range, access, null, null);
        });
  }

  private CompletionStage<RegisteredMemory> registerInternal(
      MemorySegment segment, Access access, Arena owned, SharedBacking backing) {
    String down = handles.supervision().unavailable(EngineGuardian.REGISTRY);
    CompletionStage<Registry.RegisterReply> asked =
        down != null
            ? CompletableFuture.completedFuture(
                new Registry.RegisterRefused(ErrorKind.UNAVAILABLE, down))
            : AskPattern.<Registry.Command, Registry.RegisterReply>ask(
                handles.registry(),
                replyTo -> new Registry.Register(segment, access, owned, backing, replyTo),
                CONTROL_TIMEOUT,
                scheduler);
    return asked.thenApply(
        reply ->
            switch (reply) {
              case Registry.Registered r -> r.memory();
              case Registry.RegisterRefused r -> {
                if (owned != null) {
                  owned.close();
                }
                throw new TransferException(r.kind(), "register: " + r.detail());
              }
            });
  }

  /**
   * Hides the range from peers at once, waits for admitted work to return its loans, then releases
   * it (engine-owned memory is freed).
   *
   * @param memory the range to unregister
   * @throws TransferException INVALID_ARGUMENT for null or a range that is not (or no longer)
   *     registered; UNQUIESCED when its loans did not come back within the destruction window (the
   *     range stays hidden and retained, and is listed by {@link #quarantined()}); UNAVAILABLE, at
   *     once, when a close of the engine has begun ({@code "engine <name> closing|closed
   *     (unregister)"})
   */
  public void unregister(RegisteredMemory memory) {
    Batch.join(
        unregisterAsync(memory),
        Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL_TIMEOUT),
        "unregister");
  }

  /**
   * {@link #unregister} without blocking; the stage fails with the same {@link TransferException}.
   *
   * @param memory the range to unregister
   * @return a stage that completes once the range is released
   */
  public CompletionStage<Void> unregisterAsync(RegisteredMemory memory) {
    return whileOpen(
        "unregister",
        () -> {
          if (memory == null) {
            return CompletableFuture.failedFuture(
                new TransferException(ErrorKind.INVALID_ARGUMENT, "unregister: memory is null"));
          }
          Duration wait =
              Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL_TIMEOUT);
          String down = handles.supervision().unavailable(EngineGuardian.REGISTRY);
          CompletionStage<Registry.UnregisterReply> asked =
              down != null
                  ? CompletableFuture.completedFuture(
                      new Registry.UnregisterFailed(ErrorKind.UNAVAILABLE, down))
                  : AskPattern.<Registry.Command, Registry.UnregisterReply>ask(
                      handles.registry(),
                      replyTo -> new Registry.Unregister(memory.regionId(), replyTo),
                      wait,
                      scheduler);
          return asked.thenApply(
              reply ->
                  switch (reply) {
                    case Registry.Unregistered u -> null;
                    case Registry.UnregisterFailed f -> {
                      if (f.kind() == ErrorKind.UNQUIESCED) {
                        // Hidden but retained under a worker's loan: still owed until the loan
                        // comes back.
                        unquiesced.put(memory.regionId(), memory.registration());
                      }
                      throw new TransferException(f.kind(), "unregister: " + f.detail());
                    }
                  });
        });
  }

  /**
   * The segment table (C9): every peer incarnation this engine opened that is still active or still
   * referenced by a {@link RemoteSegment}, with its state and reference count.
   *
   * @return one entry per incarnation in the table
   * @throws TransferException UNAVAILABLE, at once, when a close of the engine has begun ({@code
   *     "engine <name> closing|closed (peers)"})
   */
  public List<PeerEntry> peers() {
    return Batch.join(
        whileOpen(
            "peers",
            () -> {
              String down = handles.supervision().unavailable(EngineGuardian.SEGMENT_TABLE);
              return down != null
                  ? CompletableFuture.<List<PeerEntry>>failedFuture(
                      new TransferException(ErrorKind.UNAVAILABLE, "peers: " + down))
                  : AskPattern.<SegmentTable.Command, List<PeerEntry>>ask(
                      handles.segmentTable(),
                      SegmentTable.GetPeers::new,
                      CONTROL_TIMEOUT,
                      scheduler);
            }),
        CONTROL_TIMEOUT,
        "peers");
  }

  /**
   * Describes the peer at {@code endpoint} ({@code host:port}) and opens its current incarnation.
   *
   * @param endpoint the peer's {@code host:port}
   * @return a stage that completes with the segment, a new reference to the peer's table entry
   *     (close it when done); it fails with a {@link TransferException}: INVALID_ARGUMENT for a
   *     malformed endpoint; UNAVAILABLE, TIMEOUT, PEER_LOST or PROTOCOL when Describe or the
   *     connection fails; RESOURCE_EXHAUSTED when the peer table or {@code budgets.maxEndpoints} is
   *     full; UNAVAILABLE when the requester side is closed, or at once when a close of the engine
   *     has begun
   */
  public CompletionStage<RemoteSegment> openSegment(String endpoint) {
    return whileOpen(
        "openSegment",
        () -> {
          Duration timeout =
              Duration.ofMillis(
                      config.timeouts().describeTimeoutMillis()
                          + config.tcp().connectTimeoutMillis())
                  .plus(CONTROL_TIMEOUT);
          return openAsk(endpoint, null, timeout)
              .thenApply(
                  reply ->
                      switch (reply) {
                        case SegmentTable.Opened o -> o.segment();
                        case SegmentTable.OpenFailed f ->
                            throw new TransferException(f.kind(), f.detail());
                      });
        });
  }

  /**
   * Opens exactly the incarnation {@code expected} names: EPOCH_MISMATCH if a different epoch now
   * answers at its endpoint (without any network round trip when the engine already knows).
   *
   * @param expected the incarnation to open
   * @return a stage that completes with the segment; it fails EPOCH_MISMATCH as above, or as {@link
   *     #openSegment(String)} does
   */
  public CompletionStage<RemoteSegment> openSegment(SegmentDescriptor expected) {
    return whileOpen(
        "openSegment",
        () -> {
          Duration timeout =
              Duration.ofMillis(
                      config.timeouts().describeTimeoutMillis()
                          + config.tcp().connectTimeoutMillis())
                  .plus(CONTROL_TIMEOUT);
          return openAsk(expected.endpoint(), expected.epoch(), timeout)
              .thenApply(
                  reply ->
                      switch (reply) {
                        case SegmentTable.Opened o -> o.segment();
                        case SegmentTable.OpenFailed f ->
                            throw new TransferException(f.kind(), f.detail());
                      });
        });
  }

  /**
   * Asks the SegmentTable to open {@code endpoint} (only its incarnation {@code expectedEpoch} when
   * not null), or refuses while the table is quarantined.
   */
  private CompletionStage<SegmentTable.OpenReply> openAsk(
      String endpoint, Long expectedEpoch, Duration timeout) {
    String down = handles.supervision().unavailable(EngineGuardian.SEGMENT_TABLE);
    if (down != null) {
      return CompletableFuture.completedFuture(
          new SegmentTable.OpenFailed(ErrorKind.UNAVAILABLE, "open " + endpoint + ": " + down));
    }
    return AskPattern.<SegmentTable.Command, SegmentTable.OpenReply>ask(
        handles.segmentTable(),
        replyTo -> new SegmentTable.OpenSegment(endpoint, expectedEpoch, replyTo),
        timeout,
        scheduler);
  }

  /**
   * Blocking form of {@link #openSegment(SegmentDescriptor)}.
   *
   * @param expected the incarnation to open
   * @param timeout how long to wait for the open
   * @return the segment
   * @throws TransferException what the stage fails with; TIMEOUT if it does not complete within
   *     {@code timeout}
   */
  public RemoteSegment openSegment(SegmentDescriptor expected, Duration timeout) {
    return Batch.join(openSegment(expected), timeout, "openSegment " + expected);
  }

  /**
   * Blocking form of {@link #openSegment(String)}.
   *
   * @param endpoint the peer's {@code host:port}
   * @param timeout how long to wait for the open
   * @return the segment
   * @throws TransferException what the stage fails with; TIMEOUT if it does not complete within
   *     {@code timeout}
   */
  public RemoteSegment openSegment(String endpoint, Duration timeout) {
    return Batch.join(openSegment(endpoint), timeout, "openSegment " + endpoint);
  }

  /** The region id of a file segment's one region (the whole file). */
  public static final long FILE_REGION_ID = 1;

  /**
   * Opens the file at {@code path} as a segment of one region ({@link #FILE_REGION_ID}) covering
   * the file's bytes at open: {@code Access.READ} lets READ tasks copy file bytes into registered
   * memory, {@code Access.WRITE} lets WRITE tasks copy registered memory into the file (never past
   * its size), {@code READ_WRITE} both. Requests use it like a peer's segment, through ordinary
   * batches. The engine keeps one entry per path in a bounded table ({@code file.maxFileSegments});
   * the file is opened once, so work admitted through the segment keeps using that file even if the
   * path is later replaced (a later open of the replaced path opens the new file). Fails
   * INVALID_ARGUMENT for a missing path, a directory or another non-file, PERMISSION_DENIED for a
   * file that may not be opened as asked (a read-only file for WRITE), RESOURCE_EXHAUSTED when the
   * table is full, UNAVAILABLE when the engine has no file transport or is closing.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @return a stage that completes with the file segment, labelled {@code "file <path>"}; it fails
   *     with the {@link TransferException}s above
   */
  public CompletionStage<RemoteSegment> openFileSegment(java.nio.file.Path path, Access access) {
    return whileOpen(
        "openFileSegment",
        () -> {
          if (path == null || access == null) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT,
                    "openFileSegment: path and access must not be null"));
          }
          var transport = handles.transports().get(Transport.FILE);
          if (transport == null) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.UNAVAILABLE,
                    "openFileSegment " + path + ": no file transport on the class path"));
          }
          return AskPattern
              .<io.orbite.engine.spi.TransportCommand,
                  io.orbite.engine.spi.TransportCommand.OpenFileReply>
                  ask(
                      transport,
                      replyTo ->
                          new io.orbite.engine.spi.TransportCommand.OpenFile(
                              path, access, handles.self(), replyTo),
                      CONTROL_TIMEOUT,
                      scheduler)
              .thenApply(
                  reply ->
                      switch (reply) {
                        case io.orbite.engine.spi.TransportCommand.FileOpened o ->
                            new RemoteSegment(
                                handles.self(),
                                java.util.List.of(
                                    new RemoteRegion(FILE_REGION_ID, o.lengthBytes(), o.access())),
                                o.channel(),
                                o.label());
                        case io.orbite.engine.spi.TransportCommand.FileOpenFailed f ->
                            throw new TransferException(f.kind(), f.detail());
                      });
        });
  }

  /**
   * Blocking form of {@link #openFileSegment(java.nio.file.Path, Access)}.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @param timeout how long to wait for the open
   * @return the file segment
   * @throws TransferException what the stage fails with; TIMEOUT if it does not complete within
   *     {@code timeout}
   */
  public RemoteSegment openFileSegment(java.nio.file.Path path, Access access, Duration timeout) {
    return Batch.join(openFileSegment(path, access), timeout, "openFileSegment " + path);
  }

  /**
   * Charges a batch slot and creates a batch of at most {@code capacity} tasks.
   *
   * @param capacity how many tasks the batch may hold in all, 1 to {@code budgets.maxBatchCapacity}
   * @return the batch; free it when done
   * @throws TransferException INVALID_ARGUMENT for a capacity out of range; RESOURCE_EXHAUSTED when
   *     {@code budgets.maxBatches} batches are held; UNAVAILABLE when the requester side is closed,
   *     or at once when a close of the engine has begun
   */
  public Batch allocateBatch(int capacity) {
    return Batch.join(allocateBatchAsync(capacity), CONTROL_TIMEOUT, "allocateBatch");
  }

  /**
   * {@link #allocateBatch} without blocking; the stage fails with the same {@link
   * TransferException}.
   *
   * @param capacity how many tasks the batch may hold in all
   * @return a stage that completes with the batch
   */
  public CompletionStage<Batch> allocateBatchAsync(int capacity) {
    return whileOpen(
        "allocateBatch",
        () -> {
          int max = config.budgets().maxBatchCapacity();
          if (capacity < 1 || capacity > max) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT,
                    "allocateBatch: capacity must be 1.." + max + ", got " + capacity));
          }
          // The slot is charged on the caller's thread; a batch freed earlier is reused without an
          // ask.
          Admission.Decision decision = handles.gate().tryBatch();
          if (!decision.granted()) {
            return CompletableFuture.failedFuture(
                new TransferException(
                    decision.fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED,
                    "allocateBatch: " + decision.refusal()));
          }
          BatchCore pooled = batchPool.take(capacity);
          if (pooled != null) {
            return CompletableFuture.completedFuture(new Batch(pooled, pooled.lease(), this));
          }
          return AskPattern.<EngineGuardian.Command, EngineGuardian.SpawnBatchReply>ask(
                  guardian,
                  replyTo -> new EngineGuardian.SpawnBatch(capacity, replyTo),
                  CONTROL_TIMEOUT,
                  scheduler)
              .handle(
                  (reply, failure) -> {
                    if (reply instanceof EngineGuardian.BatchSpawned s) {
                      return new Batch(s.core(), s.core().lease(), this);
                    }
                    handles.gate().releaseBatch();
                    if (reply instanceof EngineGuardian.BatchRefused r) {
                      throw new TransferException(
                          r.decision().fenced()
                              ? ErrorKind.UNAVAILABLE
                              : ErrorKind.RESOURCE_EXHAUSTED,
                          "allocateBatch: " + r.decision().refusal());
                    }
                    throw new java.util.concurrent.CompletionException(failure);
                  });
        });
  }

  /** Freed batches kept for reuse by {@link #allocateBatch}. */
  private final BatchPool batchPool = new BatchPool();

  /** A batch was freed: keep it for the next allocation of its capacity, or retire it. */
  void recycle(BatchCore core) {
    if (shutdown.get() != null) {
      core.retire();
      return;
    }
    batchPool.give(core);
  }

  /**
   * Closes the requester side (C8): new batches, submissions and opens are refused at once
   * (UNAVAILABLE); work already admitted may finish within {@code timeout}; then every lane to a
   * peer is closed, so whatever is still in flight fails after local drain. The engine keeps
   * serving peers as a source. Returns what is still owed afterwards; can be called again.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return what the engine still has charged afterwards
   * @throws TransferException UNAVAILABLE, at once, when a close of the engine has begun ({@code
   *     "engine <name> closing|closed (closeRequester)"})
   */
  public EngineOwed closeRequester(Duration timeout) {
    return Batch.join(
        closeRequesterAsync(timeout), timeout.plus(CONTROL_TIMEOUT), "closeRequester");
  }

  /**
   * {@link #closeRequester} without blocking; the stage fails with the same {@link
   * TransferException}.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return a stage that completes with what the engine still has charged afterwards
   */
  public CompletionStage<EngineOwed> closeRequesterAsync(Duration timeout) {
    return whileOpen(
        "closeRequester",
        () -> {
          long deadline = System.nanoTime() + timeout.toNanos();
          return AskPattern.<EngineGuardian.Command, EngineGuardian.SideClosed>ask(
                  guardian,
                  replyTo -> new EngineGuardian.FenceSide(EngineGuardian.Side.REQUESTER, replyTo),
                  CONTROL_TIMEOUT,
                  scheduler)
              .thenCompose(fenced -> untilNoTaskInFlight(deadline))
              .thenCompose(
                  drained ->
                      AskPattern.<EngineGuardian.Command, EngineGuardian.SideClosed>ask(
                          guardian,
                          replyTo ->
                              new EngineGuardian.CloseSide(EngineGuardian.Side.REQUESTER, replyTo),
                          SHUTDOWN_LIMIT,
                          scheduler))
              // The lanes have ended, but their last receipts may still be in the batches'
              // mailboxes:
              // report once those have been applied. A task still in flight after that is held by a
              // worker that did not let go; the report shows it, and its batch's watchdog
              // quarantines it.
              .thenCompose(
                  closed -> untilNoTaskInFlight(System.nanoTime() + RECEIPTS_AFTER_CLOSE.toNanos()))
              .thenCompose(receipted -> owedAsync());
        });
  }

  /**
   * Closes the source side (C8): the listener closes, so peers can neither describe nor connect;
   * every source lane is closed and its loans come back once its thread has ended; every range
   * shared with same-host peers (SHM) is fenced, so no peer starts a copy into or out of it any
   * more. The engine keeps working as a requester. Returns what is still owed afterwards; can be
   * called again.
   *
   * @param timeout how long the source lanes may take to close
   * @return what the engine still has charged afterwards
   * @throws TransferException UNAVAILABLE, at once, when a close of the engine has begun ({@code
   *     "engine <name> closing|closed (closeSource)"})
   */
  public EngineOwed closeSource(Duration timeout) {
    return Batch.join(closeSourceAsync(timeout), timeout.plus(CONTROL_TIMEOUT), "closeSource");
  }

  /**
   * {@link #closeSource} without blocking; the stage fails with the same {@link TransferException}.
   *
   * @param timeout how long the source lanes may take to close
   * @return a stage that completes with what the engine still has charged afterwards
   */
  public CompletionStage<EngineOwed> closeSourceAsync(Duration timeout) {
    return whileOpen(
        "closeSource",
        () -> {
          Duration window = Duration.ofMillis(config.timeouts().destructionWindowMillis());
          return AskPattern.<EngineGuardian.Command, EngineGuardian.SideClosed>ask(
                  guardian,
                  replyTo -> new EngineGuardian.FenceSide(EngineGuardian.Side.SOURCE, replyTo),
                  CONTROL_TIMEOUT,
                  scheduler)
              .thenCompose(
                  fenced ->
                      AskPattern.<EngineGuardian.Command, EngineGuardian.SideClosed>ask(
                          guardian,
                          replyTo ->
                              new EngineGuardian.CloseSide(EngineGuardian.Side.SOURCE, replyTo),
                          timeout.plus(CONTROL_TIMEOUT),
                          scheduler))
              // Same-host peers copy through shared memory without any lane: fence them out too.
              .thenCompose(
                  closed ->
                      AskPattern.<Registry.Command, Registry.SharedFenced>ask(
                          handles.registry(),
                          Registry.FenceShared::new,
                          window.plus(CONTROL_TIMEOUT),
                          scheduler))
              .thenAccept(
                  shared -> {
                    if (shared.stillCopying() < 0) {
                      LOG.error(
                          "engine {}: closeSource: the Registry is quarantined and could not fence the ranges shared "
                              + "with same-host peers (owed() lists it)",
                          identity());
                    } else if (shared.stillCopying() > 0) {
                      LOG.warn(
                          "engine {}: closeSource: {} shared range(s) still being copied by a same-host peer after the "
                              + "destruction window; no new copy can start",
                          identity(),
                          shared.stillCopying());
                    }
                  })
              .thenCompose(done -> owedAsync());
        });
  }

  /** Completes once no task is in flight, or at {@code deadlineNanos}, whichever comes first. */
  private CompletionStage<Void> untilNoTaskInFlight(long deadlineNanos) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    pollTasksInFlight(deadlineNanos, done);
    return done;
  }

  /**
   * One poll of {@link #untilNoTaskInFlight}; the next one is scheduled afresh rather than chained,
   * so a long wait does not nest thousands of completions (which overflowed the stack and left the
   * close unanswered).
   */
  private void pollTasksInFlight(long deadlineNanos, CompletableFuture<Void> done) {
    owedAsync()
        .whenComplete(
            (owed, failure) -> {
              if (failure != null
                  || owed.tasksInFlight() == 0
                  || System.nanoTime() - deadlineNanos > 0) {
                done.complete(null);
              } else {
                CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS)
                    .execute(() -> pollTasksInFlight(deadlineNanos, done));
              }
            });
  }

  /**
   * Stops serving and requesting, closes transports and, if the engine owns it, its ActorSystem.
   * Returns what is still owed afterwards: after a clean close nothing; otherwise the memory kept
   * under loans and every quarantined owner ({@link EngineOwed#quarantined()}). Can be called
   * again; a later call reports the same way what is still retained.
   *
   * @param timeout how long the engine may take to confirm its close
   * @return what is still owed, in phase CLOSED once the close is confirmed
   * @throws TransferException TIMEOUT if the close is not confirmed within {@code timeout}
   */
  public EngineOwed close(Duration timeout) {
    return Batch.join(closeAsync(timeout), timeout.plusSeconds(5), "close");
  }

  /**
   * Closes the engine (see {@link #close(Duration)}); idempotent: once a close has begun, by this
   * method or by CoordinatedShutdown, a later call completes at once with what is still owed. Fails
   * with TIMEOUT if the engine does not confirm its close within {@code timeout}; {@link #owed()}
   * then says what it still holds.
   *
   * @param timeout how long the engine may take to confirm its close
   * @return a stage that completes with what is still owed after the close
   */
  public CompletionStage<EngineOwed> closeAsync(Duration timeout) {
    if (closed) {
      return owedAsync();
    }
    return shutdownEngine()
        .copy()
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .exceptionallyCompose(
            failure -> {
              Throwable cause = unwrap(failure);
              return CompletableFuture.failedFuture(
                  cause instanceof TimeoutException
                      ? new TransferException(
                          ErrorKind.TIMEOUT,
                          "close: the engine did not confirm its close within " + timeout)
                      : cause);
            })
        .thenCompose(
            done -> {
              if (!ownsSystem) {
                return CompletableFuture.<Void>completedFuture(null);
              }
              system.terminate();
              return system.getWhenTerminated().thenApply(d -> (Void) null);
            })
        .thenCompose(done -> owedAsync());
  }

  /**
   * The owners that could not prove their drain within the destruction window and keep what they
   * hold (C5, C7); see {@link QuarantinedOwner}. Empty on a healthy engine; still answers after
   * close.
   *
   * @return the quarantined owners, each with what it retains
   */
  public List<QuarantinedOwner> quarantined() {
    return quarantine.list();
  }

  /** {@link #close(Duration)} with 30 s; what is still owed afterwards is logged, not returned. */
  @Override
  public void close() {
    EngineOwed owed = close(Duration.ofSeconds(30));
    if (!owed.isClear()) {
      LOG.warn("closed with resources retained: {}", owed);
    }
  }
}
