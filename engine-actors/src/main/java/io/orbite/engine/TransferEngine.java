package io.orbite.engine;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.registry.RegistryView;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.EngineCounters;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * The public face of one engine incarnation. Start one with its own ActorSystem ({@link #start})
 * or inside an application's ({@link #spawn}). Every blocking method has a CompletionStage form.
 * Thread-safe.
 */
public final class TransferEngine implements AutoCloseable {
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);
  private static final SecureRandom EPOCHS = new SecureRandom();

  private final EngineConfig config;
  private final ActorSystem<?> system;
  private final boolean ownsSystem;
  private final ActorRef<EngineGuardian.Command> guardian;
  private final EngineGuardian.Handles handles;
  private final EngineCounters counters;
  private final Scheduler scheduler;
  private volatile boolean closed;

  private TransferEngine(
      EngineConfig config, ActorSystem<?> system, boolean ownsSystem, ActorRef<EngineGuardian.Command> guardian,
      EngineCounters counters) {
    this.config = config;
    this.system = system;
    this.ownsSystem = ownsSystem;
    this.guardian = guardian;
    this.counters = counters;
    this.scheduler = system.scheduler();
    this.handles = Batch.join(
        AskPattern.ask(guardian, EngineGuardian.GetHandles::new, CONTROL_TIMEOUT, scheduler), CONTROL_TIMEOUT, "start");
  }

  /** Starts an engine in an ActorSystem of its own, named after {@code config.name()}. */
  public static TransferEngine start(EngineConfig config) {
    Parts parts = prepare(config);
    ActorSystem<EngineGuardian.Command> system = ActorSystem.create(
        EngineGuardian.create(config, parts.listener, parts.self, parts.view, parts.counters), config.name(),
        ConfigFactory.load());
    return new TransferEngine(config, system, true, system, parts.counters);
  }

  /** Starts an engine as a system actor of {@code host}; closing the engine leaves the host running. */
  public static TransferEngine spawn(ActorSystem<?> host, EngineConfig config) {
    Parts parts = prepare(config);
    ActorRef<EngineGuardian.Command> guardian = host.systemActorOf(
        EngineGuardian.create(config, parts.listener, parts.self, parts.view, parts.counters),
        "orbite-" + config.name() + "-" + Long.toHexString(parts.self.epoch()), Props.empty());
    return new TransferEngine(config, host, false, guardian, parts.counters);
  }

  private record Parts(ServerSocketChannel listener, SegmentDescriptor self, RegistryView view, EngineCounters counters) {}

  private static Parts prepare(EngineConfig config) {
    long epoch;
    do {
      epoch = EPOCHS.nextLong();
    } while (epoch == 0);
    ServerSocketChannel listener;
    try {
      listener = ServerSocketChannel.open();
      listener.bind(new InetSocketAddress(config.listen().host(), config.listen().port()), 1024);
    } catch (IOException e) {
      throw new TransferException(ErrorKind.UNAVAILABLE,
          "listen " + config.listen().host() + ":" + config.listen().port() + ": " + e.getMessage(), e);
    }
    int port = ((InetSocketAddress) listener.socket().getLocalSocketAddress()).getPort();
    String host = config.listen().host().equals("0.0.0.0") ? "127.0.0.1" : config.listen().host();
    return new Parts(listener, new SegmentDescriptor(host, port, epoch), new RegistryView(), new EngineCounters());
  }

  public EngineConfig config() {
    return config;
  }

  /** This incarnation's endpoint and epoch, to publish to peers. */
  public SegmentDescriptor localSegment() {
    return handles.self();
  }

  /** Cumulative counters of this incarnation. */
  public EngineCounters counters() {
    return counters;
  }

  /** The actor system the engine runs in (its own, or the host's). */
  public ActorSystem<?> system() {
    return system;
  }

  /** Allocates {@code bytes} of zeroed, 64-byte aligned off-heap memory owned by the engine. */
  public RegisteredMemory allocate(long bytes, Access access) {
    return Batch.join(allocateAsync(bytes, access), CONTROL_TIMEOUT, "allocate");
  }

  public CompletionStage<RegisteredMemory> allocateAsync(long bytes, Access access) {
    if (bytes <= 0) {
      return CompletableFuture.failedFuture(
          new TransferException(ErrorKind.INVALID_ARGUMENT, "allocate: bytes must be positive, got " + bytes));
    }
    if (access == null) {
      return CompletableFuture.failedFuture(new TransferException(ErrorKind.INVALID_ARGUMENT, "allocate: access is null"));
    }
    Arena arena = Arena.ofShared();
    MemorySegment segment;
    try {
      segment = arena.allocate(bytes, 64);
    } catch (OutOfMemoryError | IllegalArgumentException e) {
      arena.close();
      return CompletableFuture.failedFuture(
          new TransferException(ErrorKind.RESOURCE_EXHAUSTED, "allocate " + bytes + " B: " + e.getMessage(), e));
    }
    return registerInternal(segment, access, arena);
  }

  /** Registers caller-owned native memory; the caller keeps it alive until unregister completes. */
  public RegisteredMemory register(MemorySegment range, Access access) {
    return Batch.join(registerAsync(range, access), CONTROL_TIMEOUT, "register");
  }

  public CompletionStage<RegisteredMemory> registerAsync(MemorySegment range, Access access) {
    if (range == null || access == null) {
      return CompletableFuture.failedFuture(
          new TransferException(ErrorKind.INVALID_ARGUMENT, "register: range and access must not be null"));
    }
    if (!range.isNative()) {
      return CompletableFuture.failedFuture(new TransferException(ErrorKind.INVALID_ARGUMENT,
          "register: heap segments cannot be registered; use off-heap (native) memory"));
    }
    if (range.byteSize() == 0) {
      return CompletableFuture.failedFuture(new TransferException(ErrorKind.INVALID_ARGUMENT, "register: range is empty"));
    }
    return registerInternal(range, access, null);
  }

  private CompletionStage<RegisteredMemory> registerInternal(MemorySegment segment, Access access, Arena owned) {
    return AskPattern.<Registry.Command, Registry.RegisterReply>ask(
            handles.registry(), replyTo -> new Registry.Register(segment, access, owned, replyTo), CONTROL_TIMEOUT, scheduler)
        .thenApply(reply -> switch (reply) {
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
   * Hides the range from peers at once, waits for admitted work to return its loans, then
   * releases it (engine-owned memory is freed).
   */
  public void unregister(RegisteredMemory memory) {
    Batch.join(unregisterAsync(memory), Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL_TIMEOUT),
        "unregister");
  }

  public CompletionStage<Void> unregisterAsync(RegisteredMemory memory) {
    if (memory == null) {
      return CompletableFuture.failedFuture(new TransferException(ErrorKind.INVALID_ARGUMENT, "unregister: memory is null"));
    }
    Duration wait = Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL_TIMEOUT);
    return AskPattern.<Registry.Command, Registry.UnregisterReply>ask(
            handles.registry(), replyTo -> new Registry.Unregister(memory.regionId(), replyTo), wait, scheduler)
        .thenApply(reply -> switch (reply) {
          case Registry.Unregistered u -> null;
          case Registry.UnregisterFailed f -> throw new TransferException(f.kind(), "unregister: " + f.detail());
        });
  }

  /** Describes the peer at {@code endpoint} ({@code host:port}) and opens its current incarnation. */
  public CompletionStage<RemoteSegment> openSegment(String endpoint) {
    Duration timeout = Duration.ofMillis(config.timeouts().describeTimeoutMillis() + config.tcp().connectTimeoutMillis())
        .plus(CONTROL_TIMEOUT);
    return AskPattern.<SegmentTable.Command, SegmentTable.OpenReply>ask(
            handles.segmentTable(), replyTo -> new SegmentTable.OpenSegment(endpoint, replyTo), timeout, scheduler)
        .thenApply(reply -> switch (reply) {
          case SegmentTable.Opened o -> o.segment();
          case SegmentTable.OpenFailed f -> throw new TransferException(f.kind(), f.detail());
        });
  }

  /** Blocking form of {@link #openSegment(String)}. */
  public RemoteSegment openSegment(String endpoint, Duration timeout) {
    return Batch.join(openSegment(endpoint), timeout, "openSegment " + endpoint);
  }

  /** Charges a batch slot and creates a batch of at most {@code capacity} tasks. */
  public Batch allocateBatch(int capacity) {
    return Batch.join(allocateBatchAsync(capacity), CONTROL_TIMEOUT, "allocateBatch");
  }

  public CompletionStage<Batch> allocateBatchAsync(int capacity) {
    int max = config.budgets().maxBatchCapacity();
    if (capacity < 1 || capacity > max) {
      return CompletableFuture.failedFuture(new TransferException(ErrorKind.INVALID_ARGUMENT,
          "allocateBatch: capacity must be 1.." + max + ", got " + capacity));
    }
    return AskPattern.<EngineGuardian.Command, EngineGuardian.SpawnBatchReply>ask(
            guardian, replyTo -> new EngineGuardian.SpawnBatch(capacity, replyTo), CONTROL_TIMEOUT, scheduler)
        .thenApply(reply -> switch (reply) {
          case EngineGuardian.BatchSpawned s -> new Batch(s.batch(), scheduler, capacity);
          case EngineGuardian.BatchRefused r -> throw new TransferException(
              r.decision().fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED, "allocateBatch: " + r.decision().refusal());
        });
  }

  /** Stops serving and requesting, closes transports and, if the engine owns it, its ActorSystem. */
  public void close(Duration timeout) {
    Batch.join(closeAsync(timeout), timeout.plusSeconds(5), "close");
  }

  public CompletionStage<Void> closeAsync(Duration timeout) {
    if (closed) {
      return CompletableFuture.completedFuture(null);
    }
    closed = true;
    return AskPattern.<EngineGuardian.Command, EngineGuardian.ShutdownDone>ask(
            guardian, EngineGuardian.Shutdown::new, timeout, scheduler)
        .thenCompose(done -> {
          if (!ownsSystem) {
            return CompletableFuture.<Void>completedFuture(null);
          }
          system.terminate();
          return system.getWhenTerminated().thenApply(d -> (Void) null);
        });
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(30));
  }
}
