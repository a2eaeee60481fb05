package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertJsonRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every class of rejection by {@link EngineConfig#fromJson(String)}, with the exact path and
 * message start.
 */
class EngineConfigStrictnessTest {
  private static final int LIMIT = 1048576;

  // ---- out-of-range values
  // -------------------------------------------------------------------------------

  static Stream<Arguments> outOfRangeValues() {
    return NumericKey.ALL.stream()
        .flatMap(
            k ->
                Stream.of(
                    Arguments.of(k, Long.toString(k.min() - 1)),
                    Arguments.of(k, Long.toString(k.max() + 1)),
                    Arguments.of(k, "99999999999999999999"),
                    Arguments.of(k, "-99999999999999999999"),
                    Arguments.of(k, "9223372036854775808"),
                    Arguments.of(k, "-9223372036854775809")));
  }

  @ParameterizedTest(name = "{0} = {1}")
  @MethodSource("outOfRangeValues")
  void outOfRangeValueIsRejectedNamingItsPathAndRange(NumericKey key, String value) {
    ConfigException e = assertJsonRejected(key.document(value), key.path(), key.path() + ": ");
    assertEquals(
        key.path() + ": must be " + key.min() + ".." + key.max() + ", got " + value,
        e.getMessage());
  }

  @Test
  void tcpLanesOfZeroGivesTheDocumentedMessage() {
    ConfigException e = assertJsonRejected("{\"tcp\":{\"lanes\":0}}", "tcp.lanes", "tcp.lanes: ");
    assertEquals("tcp.lanes: must be 1..64, got 0", e.getMessage());
    assertEquals("must be 1..64, got 0", e.detail());
  }

  @Test
  void baseBlockBytesInRangeButNotAPowerOfTwoIsRejected() {
    ConfigException e =
        assertJsonRejected(
            "{\"slicing\":{\"baseBlockBytes\":100000}}",
            "slicing.baseBlockBytes",
            "slicing.baseBlockBytes: ");
    assertEquals("slicing.baseBlockBytes: must be a power of two, got 100000", e.getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"name\":\"\"}                    | name        | name: must be 1..64 characters of [A-Za-z0-9._-], got \"\"",
        "{\"name\":\"white space\"}         | name        | name: must be 1..64 characters of [A-Za-z0-9._-], got \"white space\"",
        "{\"name\":\"tab\\there\"}          | name        | name: must be 1..64 characters of [A-Za-z0-9._-], got \"tab\\there\"",
        "{\"listen\":{\"host\":\"\"}}       | listen.host | listen.host: must be 1..253 characters without whitespace, got \"\"",
        "{\"listen\":{\"host\":\"a b\"}}    | listen.host | listen.host: must be 1..253 characters without whitespace, got \"a b\"",
      })
  void invalidStringValueIsRejectedNamingItsPath(String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  @Test
  void overlongNameIsRejected() {
    assertJsonRejected(
        "{\"name\":\"" + "n".repeat(65) + "\"}",
        "name",
        "name: must be 1..64 characters of [A-Za-z0-9._-], got \"nnn");
  }

  @Test
  void overlongHostIsRejected() {
    assertJsonRejected(
        "{\"listen\":{\"host\":\"" + "h".repeat(254) + "\"}}",
        "listen.host",
        "listen.host: must be 1..253 characters without whitespace, got \"hhh");
  }

  // ---- wrong types
  // ---------------------------------------------------------------------------------------

  static Stream<Arguments> nonIntegerValues() {
    List<String[]> values =
        List.of(
            new String[] {"\"4\"", "string \"4\""},
            new String[] {"null", "null"},
            new String[] {"true", "boolean true"},
            new String[] {"false", "boolean false"},
            new String[] {"2.5", "float 2.5"},
            new String[] {"2.0", "float 2.0"},
            new String[] {"1e3", "float 1E+3"},
            new String[] {"{}", "object"},
            new String[] {"[1]", "array"});
    return NumericKey.ALL.stream()
        .flatMap(k -> values.stream().map(v -> Arguments.of(k, v[0], v[1])));
  }

  @ParameterizedTest(name = "{0} = {1}")
  @MethodSource("nonIntegerValues")
  void nonIntegerValueForAnIntegerKeyIsRejectedNamingItsType(
      NumericKey key, String value, String described) {
    ConfigException e =
        assertJsonRejected(
            key.document(value), key.path(), key.path() + ": expected an integer, got ");
    assertEquals(key.path() + ": expected an integer, got " + described, e.getMessage());
  }

  @Test
  void stringForTcpLanesGivesTheDocumentedMessage() {
    assertJsonRejected(
        "{\"tcp\":{\"lanes\":\"2\"}}", "tcp.lanes", "tcp.lanes: expected an integer, got string");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"name\":1}                       | name        | name: expected a string, got integer 1",
        "{\"name\":null}                    | name        | name: expected a string, got null",
        "{\"name\":[\"a\"]}                 | name        | name: expected a string, got array",
        "{\"name\":{}}                      | name        | name: expected a string, got object",
        "{\"listen\":{\"host\":false}}      | listen.host | listen.host: expected a string, got boolean false",
        "{\"listen\":{\"host\":1.5}}        | listen.host | listen.host: expected a string, got float 1.5",
      })
  void nonStringValueForAStringKeyIsRejected(String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  static Stream<Arguments> nonObjectSections() {
    List<String[]> values =
        List.of(
            new String[] {"null", "null"},
            new String[] {"1", "integer 1"},
            new String[] {"\"tcp\"", "string \"tcp\""},
            new String[] {"[]", "array"},
            new String[] {"true", "boolean true"});
    return Stream.of(
            "listen",
            "tcp",
            "budgets",
            "slicing",
            "timeouts",
            "retry",
            "merge",
            "shm",
            "file",
            "rdma")
        .flatMap(s -> values.stream().map(v -> Arguments.of(s, v[0], v[1])));
  }

  @ParameterizedTest(name = "{0} = {1}")
  @MethodSource("nonObjectSections")
  void sectionThatIsNotAnObjectIsRejected(String section, String value, String described) {
    ConfigException e =
        assertJsonRejected("{\"" + section + "\":" + value + "}", section, section + ": ");
    assertEquals(section + ": expected an object, got " + described, e.getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"shm\":{\"enabled\":1}}       | shm.enabled: expected a boolean, got integer 1",
        "{\"shm\":{\"enabled\":\"true\"}}  | shm.enabled: expected a boolean, got string \"true\"",
        "{\"shm\":{\"enabled\":null}}    | shm.enabled: expected a boolean, got null",
        "{\"rdma\":{\"enabled\":1}}      | rdma.enabled: expected a boolean, got integer 1",
        "{\"rdma\":{\"enabled\":\"yes\"}} | rdma.enabled: expected a boolean, got string \"yes\"",
        "{\"rdma\":{\"priorityAgingPerEntry\":1}}       | rdma.priorityAgingPerEntry: expected a boolean, got integer 1",
        "{\"listen\":{\"readyAtStart\":\"false\"}} | listen.readyAtStart: expected a boolean, got string \"false\"",
        "{\"rdma\":{\"priorityAgingPerEntry\":\"true\"}} | rdma.priorityAgingPerEntry: expected a boolean, got string \"true\"",
        "{\"rdma\":{\"priorityAgingPerEntry\":null}}    | rdma.priorityAgingPerEntry: expected a boolean, got null",
        "{\"rdma\":{\"priorityAgingPerEntry\":[]}}      | rdma.priorityAgingPerEntry: expected a boolean, got array",
        "{\"tcp\":{\"retryReadOnOtherLane\":0}}      | tcp.retryReadOnOtherLane: expected a boolean, got integer 0",
        "{\"tcp\":{\"retryReadOnOtherLane\":\"no\"}} | tcp.retryReadOnOtherLane: expected a boolean, got string \"no\"",
        "{\"merge\":{\"enabled\":1}}      | merge.enabled: expected a boolean, got integer 1",
        "{\"merge\":{\"enabled\":\"false\"}} | merge.enabled: expected a boolean, got string \"false\"",
      })
  void nonBooleanValueForABooleanKeyIsRejected(String json, String message) {
    String key = message.substring(0, message.indexOf(':'));
    assertEquals(message, assertJsonRejected(json, key, key + ": ").getMessage());
  }

  @Test
  void mergeEnabledReadsTrueAndFalseAndGivesTheRequesterLimit() {
    MergeConfig off = EngineConfig.fromJson("{\"merge\":{\"enabled\":false}}").merge();
    assertEquals(false, off.enabled());
    assertEquals(0, off.requesterLimitBytes(), "off: no merging, whatever maxBytes says");
    MergeConfig on =
        EngineConfig.fromJson("{\"merge\":{\"enabled\":true,\"maxBytes\":8192}}").merge();
    assertEquals(8192, on.requesterLimitBytes());
    assertEquals(true, EngineConfig.defaults().merge().enabled(), "on by default");
    assertEquals(1 << 20, EngineConfig.defaults().merge().requesterLimitBytes());
  }

  @Test
  void rdmaEnabledReadsTrueAndFalse() {
    assertEquals(true, EngineConfig.fromJson("{\"rdma\":{\"enabled\":true}}").rdma().enabled());
    assertEquals(false, EngineConfig.fromJson("{\"rdma\":{\"enabled\":false}}").rdma().enabled());
    assertEquals(false, EngineConfig.defaults().rdma().enabled(), "off by default");
  }

  @Test
  void rdmaPriorityAgingPerEntryReadsTrueAndFalse() {
    assertEquals(
        true,
        EngineConfig.fromJson("{\"rdma\":{\"priorityAgingPerEntry\":true}}")
            .rdma()
            .priorityAgingPerEntry());
    assertEquals(
        false,
        EngineConfig.fromJson("{\"rdma\":{\"priorityAgingPerEntry\":false}}")
            .rdma()
            .priorityAgingPerEntry());
    assertEquals(
        false,
        EngineConfig.defaults().rdma().priorityAgingPerEntry(),
        "whole tiers by default, as in the reference");
  }

  @Test
  void shmEnabledReadsTrueAndFalse() {
    assertEquals(true, EngineConfig.fromJson("{\"shm\":{\"enabled\":true}}").shm().enabled());
    assertEquals(false, EngineConfig.fromJson("{\"shm\":{\"enabled\":false}}").shm().enabled());
    assertEquals(false, EngineConfig.defaults().shm().enabled(), "off by default");
  }

  // ---- unknown keys
  // --------------------------------------------------------------------------------------

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"tcp\":{\"lanez\":2}}    | tcp.lanez      | tcp.lanez: unknown key (known: lanes, socketBufferBytes, maxFramePayloadBytes, connectTimeoutMillis, laneWindowFrames, laneWindowBytes, retryReadOnOtherLane, reconnectInitialBackoffMillis, reconnectMaxBackoffMillis, reconnectGiveUpMillis, waitWhileReconnecting, keepaliveIntervalMillis, livenessTimeoutMillis, sourceIdleTimeoutMillis)",
        "{\"lanes\":2}              | lanes          | lanes: unknown key (known: name, listen, tcp, budgets, slicing, timeouts, retry, merge, shm, file, rdma, notifications, observability, directory, policies, security)",
        "{\"Name\":\"x\"}           | Name           | Name: unknown key (known: name, listen, tcp, budgets, slicing, timeouts, retry, merge, shm, file, rdma, notifications, observability, directory, policies, security)",
        "{\"listen\":{\"addr\":1}}  | listen.addr    | listen.addr: unknown key (known: host, port, readyAtStart)",
        "{\"budgets\":{\"x\":1}}    | budgets.x      | budgets.x: unknown key (known: maxBatches, maxBatchCapacity, maxTasksInFlight, maxInflightBytes, maxEndpoints, maxRegistrations, maxPeerSegments)",
        "{\"slicing\":{\"\":1}}     | slicing.       | slicing.: unknown key (known: baseBlockBytes, maxReadSlices, maxWriteSlices)",
        "{\"timeouts\":{\"describeTimeoutMs\":1}} | timeouts.describeTimeoutMs | timeouts.describeTimeoutMs: unknown key (known: defaultDeadlineMillis, destructionWindowMillis, describeTimeoutMillis)",
        "{\"retry\":{\"maxFailovers\":1}} | retry.maxFailovers | retry.maxFailovers: unknown key (known: maxTransportFailovers)",
        "{\"rdma\":{\"lane\":2}}     | rdma.lane      | rdma.lane: unknown key (known: enabled, provider, devices, lanes, softwareAddress, softwareDevices, maxEndpoints, maxGrants, maxSendWr, maxCqes, railErrors, railErrorWindowMillis, railCooldownMillis, railMaxCooldownMillis, railProbeIntervalMillis, priorityAgingMillis, priorityAgingPerEntry, softwareAddresses, gidIndex, maxDirectBytes, selection, completionEvents)",
        "{\"rdma\":{\"softwareAddress\":\"127.0.0.1\",\"maxCQEs\":16}} | rdma.maxCQEs | rdma.maxCQEs: unknown key (known: enabled, provider, devices, lanes, softwareAddress, softwareDevices, maxEndpoints, maxGrants, maxSendWr, maxCqes, railErrors, railErrorWindowMillis, railCooldownMillis, railMaxCooldownMillis, railProbeIntervalMillis, priorityAgingMillis, priorityAgingPerEntry, softwareAddresses, gidIndex, maxDirectBytes, selection, completionEvents)",
        "{\"pekko\":{}}             | pekko          | pekko: unknown key (known: name, listen, tcp, budgets, slicing, timeouts, retry, merge, shm, file, rdma, notifications, observability, directory, policies, security)",
      })
  void unknownKeyIsRejectedNamingItsPath(String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": unknown key").getMessage());
  }

  @Test
  void unknownKeyIsReportedEvenWhenItsValueWouldBeValid() {
    assertJsonRejected("{\"tcp\":{\"lanes\":4,\"lane\":4}}", "tcp.lane", "tcp.lane: unknown key");
  }

  // ---- duplicate keys
  // ------------------------------------------------------------------------------------

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"name\":\"a\",\"name\":\"a\"}                    | name",
        "{\"tcp\":{},\"tcp\":{}}                            | tcp",
        "{\"tcp\":{\"lanes\":2,\"lanes\":3}}                | tcp.lanes",
        "{\"tcp\":{\"lanes\":2,\"lanes\":2}}                | tcp.lanes",
        "{\"listen\":{\"port\":1,\"host\":\"h\",\"port\":1}} | listen.port",
        "{\"timeouts\":{\"describeTimeoutMillis\":5,\"describeTimeoutMillis\":6}} | timeouts.describeTimeoutMillis",
        "{\"x\":{\"y\":1,\"y\":2}}                          | x.y",
      })
  void duplicateKeyIsRejectedNamingItsPath(String json, String path) {
    assertEquals(
        path + ": duplicate key", assertJsonRejected(json, path, path + ": ").getMessage());
  }

  // ---- document-level problems
  // ---------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\n\t\r\n "})
  void emptyDocumentIsRejected(String json) {
    assertEquals("$: document is empty", assertJsonRejected(json, "$", "$: ").getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "[]           | array",
        "[{}]         | array",
        "1            | integer 1",
        "\"{}\"       | string \"{}\"",
        "null         | null",
        "true         | boolean true",
      })
  void rootThatIsNotAnObjectIsRejected(String json, String described) {
    assertEquals(
        "$: expected an object at the document root, got " + described,
        assertJsonRejected(json, "$", "$: ").getMessage());
  }

  @Test
  void secondRootValueIsRejectedAsTrailingContent() {
    assertEquals(
        "$: unexpected content after the root object at line 1, column 4",
        assertJsonRejected("{} {}", "$", "$: ").getMessage());
    assertJsonRejected(
        "{}\n[]", "$", "$: unexpected content after the root object at line 2, column 1");
  }

  @ParameterizedTest
  @ValueSource(strings = {"{}x", "{} ,", "{}}", "{\"tcp\":{}}]"})
  void trailingGarbageIsRejected(String json) {
    assertJsonRejected(json, "$", "$: ");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      value = {
        "{                                   | 1",
        "{\"tcp\":                           | 1",
        "{\"tcp\": }                         | 1",
        "{\"name\":\"a\",}                   | 1",
        "{'name':'a'}                        | 1",
        "{name:\"a\"}                        | 1",
        "{\"tcp\":{\"lanes\":NaN}}           | 1",
        "{\"tcp\":{\"lanes\":01}}            | 1",
        "{\"tcp\":{\"lanes\":+1}}            | 1",
        "{\"name\":\"unterminated}           | 1",
        "// comment\\n{}                     | 1",
        "{\\n  \"tcp\": {\\n    \"lanes\": 2,,\\n  }\\n} | 3",
      })
  void malformedJsonIsRejectedWithLineAndColumn(String json, int line) {
    ConfigException e =
        assertJsonRejected(
            json.replace("\\n", "\n"), "$", "$: malformed JSON at line " + line + ", column ");
    assertEquals("$", e.path());
  }

  @Test
  void malformedJsonNamesTheExactColumn() {
    // The x is the 20th character of line 2.
    assertJsonRejected(
        "{\n  \"tcp\": {\"lanes\": x}\n}", "$", "$: malformed JSON at line 2, column 20: ");
  }

  @Test
  void numberLongerThanTheParserLimitIsRejectedWithItsLocation() {
    assertJsonRejected(
        "{\"tcp\":{\"lanes\":" + "9".repeat(1200) + "}}",
        "$",
        "$: malformed JSON at line 1, column ");
  }

  @Test
  void nestingDeeperThanTheParserLimitIsRejectedWithItsLocation() {
    assertJsonRejected("{\"x\":" + "[".repeat(2000), "$", "$: malformed JSON at line 1, column ");
  }

  // ---- size limit
  // ----------------------------------------------------------------------------------------

  /**
   * A valid document of exactly {@code bytes} UTF-8 bytes: {"tcp":{"lanes":4}} followed by spaces.
   */
  static String paddedDocument(int bytes) {
    String json = "{\"tcp\":{\"lanes\":4}}";
    return json + " ".repeat(bytes - json.length());
  }

  @Test
  void documentOfExactlyOneMebibyteIsAccepted() {
    String json = paddedDocument(LIMIT);
    assertEquals(LIMIT, json.length());
    assertEquals(4, EngineConfig.fromJson(json).tcp().lanes());
  }

  @Test
  void documentOneByteOverOneMebibyteIsRejected() {
    ConfigException e = assertJsonRejected(paddedDocument(LIMIT + 1), "$", "$: ");
    assertEquals("$: document is 1048577 bytes, over the 1 MiB limit", e.getMessage());
  }

  @Test
  void sizeLimitCountsUtf8BytesNotCharacters() {
    // "é" is one char but two UTF-8 bytes, so this document has LIMIT chars and LIMIT + 1 bytes.
    String json = "{\"listen\":{\"host\":\"é\"}}";
    String padded = json + " ".repeat(LIMIT - json.length());
    assertEquals(LIMIT, padded.length());
    assertEquals(
        "$: document is 1048577 bytes, over the 1 MiB limit",
        assertJsonRejected(padded, "$", "$: ").getMessage());
    // One space fewer fits exactly.
    assertEquals("é", EngineConfig.fromJson(padded.substring(0, LIMIT - 1)).listen().host());
  }

  @Test
  void sizeLimitCountsSupplementaryCharactersAsFourBytes() {
    String json = "{\"listen\":{\"host\":\"\uD83D\uDE80\"}}"; // a rocket: 2 chars, 4 bytes
    String padded = json + " ".repeat(LIMIT - json.length() - 1);
    assertEquals(
        "$: document is 1048577 bytes, over the 1 MiB limit",
        assertJsonRejected(padded, "$", "$: ").getMessage());
    assertEquals(
        "\uD83D\uDE80",
        EngineConfig.fromJson(padded.substring(0, padded.length() - 1)).listen().host());
  }

  @Test
  void hugeDocumentIsRejectedBeforeParsing() {
    // Malformed content beyond the limit: the size, not the syntax, is reported.
    String json = "[" + " ".repeat(2 * LIMIT);
    assertEquals(
        "$: document is " + (2 * LIMIT + 1) + " bytes, over the 1 MiB limit",
        assertJsonRejected(json, "$", "$: ").getMessage());
  }
}
