package io.orbite.observability;

import io.orbite.engine.OwnerView;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.marshalling.sse.EventStreamMarshalling;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpCharsets;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.sse.ServerSentEvent;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.javadsl.Source;

/** The routes of the metrics endpoint and of the dashboard. Read-only: every route is a GET. */
final class Routes extends AllDirectives {
  /** Most live streams ({@code /api/events}) served at once; one more is answered 503. */
  static final int MAX_EVENT_STREAMS = 8;

  private final DashboardModel model;
  private final long tickMillis;
  private final AtomicInteger streams = new AtomicInteger();
  private final String page;

  Routes(DashboardModel model, long tickMillis) {
    this.model = model;
    this.tickMillis = tickMillis;
    this.page = resource("/io/orbite/observability/dashboard.html");
  }

  private static String resource(String name) {
    try (InputStream in = Routes.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + name + ": " + e.getMessage(), e);
    }
  }

  /** Where the page's script takes the snapshot it draws before anything else. */
  static final String INITIAL = "/*initial snapshot*/null";

  /**
   * The page with the snapshot of now written into it, so that it is drawn before the page has
   * loaded: a screenshot taken at load (headless Chromium's {@code --screenshot}, whose {@code
   * --timeout} stop cancels what is still being fetched) shows the engine, not an empty page. In
   * the JSON every {@code <} is escaped, so no string in it (a detail, a path) can end the script.
   */
  private String page() {
    return page.replace(INITIAL, DashboardModel.json(model.snapshot()).replace("<", "\\u003c"));
  }

  /** {@code GET /metrics}: the Prometheus text of the last tick. */
  Route metrics() {
    return path(
        "metrics",
        () ->
            get(
                () ->
                    complete(
                        HttpResponse.create()
                            .withEntity(
                                HttpEntities.create(
                                    MediaTypes.TEXT_PLAIN.toContentType(HttpCharsets.UTF_8),
                                    KamonRuntime.scrape())))));
  }

  private Route json(Object document) {
    return complete(
        HttpResponse.create()
            .withEntity(
                HttpEntities.create(ContentTypes.APPLICATION_JSON, DashboardModel.json(document))));
  }

  /** The page, its JSON API and its live stream. */
  Route dashboard() {
    return get(
        () ->
            concat(
                pathSingleSlash(
                    () ->
                        extractRequest(
                            r ->
                                complete(
                                    HttpResponse.create()
                                        .withEntity(
                                            HttpEntities.create(
                                                ContentTypes.TEXT_HTML_UTF8, page()))))),
                pathPrefix(
                    "api",
                    () ->
                        concat(
                            path("snapshot", () -> extractRequest(r -> json(model.snapshot()))),
                            path("engine", () -> extractRequest(r -> json(model.engineInfo()))),
                            path(
                                "owners",
                                () ->
                                    extractRequest(
                                        r -> {
                                          OwnerView v = model.ownerSnapshot();
                                          return json(
                                              java.util.Map.of(
                                                  "owners",
                                                  model.owners(v),
                                                  "retired",
                                                  model.retired(v)));
                                        })),
                            path(
                                "peers",
                                () ->
                                    extractRequest(r -> json(model.peers(model.ownerSnapshot())))),
                            path("throughput", () -> extractRequest(r -> json(model.throughput()))),
                            path("errors", () -> extractRequest(r -> json(model.errors()))),
                            path("source", () -> extractRequest(r -> json(model.source()))),
                            path("latency", () -> extractRequest(r -> json(model.latency()))),
                            path("panels", () -> extractRequest(r -> json(model.panels()))),
                            path(
                                "quarantined",
                                () -> extractRequest(r -> json(model.quarantined()))),
                            path("events", () -> extractRequest(r -> events()))))));
  }

  /** Server-sent events: a {@code snapshot} event at once and every tick. */
  private Route events() {
    if (streams.incrementAndGet() > MAX_EVENT_STREAMS) {
      streams.decrementAndGet();
      return complete(
          StatusCodes.SERVICE_UNAVAILABLE, "too many live streams (" + MAX_EVENT_STREAMS + ")");
    }
    Source<ServerSentEvent, NotUsed> source =
        Source.tick(Duration.ZERO, Duration.ofMillis(tickMillis), "tick")
            .map(t -> ServerSentEvent.create(DashboardModel.json(model.snapshot()), "snapshot"))
            .watchTermination(
                (mat, done) -> {
                  done.whenComplete((d, f) -> streams.decrementAndGet());
                  return NotUsed.getInstance();
                });
    return completeOK(source, EventStreamMarshalling.toEventStream());
  }
}
