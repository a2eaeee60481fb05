package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The {@code file} section's one string key: only the three engine names are accepted. */
class FileConfigTest {

  @Test
  void engineDefaultsToAutoAndAcceptsEachName() {
    assertEquals("auto", EngineConfig.defaults().file().engine());
    for (String engine : FileConfig.ENGINES) {
      assertEquals(
          engine,
          EngineConfig.fromJson("{\"file\":{\"engine\":\"" + engine + "\"}}").file().engine());
    }
  }

  @Test
  void anUnknownEngineIsRejectedNamingTheKey() {
    ConfigException e =
        assertThrows(
            ConfigException.class, () -> EngineConfig.fromJson("{\"file\":{\"engine\":\"aio\"}}"));
    assertEquals(
        "file.engine: must be one of \"auto\", \"io_uring\", \"channel\", got \"aio\"",
        e.getMessage());
    ConfigException wrongType =
        assertThrows(
            ConfigException.class, () -> EngineConfig.fromJson("{\"file\":{\"engine\":1}}"));
    assertEquals("file.engine: expected a string, got integer 1", wrongType.getMessage());
  }
}
