package io.orbite.qualification.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code ./orbite demo --serve SECONDS}: the argument is checked, and serving enables both
 * endpoints on loopback.
 */
class DemoArgsTest {
  @Test
  void serveTakesSecondsInRange() {
    assertEquals(-1, Demo.serveSeconds(List.of()));
    assertEquals(30, Demo.serveSeconds(List.of("--serve", "30")));
    assertEquals(Demo.MAX_SERVE_SECONDS, Demo.serveSeconds(List.of("--serve", "86400")));
  }

  @Test
  void badServeArgumentsAreNamed() {
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> Demo.serveSeconds(List.of("--serve")))
            .getMessage()
            .contains("needs a number of seconds"));
    for (String bad : List.of("0", "-5", "abc", "86401")) {
      String m =
          assertThrows(
                  IllegalArgumentException.class, () -> Demo.serveSeconds(List.of("--serve", bad)))
              .getMessage();
      assertEquals("--serve " + bad + ": must be 1..86400 seconds", m);
    }
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> Demo.serveSeconds(List.of("--bogus")))
            .getMessage()
            .contains("unknown argument --bogus"));
  }

  @Test
  void servingEnablesBothEndpointsOnLoopbackOnly() {
    EngineConfig served = Demo.observed(EngineConfig.defaults(), true);
    assertTrue(
        served.observability().metrics().enabled() && served.observability().dashboard().enabled());
    assertEquals("127.0.0.1", served.observability().metrics().host());
    assertEquals("127.0.0.1", served.observability().dashboard().host());
    assertFalse(Demo.observed(EngineConfig.defaults(), false).observability().anyEnabled());
  }
}
