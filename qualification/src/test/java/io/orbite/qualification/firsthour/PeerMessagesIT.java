package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What {@code openSegment} says when the endpoint is wrong, as a newcomer gets it wrong: a name
 * that does not resolve, a port where a web server answers (the engine's own dashboard, a real
 * Pekko HTTP server), a port where nothing listens. Each message has one kind prefix and says what
 * is wrong.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PeerMessagesIT {
  private static final Duration OPEN = Duration.ofSeconds(15);
  private TransferEngine engine;

  @BeforeAll
  void start() {
    engine =
        TransferEngine.start(
            EngineConfig.fromJson(
                """
        {"name":"peer-messages","observability":{"dashboard":{"enabled":true,"host":"127.0.0.1","port":0}}}"""));
  }

  @AfterAll
  void close() {
    engine.close(Duration.ofSeconds(20));
  }

  @Test
  void anUnknownHostIsCalledOne() {
    TransferException e =
        assertThrows(
            TransferException.class, () -> engine.openSegment("no-such-host.invalid:7000", OPEN));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e.getMessage());
    assertEquals(
        "UNAVAILABLE: describe no-such-host.invalid:7000: unknown host no-such-host.invalid "
            + "(the name does not resolve)",
        e.getMessage());
  }

  @Test
  void anHttpServerIsNamed() {
    URI dashboard = URI.create(engine.observabilityUrls().get("dashboard"));
    String endpoint = dashboard.getHost() + ":" + dashboard.getPort();
    TransferException e =
        assertThrows(TransferException.class, () -> engine.openSegment(endpoint, OPEN));
    assertEquals(ErrorKind.PROTOCOL, e.kind(), e.getMessage());
    assertTrue(
        e.getMessage()
            .startsWith(
                "PROTOCOL: describe "
                    + endpoint
                    + ": the peer speaks HTTP, not the "
                    + "OrbiTE protocol"),
        e.getMessage());
    assertTrue(e.getMessage().contains("magic 0x48545450"), e.getMessage());
    assertOnePrefix(e);
  }

  @Test
  void aRefusedConnectionHasOnePrefix() throws Exception {
    int port;
    try (var s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    int closed = port;
    TransferException e =
        assertThrows(
            TransferException.class, () -> engine.openSegment("127.0.0.1:" + closed, OPEN));
    assertEquals(
        "UNAVAILABLE: describe 127.0.0.1:" + closed + ": Connection refused", e.getMessage());
  }

  @Test
  void aMalformedEndpointHasOnePrefix() {
    TransferException e =
        assertThrows(TransferException.class, () -> engine.openSegment("127.0.0.1", OPEN));
    assertEquals("INVALID_ARGUMENT: endpoint '127.0.0.1': expected host:port", e.getMessage());
  }

  private static void assertOnePrefix(TransferException e) {
    String rest = e.getMessage().substring(e.kind().name().length() + 2);
    assertFalse(
        Arrays.stream(ErrorKind.values()).anyMatch(k -> rest.startsWith(k.name() + ":")),
        e.getMessage());
  }
}
