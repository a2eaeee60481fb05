/**
 * The engine's configuration: {@code EngineConfig} and its sections, built in code or loaded
 * strictly from JSON. Plain values, with no dependency on the engine.
 */
module io.orbite.config {
  requires com.fasterxml.jackson.databind;

  exports io.orbite.config;
}
