package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.function.Executable;

/** Assertions on {@link ConfigException}s: the exact path and the start of the message. */
final class ConfigAssertions {
  private ConfigAssertions() {}

  static void assertStartsWith(String expectedPrefix, String actual) {
    if (actual == null || !actual.startsWith(expectedPrefix)) {
      fail("expected a message starting with <" + expectedPrefix + "> but was <" + actual + ">");
    }
  }

  /**
   * Runs {@code action}, expects a ConfigException at {@code path} whose message starts with {@code
   * prefix}.
   */
  static ConfigException assertRejected(String path, String prefix, Executable action) {
    ConfigException e = assertThrows(ConfigException.class, action);
    assertEquals(path, e.path(), () -> "path of: " + e.getMessage());
    assertStartsWith(prefix, e.getMessage());
    return e;
  }

  /**
   * Expects {@link EngineConfig#fromJson(String)} to reject {@code json} at {@code path} with
   * {@code prefix}.
   */
  static ConfigException assertJsonRejected(String json, String path, String prefix) {
    return assertRejected(path, prefix, () -> EngineConfig.fromJson(json));
  }
}
