/**
 * Kamon metrics, the Prometheus endpoint and the supervisor dashboard, found by the engine through
 * {@link java.util.ServiceLoader}. Reads the engine through its API ({@code ownerView()}, {@code
 * counters()}) and the SPI's provider interface only.
 *
 * <p>Two libraries cannot be required as modules, so they stay on the class path, and the build
 * lets this module read it ({@code --add-reads io.orbite.observability=ALL-UNNAMED} in this
 * module's pom): Kamon's jars ({@code kamon-core_2.13}, {@code kamon-prometheus_2.13}) carry no
 * module name, and the one Java derives from their file names ({@code kamon.core.2.13}) is not a
 * legal module name; Pekko HTTP's two jars ({@code pekko.http}, {@code pekko.http.core}) both hold
 * the packages {@code org.apache.pekko.http.*.settings}, which no module may read from two modules.
 */
module io.orbite.observability {
  requires io.orbite.engine;
  requires pekko.actor;
  requires scala.library;
  requires typesafe.config;
  requires com.fasterxml.jackson.databind;
  requires org.slf4j;

  provides io.orbite.engine.spi.ObservabilityProvider with
      io.orbite.observability.ObservabilityService;
}
