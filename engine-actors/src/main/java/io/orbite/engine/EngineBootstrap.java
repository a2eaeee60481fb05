package io.orbite.engine;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.guardian.EngineGuardian;
import io.orbite.engine.notify.NotifyReceiver;
import io.orbite.engine.security.Credentials;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.spi.SharedMemoryProvider;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.view.OwnerBoard;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.channels.ServerSocketChannel;
import java.security.SecureRandom;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;

/**
 * What an engine start takes before any actor exists, on the caller's thread: the transport
 * providers (found by ServiceLoader; none for TCP fails the start), a fresh epoch, the bound
 * listener, this incarnation's shared memory when {@code shm.enabled}, and the shared parts the
 * guardian and the facade both hold (registry view, counters, quarantine ledger, the receiving side
 * of notifications). {@link #abandon} gives them back when the start fails after this. {@link
 * #startOwn} and {@link #spawnIn} are the two ways of starting, behind {@link TransferEngine#start}
 * and {@link TransferEngine#spawn}.
 */
record EngineBootstrap(
    ServerSocketChannel listener,
    SegmentDescriptor self,
    RegistryView view,
    EngineTally counters,
    OwnerBoard owners,
    QuarantineLedger quarantine,
    FaultHooks hooks,
    SharedMemory shared,
    List<TransportProvider> providers,
    PeerEventHub peerEvents,
    NotifyReceiver notifications,
    PeerAuth auth,
    CompletableFuture<EngineGuardian.Handles> started) {
  org.apache.pekko.actor.typed.Behavior<EngineGuardian.Command> guardian(EngineConfig config) {
    return EngineGuardian.create(
        new EngineGuardian.Parts(
            config,
            listener,
            self,
            view,
            counters,
            owners,
            quarantine,
            hooks,
            providers,
            peerEvents,
            notifications,
            auth),
        started);
  }

  /** The start failed: release what {@link #prepare} took (the listener may already be closed). */
  void abandon() {
    try {
      listener.close();
    } catch (IOException ignored) {
      // Nothing more to release.
    }
    if (shared != null) {
      shared.close();
    }
  }

  /** An engine in an ActorSystem of its own, named after {@code config.name()}. */
  static TransferEngine startOwn(EngineConfig config, FaultHooks hooks) {
    EngineBootstrap parts = prepare(config, hooks);
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

  /** An engine whose guardian is a system actor of {@code host}. */
  static TransferEngine spawnIn(ActorSystem<?> host, EngineConfig config) {
    EngineBootstrap parts = prepare(config, FaultHooks.NONE);
    try {
      String name = "orbite-" + config.name() + "-" + Long.toHexString(parts.self().epoch());
      var guardian = host.systemActorOf(parts.guardian(config), name, Props.empty());
      return new TransferEngine(config, host, false, guardian, parts).startServices();
    } catch (RuntimeException e) {
      parts.abandon();
      throw e;
    }
  }

  private static final SecureRandom EPOCHS = new SecureRandom();
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("io.orbite.engine");

  /**
   * The incarnation's shared memory when {@code shm.enabled}: a provider must be on the class path
   * and usable on this machine, else the engine does not start (UNAVAILABLE naming why).
   */
  private static SharedMemory openShared(EngineConfig config, long epoch) {
    if (!config.shm().enabled()) {
      return null;
    }
    for (SharedMemoryProvider provider : java.util.ServiceLoader.load(SharedMemoryProvider.class)) {
      var cause = provider.unavailabilityCause();
      if (cause.isPresent()) {
        throw new TransferException(
            ErrorKind.UNAVAILABLE,
            "shm.enabled: shared memory is unavailable here: " + cause.get());
      }
      return provider.open(config.name(), epoch);
    }
    throw new TransferException(
        ErrorKind.UNAVAILABLE,
        "shm.enabled: no shared-memory provider on the class path (orbite-transport-actors missing?)");
  }

  static EngineBootstrap prepare(EngineConfig config, FaultHooks hooks) {
    java.util.Objects.requireNonNull(config, "config");
    List<TransportProvider> providers;
    try {
      providers = EngineGuardian.transportProviders();
    } catch (IllegalStateException e) {
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "start " + config.name() + ": " + e.getMessage());
    }
    long epoch;
    do {
      epoch = EPOCHS.nextLong();
    } while (epoch == 0);
    Credentials credentials = Credentials.load(config.security(), config.name(), System::getenv);
    refuseUnsafeBind(config, credentials);
    SharedMemory shared = openShared(config, epoch);
    ServerSocketChannel listener;
    try {
      listener = ServerSocketChannel.open();
      listener.bind(new InetSocketAddress(config.listen().host(), config.listen().port()), 1024);
    } catch (IOException e) {
      if (shared != null) {
        shared.close();
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "listen " + config.listen().host() + ":" + config.listen().port() + ": " + e.getMessage(),
          e);
    }
    int port = ((InetSocketAddress) listener.socket().getLocalSocketAddress()).getPort();
    String host = config.listen().host().equals("0.0.0.0") ? "127.0.0.1" : config.listen().host();
    RegistryView view = new RegistryView();
    view.publishEngineName(config.name());
    view.startReady(config.listen().readyAtStart());
    if (shared != null) {
      view.publishSharedHost(shared.host());
    }
    EngineTally tally = new EngineTally();
    OwnerBoard board = new OwnerBoard();
    // The engine's row shows the self-healing counts, read whenever the owner view is taken.
    board.figures("EngineGuardian", tally::healingFigures);
    SegmentDescriptor self = new SegmentDescriptor(host, port, epoch);
    return new EngineBootstrap(
        listener,
        self,
        view,
        tally,
        board,
        new QuarantineLedger(),
        java.util.Objects.requireNonNull(hooks, "hooks"),
        shared,
        providers,
        new PeerEventHub(ForkJoinPool.commonPool()),
        new NotifyReceiver(config.notifications(), self, tally, config.budgets().maxEndpoints()),
        new PeerAuth(credentials, config.name(), epoch),
        new CompletableFuture<>());
  }

  /**
   * Fail-safe binding: a listener that is not loopback-only serves whoever reaches the port, so the
   * engine starts there only with credentials, or with {@code security.mode} {@code "open"} said
   * out loud (and logged as a warning).
   */
  static void refuseUnsafeBind(EngineConfig config, Credentials credentials) {
    String host = config.listen().host();
    if (credentials.open()) {
      LOG.warn(
          "engine {}: security.mode \"open\": peers are not authenticated; anyone who reaches"
              + " {}:{} may describe, READ and WRITE its regions",
          config.name(),
          host,
          config.listen().port());
      return;
    }
    if (credentials.authenticates()) {
      LOG.info("engine {}: peers authenticated: {}", config.name(), credentials);
      return;
    }
    if (loopbackOnly(host)) {
      return;
    }
    throw new TransferException(
        ErrorKind.INVALID_ARGUMENT,
        "security.mode: listen.host "
            + host
            + " is not loopback-only, and no security credentials are configured: anyone who"
            + " reaches the port could describe, READ and WRITE this engine's regions. Set"
            + " security.secretFile (or $"
            + io.orbite.config.SecurityConfig.SECRET_ENV_VAR
            + "), security.peerKeysDir or security.tlsKeyStore, or set security.mode to \"open\""
            + " to serve"
            + " unauthenticated peers on purpose");
  }

  /** Whether every address {@code host} names is a loopback address (a wildcard is not). */
  private static boolean loopbackOnly(String host) {
    try {
      InetAddress[] all = InetAddress.getAllByName(host);
      for (InetAddress a : all) {
        if (!a.isLoopbackAddress()) {
          return false;
        }
      }
      return all.length > 0;
    } catch (UnknownHostException e) {
      // The bind reports the unknown host, naming listen.host.
      return true;
    }
  }
}
