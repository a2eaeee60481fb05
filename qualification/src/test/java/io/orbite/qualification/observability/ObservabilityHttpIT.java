package io.orbite.qualification.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.config.DashboardConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.MetricsConfig;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Both endpoints off by default; when on, bound to loopback; malformed and oversized requests get a
 * 4xx and the engine keeps serving (scrapes, JSON API and transfers after them); the JSON API's
 * documents have the documented fields; a port in use fails the start naming it.
 */
class ObservabilityHttpIT {
  private static TransferEngine engine;
  private static String metrics;
  private static String dashboard;

  @BeforeAll
  static void start() {
    EngineConfig config = EngineConfig.defaults().withName("http-it");
    engine =
        TransferEngine.start(
            config.withObservability(
                config
                    .observability()
                    .withMetrics(MetricsConfig.defaults().withEnabled(true))
                    .withDashboard(DashboardConfig.defaults().withEnabled(true))
                    .withTickMillis(100)));
    metrics = engine.observabilityUrls().get("metrics");
    dashboard = engine.observabilityUrls().get("dashboard");
  }

  @AfterAll
  static void stop() {
    engine.close(Duration.ofSeconds(20));
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  private static List<byte[]> badRequests(String path) {
    String big = "a".repeat(70_000);
    return List.of(
        ascii("GET " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"),
        ascii("GET " + path + " HTTP/9.9\r\nHost: x\r\n\r\n"),
        ascii("GET " + path + "?" + big + " HTTP/1.1\r\nHost: x\r\n\r\n"),
        ascii("GET " + path + " HTTP/1.1\r\nHost: x\r\nX-Big: " + big + "\r\n\r\n"),
        ascii("GET " + path + " HTTP/1.1\r\nHost: x\r\n" + "X-H: 1\r\n".repeat(200) + "\r\n"),
        ascii("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + big),
        ascii("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"),
        ascii("GE\u0001T " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"),
        ascii("GET " + path + " HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n"));
  }

  @Test
  void defaultsServeNothing() {
    TransferEngine plain =
        TransferEngine.start(EngineConfig.defaults().withName("no-observability"));
    try {
      assertEquals(java.util.Map.of(), plain.observabilityUrls());
    } finally {
      plain.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void urlsAreOnLoopback() {
    assertTrue(metrics.startsWith("http://127.0.0.1:") && metrics.endsWith("/metrics"), metrics);
    assertTrue(dashboard.startsWith("http://127.0.0.1:") && dashboard.endsWith("/"), dashboard);
  }

  @Test
  void malformedAndOversizedRequestsGet4xxAndServingGoesOn() {
    for (String base : List.of(metrics, dashboard)) {
      String path = base.endsWith("/metrics") ? "/metrics" : "/api/snapshot";
      for (byte[] request : badRequests(path)) {
        int status = Http.raw(base, request);
        String first =
            new String(request, 0, Math.min(60, request.length), StandardCharsets.ISO_8859_1);
        assertTrue(
            status >= 400 && status < 500,
            base + ": " + first.replace("\r\n", "\\r\\n") + " -> " + status);
        assertEquals(
            200,
            Http.get(base.endsWith("/metrics") ? metrics : dashboard + "api/snapshot").statusCode(),
            "still serving after " + first);
      }
    }
    assertEquals(
        405,
        Http.raw(dashboard, ascii("DELETE /api/snapshot HTTP/1.1\r\nHost: x\r\n\r\n")),
        "read-only: no method but GET");
    // The scrape is what the reporter published at its last tick: an engine started less than a
    // tick ago may not have one yet (Kamon's tick is the first metrics engine's in this JVM).
    assertTrue(
        io.orbite.qualification.Await.until(
            Duration.ofSeconds(5), () -> Http.get(metrics).body().contains("orbite_owners")),
        "scrapes still work");
  }

  @Test
  void jsonApiHasTheDocumentedFields() throws Exception {
    ObjectMapper json = new ObjectMapper();
    JsonNode snap = json.readTree(Http.get(dashboard + "api/snapshot").body());
    for (String field :
        List.of(
            "engine",
            "atMillis",
            "version",
            "owners",
            "retired",
            "peers",
            "quarantined",
            "errors",
            "throughput")) {
      assertTrue(snap.has(field), "snapshot has " + field + ": " + snap);
    }
    assertEquals("http-it", snap.get("engine").get("name").asText());
    assertEquals(
        Long.toHexString(engine.localSegment().epoch()), snap.get("engine").get("epoch").asText());
    JsonNode build = snap.get("engine").get("build");
    assertEquals(
        io.orbite.engine.BuildInfo.current().shortCommit(),
        build.get("commit").asText(),
        snap.toString());
    assertEquals(
        io.orbite.engine.BuildInfo.current().version(),
        build.get("version").asText(),
        snap.toString());
    JsonNode guardian = null;
    for (JsonNode o : snap.get("owners")) {
      if (o.get("path").asText().equals("engine")) {
        guardian = o;
      }
      for (String field :
          List.of(
              "path",
              "parent",
              "name",
              "kind",
              "state",
              "stateClass",
              "charges",
              "detail",
              "sinceMillis")) {
        assertTrue(o.has(field), "owner has " + field + ": " + o);
      }
    }
    assertTrue(
        guardian != null && guardian.get("kind").asText().equals("EngineGuardian"),
        snap.toString());
    for (String api : List.of("engine", "owners", "peers", "throughput", "errors", "quarantined")) {
      var r = Http.get(dashboard + "api/" + api);
      assertEquals(200, r.statusCode(), api);
      assertTrue(
          r.headers().firstValue("content-type").orElse("").startsWith("application/json"), api);
      json.readTree(r.body());
    }
    var page = Http.get(dashboard);
    assertTrue(
        page.body().contains("api/events") && page.body().contains("Supervision tree"), "the page");
  }

  @Test
  void aPortInUseFailsTheStartNamingIt() {
    int port = Integer.parseInt(metrics.replaceAll(".*:(\\d+)/metrics", "$1"));
    EngineConfig config = EngineConfig.defaults().withName("port-clash");
    TransferException e =
        assertThrows(
            TransferException.class,
            () ->
                TransferEngine.start(
                    config.withObservability(
                        config
                            .observability()
                            .withMetrics(
                                MetricsConfig.defaults().withEnabled(true).withPort(port)))));
    assertTrue(
        e.getMessage().contains("observability.metrics") && e.getMessage().contains(":" + port),
        e.getMessage());
    assertEquals(200, Http.get(metrics).statusCode(), "the first engine keeps serving");
  }
}
