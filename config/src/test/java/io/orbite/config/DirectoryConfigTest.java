package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertJsonRejected;
import static io.orbite.config.ConfigAssertions.assertRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code directory} section's keys that are not numbers: the published region names and the two
 * consistency levels. Its numeric keys one by one are in {@link NumericKey}.
 */
class DirectoryConfigTest {

  @Test
  void defaultsPublishEveryNamedRegionAtMajority() {
    DirectoryConfig d = EngineConfig.defaults().directory();
    assertEquals(DirectoryConfig.defaults(), d);
    assertEquals(List.of("*"), d.publish());
    assertEquals("majority", d.readConsistency());
    assertEquals("majority", d.writeConsistency());
    assertEquals(5000, d.consistencyTimeoutMillis());
    assertEquals(1000, d.refreshMillis());
    assertEquals(
        DirectoryConfig.defaults(), EngineConfig.fromJson("{\"directory\":{}}").directory());
    assertTrue(d.publishes("kv-pool"));
  }

  @Test
  void publishListsNamesOrNone() {
    DirectoryConfig some =
        EngineConfig.fromJson("{\"directory\":{\"publish\":[\"kv-pool\",\"a/b:c.d_e-f\"]}}")
            .directory();
    assertEquals(List.of("kv-pool", "a/b:c.d_e-f"), some.publish());
    assertTrue(some.publishes("kv-pool"));
    assertFalse(some.publishes("other"));
    DirectoryConfig none = EngineConfig.fromJson("{\"directory\":{\"publish\":[]}}").directory();
    assertEquals(List.of(), none.publish());
    assertFalse(none.publishes("kv-pool"));
    assertEquals(List.of("x".repeat(128)), none.withPublish(List.of("x".repeat(128))).publish());
  }

  @Test
  void publishIsCopied() {
    List<String> names = new ArrayList<>(List.of("a"));
    DirectoryConfig d = DirectoryConfig.defaults().withPublish(names);
    names.add("b");
    assertEquals(List.of("a"), d.publish());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "[\"*\",\"a\"]      | directory.publish[0] | directory.publish[0]: \"*\" (every named region) must be the only element, got it beside 1 other(s)",
        "[\"a\",\"*\"]      | directory.publish[1] | directory.publish[1]: \"*\" (every named region) must be the only element",
        "[\"a\",\"a\"]      | directory.publish[1] | directory.publish[1]: must differ from every other region name, got \"a\" again (first at directory.publish[0])",
        "[\"\"]             | directory.publish[0] | directory.publish[0]: must be \"*\" or a region name of 1..128 characters of [A-Za-z0-9._:/-], got \"\"",
        "[\"kv pool\"]      | directory.publish[0] | directory.publish[0]: must be \"*\" or a region name of 1..128 characters of [A-Za-z0-9._:/-], got \"kv pool\"",
        "[\"kv-pool\",7]    | directory.publish[1] | directory.publish[1]: expected a string, got integer 7",
        "\"kv-pool\"        | directory.publish    | directory.publish: expected an array of strings, got string \"kv-pool\"",
        "null               | directory.publish    | directory.publish: expected an array of strings, got null",
      })
  void aBadPublishListIsRejectedNamingTheElement(String value, String path, String message) {
    assertJsonRejected("{\"directory\":{\"publish\":" + value + "}}", path, message);
  }

  @Test
  void aTooLongRegionNameAndATooLongListAreRejected() {
    assertRejected(
        "directory.publish[0]",
        "directory.publish[0]: must be \"*\" or a region name of 1..128 characters",
        () -> DirectoryConfig.defaults().withPublish(List.of("x".repeat(129))));
    String[] many = new String[257];
    for (int i = 0; i < many.length; i++) {
      many[i] = "r" + i;
    }
    assertRejected(
        "directory.publish",
        "directory.publish: must hold at most 256 region names, got 257",
        () -> DirectoryConfig.defaults().withPublish(Arrays.asList(many)));
    assertRejected(
        "directory.publish",
        "directory.publish: must not be null",
        () -> DirectoryConfig.defaults().withPublish(null));
    assertRejected(
        "directory.publish[1]",
        "directory.publish[1]: must not be null",
        () -> DirectoryConfig.defaults().withPublish(Arrays.asList("a", null)));
  }

  @Test
  void eachConsistencyIsAccepted() {
    for (String level : DirectoryConfig.CONSISTENCIES) {
      DirectoryConfig d =
          EngineConfig.fromJson(
                  "{\"directory\":{\"readConsistency\":\""
                      + level
                      + "\",\"writeConsistency\":\""
                      + level
                      + "\"}}")
              .directory();
      assertEquals(level, d.readConsistency());
      assertEquals(level, d.writeConsistency());
      assertEquals(level, DirectoryConfig.defaults().withReadConsistency(level).readConsistency());
      assertEquals(
          level, DirectoryConfig.defaults().withWriteConsistency(level).writeConsistency());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "Majority", "quorum", "one", " local"})
  void anUnknownConsistencyIsRejectedListingTheAcceptedOnes(String level) {
    for (String key : List.of("readConsistency", "writeConsistency")) {
      String path = "directory." + key;
      String message =
          path + ": must be one of \"local\", \"majority\", \"all\", got " + Checks.quote(level);
      assertEquals(
          message,
          assertJsonRejected(
                  "{\"directory\":{\"" + key + "\":" + Checks.quote(level) + "}}",
                  path,
                  path + ": ")
              .getMessage());
    }
    assertRejected(
        "directory.readConsistency",
        "directory.readConsistency: must be one of",
        () -> DirectoryConfig.defaults().withReadConsistency(level));
    assertRejected(
        "directory.writeConsistency",
        "directory.writeConsistency: must be one of",
        () -> DirectoryConfig.defaults().withWriteConsistency(level));
  }

  @Test
  void wrongTypesAndUnknownKeysAreRejected() {
    assertJsonRejected(
        "{\"directory\":{\"readConsistency\":1}}",
        "directory.readConsistency",
        "directory.readConsistency: expected a string, got integer 1");
    assertJsonRejected(
        "{\"directory\":[]}", "directory", "directory: expected an object, got array");
    assertJsonRejected(
        "{\"directory\":{\"key\":\"x\"}}",
        "directory.key",
        "directory.key: unknown key (known: publish, readConsistency, writeConsistency,"
            + " consistencyTimeoutMillis, refreshMillis)");
    assertRejected(
        "directory",
        "directory: must not be null",
        () -> EngineConfig.defaults().withDirectory(null));
  }
}
