package io.orbite.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.spi.TransportProvider;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ServiceLoader;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * engine-actors' own test class path has no transport module, as a newcomer's would with only
 * orbite-engine-actors: start and spawn must fail at once, naming the artifact to add, and leave
 * nothing bound or running.
 */
class StartWithoutTransportTest {
  private static final Duration FAST = Duration.ofSeconds(1);

  @BeforeAll
  static void noTransportIsOnTheClassPath() {
    assertFalse(
        ServiceLoader.load(TransportProvider.class).iterator().hasNext(),
        "this test needs a class path without orbite-transport-actors");
  }

  @Test
  void spawnFailsWithinASecondNamingTheTransportArtifact() throws Exception {
    ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "no-transport-host");
    try {
      int port = freePort();
      EngineConfig config =
          EngineConfig.fromJson(
              "{\"name\":\"no-transport\",\"listen\":{\"host\":\"127.0.0.1\",\"port\":"
                  + port
                  + "}}");
      long begun = System.nanoTime();
      TransferException e =
          assertThrows(TransferException.class, () -> TransferEngine.spawn(host, config));
      Duration took = Duration.ofNanos(System.nanoTime() - begun);
      assertTrue(took.compareTo(FAST) < 0, "spawn failed only after " + took);
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e.getMessage());
      assertTrue(e.getMessage().contains("io.orbite:orbite-transport-actors"), e.getMessage());
      assertTrue(e.getMessage().contains("no-transport"), "names the engine: " + e.getMessage());
      assertFalse(host.whenTerminated().isCompleted(), "the host system keeps running");
      assertPortFree(port);
    } finally {
      host.terminate();
    }
  }

  @Test
  void startFailsWithinASecondNamingTheTransportArtifact() throws Exception {
    int port = freePort();
    EngineConfig config =
        EngineConfig.fromJson(
            "{\"name\":\"no-transport-own\",\"listen\":{\"host\":\"127.0.0.1\",\"port\":"
                + port
                + "}}");
    long begun = System.nanoTime();
    TransferException e = assertThrows(TransferException.class, () -> TransferEngine.start(config));
    Duration took = Duration.ofNanos(System.nanoTime() - begun);
    assertTrue(took.compareTo(FAST) < 0, "start failed only after " + took);
    assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e.getMessage());
    assertTrue(
        e.getMessage().startsWith("UNAVAILABLE: start no-transport-own: no TCP transport"),
        e.getMessage());
    assertTrue(e.getMessage().contains("io.orbite:orbite-transport-actors"), e.getMessage());
    assertPortFree(port);
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Nothing was left listening: the port can be bound again. */
  private static void assertPortFree(int port) throws Exception {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", port));
    }
  }
}
