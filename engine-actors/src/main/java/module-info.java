/**
 * The engine: its public API ({@code io.orbite.engine}, {@code io.orbite.engine.streams}), exported
 * to everyone, and its actors, which no other module reaches. The transport SPI ({@code
 * io.orbite.engine.spi}, with the wire codec, the slicing logic and the owner board it shares with
 * transports) is exported only to the modules that implement it.
 */
module io.orbite.engine {
  requires transitive io.orbite.config;
  requires transitive pekko.actor.typed;
  requires transitive pekko.stream;
  requires transitive pekko.actor;
  requires scala.library;
  requires typesafe.config;
  requires org.slf4j;

  exports io.orbite.engine;
  exports io.orbite.engine.streams;
  exports io.orbite.engine.spi to
      io.orbite.transport,
      io.orbite.observability;
  exports io.orbite.engine.wire to
      io.orbite.transport;
  exports io.orbite.engine.slicing to
      io.orbite.transport;
  exports io.orbite.engine.view to
      io.orbite.transport;
  exports io.orbite.engine.rail to
      io.orbite.transport;
  exports io.orbite.engine.priority to
      io.orbite.transport;
  exports io.orbite.engine.security to
      io.orbite.transport,
      io.orbite.observability,
      io.orbite.qualification;
  exports io.orbite.engine.fault to
      io.orbite.transport,
      io.orbite.qualification;

  uses io.orbite.engine.spi.TransportProvider;
  uses io.orbite.engine.spi.SharedMemoryProvider;
  uses io.orbite.engine.spi.ObservabilityProvider;
}
