package io.orbite.observability;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.javadsl.settings.ServerSettings;

/**
 * One bound HTTP endpoint with bounded request parsing: requests with a URI, headers or body over
 * the limits, or that do not parse, are answered 4xx by Pekko HTTP before any route runs; at most
 * {@link #MAX_CONNECTIONS} connections are served at once.
 */
final class HttpEndpoint implements AutoCloseable {
  static final int MAX_CONNECTIONS = 32;
  static final int MAX_URI_LENGTH = 2048;
  static final int MAX_HEADER_COUNT = 32;
  static final int MAX_HEADER_VALUE_LENGTH = 4096;
  static final int MAX_CONTENT_LENGTH = 16384;

  private final ServerBinding binding;
  private final String url;

  private HttpEndpoint(ServerBinding binding, String url) {
    this.binding = binding;
    this.url = url;
  }

  static Config limits(ActorSystem<?> system) {
    return ConfigFactory.parseString(
            String.join(
                "\n",
                "pekko.http.server.max-connections = " + MAX_CONNECTIONS,
                "pekko.http.server.idle-timeout = 60 s",
                "pekko.http.server.request-timeout = 10 s",
                "pekko.http.server.remote-address-attribute = off",
                "pekko.http.server.server-header = orbite",
                "pekko.http.server.parsing.max-uri-length = " + MAX_URI_LENGTH,
                "pekko.http.server.parsing.max-method-length = 16",
                "pekko.http.server.parsing.max-header-name-length = 64",
                "pekko.http.server.parsing.max-header-count = " + MAX_HEADER_COUNT,
                "pekko.http.server.parsing.max-header-value-length = " + MAX_HEADER_VALUE_LENGTH,
                "pekko.http.server.parsing.max-content-length = " + MAX_CONTENT_LENGTH,
                "pekko.http.server.parsing.max-chunk-size = " + MAX_CONTENT_LENGTH,
                "pekko.http.server.parsing.error-handler = \""
                    + ClientErrorParsingHandler.class.getName()
                    + "\""))
        .withFallback(system.settings().config());
  }

  /** Binds {@code route} at {@code host:port}; fails naming the address when it cannot. */
  static HttpEndpoint bind(
      ActorSystem<?> system, String what, String host, int port, Route route, String path) {
    try {
      ServerBinding binding =
          Http.get(system)
              .newServerAt(host, port)
              .withSettings(ServerSettings.create(limits(system)))
              .bind(route)
              .toCompletableFuture()
              .get(10, TimeUnit.SECONDS);
      var local = binding.localAddress();
      String h = local.getAddress().getHostAddress();
      if (h.contains(":")) {
        h = "[" + h + "]";
      }
      return new HttpEndpoint(binding, "http://" + h + ":" + local.getPort() + path);
    } catch (Exception e) {
      Throwable cause =
          e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
              ? e.getCause()
              : e;
      throw new IllegalStateException(
          what + " cannot bind " + host + ":" + port + ": " + cause.getMessage(), cause);
    }
  }

  String url() {
    return url;
  }

  @Override
  public void close() {
    try {
      binding.terminate(Duration.ofSeconds(2)).toCompletableFuture().get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      // The engine is closing; an endpoint that does not unbind in time is left to the actor
      // system.
    }
  }
}
