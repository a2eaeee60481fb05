package io.orbite.cluster;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.orbite.config.DirectoryConfig;
import io.orbite.config.EngineConfig;
import io.orbite.engine.TransferEngine;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.StreamSupport;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A real Pekko Cluster in this JVM: ActorSystems of one name on 127.0.0.1, each on its own Artery
 * TCP port, joined by the first as seed node, with gossip and failure detection tuned fast. What a
 * test starts here is stopped by {@link #close()}.
 */
final class ClusterNodes implements AutoCloseable {
  static final String SYSTEM = "orbite-directory-test";

  private final List<ActorSystem<Void>> systems = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private int seedPort;

  /** Waits for {@code condition} until {@code timeout}: the one wait tests use. */
  static boolean await(Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return condition.getAsBoolean();
      }
      LockSupport.parkNanos(5_000_000);
    }
    return true;
  }

  static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException("no free port: " + e, e);
    }
  }

  static Config config(int port, int seedPort) {
    return ConfigFactory.parseString(
            """
            pekko.actor.provider = cluster
            pekko.remote.artery.transport = tcp
            pekko.remote.artery.canonical.hostname = "127.0.0.1"
            pekko.remote.artery.canonical.port = %d
            pekko.cluster.seed-nodes = ["pekko://%s@127.0.0.1:%d"]
            pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
            pekko.cluster.gossip-interval = 200ms
            pekko.cluster.leader-actions-interval = 200ms
            pekko.cluster.unreachable-nodes-reaper-interval = 250ms
            pekko.cluster.failure-detector.heartbeat-interval = 200ms
            pekko.cluster.failure-detector.acceptable-heartbeat-pause = 3s
            pekko.cluster.distributed-data.gossip-interval = 200ms
            pekko.cluster.distributed-data.notify-subscribers-interval = 100ms
            pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
            pekko.fail-mixed-versions = off
            pekko.loglevel = WARNING
            pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
            pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
            """
                .formatted(port, SYSTEM, seedPort))
        .withFallback(ConfigFactory.load());
  }

  /** Starts {@code n} nodes and waits until each sees all of them up. */
  ClusterNodes start(int n) {
    return start(n, ConfigFactory.empty());
  }

  /** Starts {@code n} nodes with {@code extra} settings and waits until all are up. */
  ClusterNodes start(int n, Config extra) {
    seedPort = freePort();
    for (int i = 0; i < n; i++) {
      add(extra);
    }
    awaitUp(systems.size());
    return this;
  }

  /** One more node, joining the same seed; not waited for. */
  ActorSystem<Void> add() {
    return add(ConfigFactory.empty());
  }

  /** One more node with {@code extra} settings over the test's, joining the same seed. */
  ActorSystem<Void> add(Config extra) {
    int port = systems.isEmpty() ? seedPort : freePort();
    ActorSystem<Void> system =
        ActorSystem.create(Behaviors.empty(), SYSTEM, extra.withFallback(config(port, seedPort)));
    systems.add(system);
    return system;
  }

  ActorSystem<Void> node(int i) {
    return systems.get(i);
  }

  /** Waits until every running node sees {@code count} members up. */
  void awaitUp(int count) {
    assertTrue(
        await(
            Duration.ofSeconds(30),
            () ->
                systems.stream()
                    .filter(s -> !s.getWhenTerminated().toCompletableFuture().isDone())
                    .allMatch(s -> up(s) == count)),
        "the cluster formed with " + count + " members up");
  }

  static long up(ActorSystem<?> system) {
    return StreamSupport.stream(Cluster.get(system).state().getMembers().spliterator(), false)
        .filter(m -> m.status() == MemberStatus.up())
        .count();
  }

  /** An engine named {@code name} in {@code system}, with a fast directory refresh. */
  TransferEngine engine(ActorSystem<?> system, String name) {
    return engine(
        system,
        EngineConfig.defaults()
            .withName(name)
            .withDirectory(DirectoryConfig.defaults().withRefreshMillis(100)));
  }

  TransferEngine engine(ActorSystem<?> system, EngineConfig config) {
    TransferEngine engine = TransferEngine.spawn(system, config);
    closeables.add(engine);
    return engine;
  }

  /** Joins {@code engine} to the directory; closed (before the engines) by {@link #close()}. */
  PeerDirectory join(TransferEngine engine) {
    PeerDirectory directory = PeerDirectory.join(engine);
    closeables.add(directory);
    return directory;
  }

  /** Something else the test opened, closed in reverse order. */
  <T extends AutoCloseable> T closeLater(T closeable) {
    closeables.add(closeable);
    return closeable;
  }

  @Override
  public void close() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      try {
        closeables.get(i).close();
      } catch (Exception e) {
        // Already closed by the test, or its system terminated: nothing left to release.
      }
    }
    for (ActorSystem<Void> system : systems) {
      system.terminate();
    }
    for (ActorSystem<Void> system : systems) {
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }
}
