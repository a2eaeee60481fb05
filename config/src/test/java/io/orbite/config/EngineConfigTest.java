package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The records themselves: defaults, constants, copy methods and constructor validation. */
class EngineConfigTest {
  static final java.util.List<NumericKey> KEYS = NumericKey.ALL;

  @Test
  void defaultsHaveTheDocumentedTopLevelValues() {
    EngineConfig d = EngineConfig.defaults();
    assertAll(
        () -> assertEquals("orbite", d.name()),
        () -> assertEquals("127.0.0.1", d.listen().host()),
        () -> assertEquals(ListenConfig.defaults(), d.listen()),
        () -> assertEquals(TcpConfig.defaults(), d.tcp()),
        () -> assertEquals(BudgetConfig.defaults(), d.budgets()),
        () -> assertEquals(SlicingConfig.defaults(), d.slicing()),
        () -> assertEquals(TimeoutConfig.defaults(), d.timeouts()),
        () -> assertEquals(RdmaConfig.defaults(), d.rdma()));
  }

  @ParameterizedTest(name = "{0}")
  @FieldSource("KEYS")
  void everyNumericKeyDefaultsToItsDocumentedValue(NumericKey key) {
    assertEquals(key.defaultValue(), key.get().apply(EngineConfig.defaults()));
  }

  @Test
  void namedConstantsCarryTheDocumentedDefaultsAndBounds() {
    assertAll(
        () -> assertEquals("orbite", EngineConfig.DEFAULT_NAME),
        () -> assertEquals(1, EngineConfig.MIN_NAME_LENGTH),
        () -> assertEquals(64, EngineConfig.MAX_NAME_LENGTH),
        () -> assertEquals("ORBITE_CONF", EngineConfig.ENV_VAR),
        () -> assertEquals(1048576, EngineConfig.MAX_DOCUMENT_BYTES),
        () -> assertEquals("127.0.0.1", ListenConfig.DEFAULT_HOST),
        () -> assertEquals(253, ListenConfig.MAX_HOST_LENGTH),
        () -> assertEquals(0, ListenConfig.DEFAULT_PORT),
        () -> assertEquals(0, ListenConfig.MIN_PORT),
        () -> assertEquals(65535, ListenConfig.MAX_PORT),
        () -> assertEquals(2, TcpConfig.DEFAULT_LANES),
        () -> assertEquals(1, TcpConfig.MIN_LANES),
        () -> assertEquals(64, TcpConfig.MAX_LANES),
        () -> assertEquals(262144, TcpConfig.DEFAULT_SOCKET_BUFFER_BYTES),
        () -> assertEquals(65536, TcpConfig.MIN_SOCKET_BUFFER_BYTES),
        () -> assertEquals(268435456, TcpConfig.MAX_SOCKET_BUFFER_BYTES),
        () -> assertEquals(16777216, TcpConfig.DEFAULT_MAX_FRAME_PAYLOAD_BYTES),
        () -> assertEquals(4096, TcpConfig.MIN_MAX_FRAME_PAYLOAD_BYTES),
        () -> assertEquals(1073741824, TcpConfig.MAX_MAX_FRAME_PAYLOAD_BYTES),
        () -> assertEquals(5000, TcpConfig.DEFAULT_CONNECT_TIMEOUT_MILLIS),
        () -> assertEquals(1, TcpConfig.MIN_CONNECT_TIMEOUT_MILLIS),
        () -> assertEquals(600000, TcpConfig.MAX_CONNECT_TIMEOUT_MILLIS),
        () -> assertEquals(1024, TcpConfig.DEFAULT_LANE_WINDOW_FRAMES),
        () -> assertEquals(1, TcpConfig.MIN_LANE_WINDOW_FRAMES),
        () -> assertEquals(65536, TcpConfig.MAX_LANE_WINDOW_FRAMES),
        () -> assertEquals(67108864L, TcpConfig.DEFAULT_LANE_WINDOW_BYTES),
        () -> assertEquals(1048576L, TcpConfig.MIN_LANE_WINDOW_BYTES),
        () -> assertEquals(4294967296L, TcpConfig.MAX_LANE_WINDOW_BYTES),
        () -> assertEquals(256, BudgetConfig.DEFAULT_MAX_BATCHES),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_BATCHES),
        () -> assertEquals(1000000, BudgetConfig.MAX_MAX_BATCHES),
        () -> assertEquals(65536, BudgetConfig.DEFAULT_MAX_BATCH_CAPACITY),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_BATCH_CAPACITY),
        () -> assertEquals(1048576, BudgetConfig.MAX_MAX_BATCH_CAPACITY),
        () -> assertEquals(262144, BudgetConfig.DEFAULT_MAX_TASKS_IN_FLIGHT),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_TASKS_IN_FLIGHT),
        () -> assertEquals(16777216, BudgetConfig.MAX_MAX_TASKS_IN_FLIGHT),
        () -> assertEquals(8589934592L, BudgetConfig.DEFAULT_MAX_INFLIGHT_BYTES),
        () -> assertEquals(1048576L, BudgetConfig.MIN_MAX_INFLIGHT_BYTES),
        () -> assertEquals(1099511627776L, BudgetConfig.MAX_MAX_INFLIGHT_BYTES),
        () -> assertEquals(64, BudgetConfig.DEFAULT_MAX_ENDPOINTS),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_ENDPOINTS),
        () -> assertEquals(4096, BudgetConfig.MAX_MAX_ENDPOINTS),
        () -> assertEquals(4096, BudgetConfig.DEFAULT_MAX_REGISTRATIONS),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_REGISTRATIONS),
        () -> assertEquals(1000000, BudgetConfig.MAX_MAX_REGISTRATIONS),
        () -> assertEquals(256, BudgetConfig.DEFAULT_MAX_PEER_SEGMENTS),
        () -> assertEquals(1, BudgetConfig.MIN_MAX_PEER_SEGMENTS),
        () -> assertEquals(65536, BudgetConfig.MAX_MAX_PEER_SEGMENTS),
        () -> assertEquals(65536L, SlicingConfig.DEFAULT_BASE_BLOCK_BYTES),
        () -> assertEquals(4096L, SlicingConfig.MIN_BASE_BLOCK_BYTES),
        () -> assertEquals(67108864L, SlicingConfig.MAX_BASE_BLOCK_BYTES),
        () -> assertEquals(64, SlicingConfig.DEFAULT_MAX_READ_SLICES),
        () -> assertEquals(1, SlicingConfig.MIN_MAX_READ_SLICES),
        () -> assertEquals(1024, SlicingConfig.MAX_MAX_READ_SLICES),
        () -> assertEquals(32, SlicingConfig.DEFAULT_MAX_WRITE_SLICES),
        () -> assertEquals(1, SlicingConfig.MIN_MAX_WRITE_SLICES),
        () -> assertEquals(1024, SlicingConfig.MAX_MAX_WRITE_SLICES),
        () -> assertEquals(30000L, TimeoutConfig.DEFAULT_DEFAULT_DEADLINE_MILLIS),
        () -> assertEquals(1L, TimeoutConfig.MIN_DEFAULT_DEADLINE_MILLIS),
        () -> assertEquals(86400000L, TimeoutConfig.MAX_DEFAULT_DEADLINE_MILLIS),
        () -> assertEquals(30000L, TimeoutConfig.DEFAULT_DESTRUCTION_WINDOW_MILLIS),
        () -> assertEquals(1L, TimeoutConfig.MIN_DESTRUCTION_WINDOW_MILLIS),
        () -> assertEquals(3600000L, TimeoutConfig.MAX_DESTRUCTION_WINDOW_MILLIS),
        () -> assertEquals(5000L, TimeoutConfig.DEFAULT_DESCRIBE_TIMEOUT_MILLIS),
        () -> assertEquals(1L, TimeoutConfig.MIN_DESCRIBE_TIMEOUT_MILLIS),
        () -> assertEquals(600000L, TimeoutConfig.MAX_DESCRIBE_TIMEOUT_MILLIS),
        () -> assertEquals(false, RdmaConfig.DEFAULT_ENABLED),
        () -> assertEquals(java.util.List.of("software", "native"), RdmaConfig.PROVIDERS),
        () -> assertEquals("software", RdmaConfig.DEFAULT_PROVIDER),
        () -> assertEquals(java.util.List.of(), RdmaConfig.DEFAULT_DEVICES),
        () -> assertEquals(16, RdmaConfig.MAX_DEVICES),
        () -> assertEquals(2, RdmaConfig.DEFAULT_LANES),
        () -> assertEquals(1, RdmaConfig.MIN_LANES),
        () -> assertEquals(16, RdmaConfig.MAX_LANES),
        () -> assertEquals("127.0.0.1", RdmaConfig.DEFAULT_SOFTWARE_ADDRESS),
        () -> assertEquals(2, RdmaConfig.DEFAULT_SOFTWARE_DEVICES),
        () -> assertEquals(1, RdmaConfig.MIN_SOFTWARE_DEVICES),
        () -> assertEquals(8, RdmaConfig.MAX_SOFTWARE_DEVICES),
        () -> assertEquals(64, RdmaConfig.DEFAULT_MAX_ENDPOINTS),
        () -> assertEquals(1, RdmaConfig.MIN_MAX_ENDPOINTS),
        () -> assertEquals(4096, RdmaConfig.MAX_MAX_ENDPOINTS),
        () -> assertEquals(1024, RdmaConfig.DEFAULT_MAX_GRANTS),
        () -> assertEquals(1, RdmaConfig.MIN_MAX_GRANTS),
        () -> assertEquals(65536, RdmaConfig.MAX_MAX_GRANTS),
        () -> assertEquals(1024, RdmaConfig.DEFAULT_MAX_SEND_WR),
        () -> assertEquals(1, RdmaConfig.MIN_MAX_SEND_WR),
        () -> assertEquals(4096, RdmaConfig.MAX_MAX_SEND_WR),
        () -> assertEquals(32768, RdmaConfig.DEFAULT_MAX_CQES),
        () -> assertEquals(16, RdmaConfig.MIN_MAX_CQES),
        () -> assertEquals(65536, RdmaConfig.MAX_MAX_CQES),
        () -> assertEquals(3, RdmaConfig.DEFAULT_RAIL_ERRORS),
        () -> assertEquals(1, RdmaConfig.MIN_RAIL_ERRORS),
        () -> assertEquals(1000, RdmaConfig.MAX_RAIL_ERRORS),
        () -> assertEquals(10000, RdmaConfig.DEFAULT_RAIL_ERROR_WINDOW_MILLIS),
        () -> assertEquals(1, RdmaConfig.MIN_RAIL_ERROR_WINDOW_MILLIS),
        () -> assertEquals(3600000, RdmaConfig.MAX_RAIL_ERROR_WINDOW_MILLIS),
        () -> assertEquals(30000, RdmaConfig.DEFAULT_RAIL_COOLDOWN_MILLIS),
        () -> assertEquals(1, RdmaConfig.MIN_RAIL_COOLDOWN_MILLIS),
        () -> assertEquals(3600000, RdmaConfig.MAX_RAIL_COOLDOWN_MILLIS),
        () -> assertEquals(300000, RdmaConfig.DEFAULT_RAIL_MAX_COOLDOWN_MILLIS),
        () -> assertEquals(1, RdmaConfig.MIN_RAIL_MAX_COOLDOWN_MILLIS),
        () -> assertEquals(86400000, RdmaConfig.MAX_RAIL_MAX_COOLDOWN_MILLIS),
        () -> assertEquals(1000, RdmaConfig.DEFAULT_RAIL_PROBE_INTERVAL_MILLIS),
        () -> assertEquals(0, RdmaConfig.MIN_RAIL_PROBE_INTERVAL_MILLIS),
        () -> assertEquals(3600000, RdmaConfig.MAX_RAIL_PROBE_INTERVAL_MILLIS),
        () -> assertEquals(10, RdmaConfig.DEFAULT_PRIORITY_AGING_MILLIS),
        () -> assertEquals(1, RdmaConfig.MIN_PRIORITY_AGING_MILLIS),
        () -> assertEquals(60000, RdmaConfig.MAX_PRIORITY_AGING_MILLIS),
        () -> assertEquals(false, RdmaConfig.DEFAULT_PRIORITY_AGING_PER_ENTRY),
        () -> assertEquals(java.util.List.of(), RdmaConfig.DEFAULT_SOFTWARE_ADDRESSES),
        () -> assertEquals(8, RdmaConfig.MAX_SOFTWARE_ADDRESSES));
  }

  @ParameterizedTest(name = "{0}")
  @FieldSource("KEYS")
  void copyMethodChangesOnlyItsOwnKey(NumericKey key) {
    EngineConfig base = key.base();
    long other = key.defaultValue() == key.max() ? key.min() : key.max();
    EngineConfig changed = key.with().apply(base, other);

    assertEquals(other, key.get().apply(changed));
    assertEquals(key.defaultValue(), key.get().apply(base), "the original is unchanged");
    for (NumericKey each : KEYS) {
      if (each != key) {
        assertEquals(each.get().apply(base), each.get().apply(changed), each.path());
      }
    }
    assertEquals(base.name(), changed.name());
    assertEquals(base.listen().host(), changed.listen().host());
  }

  @Test
  void stringAndSectionCopyMethodsReplaceTheirComponent() {
    EngineConfig base = EngineConfig.defaults();
    TcpConfig tcp = TcpConfig.defaults().withLanes(7);
    assertEquals("edge-1", base.withName("edge-1").name());
    assertEquals("0.0.0.0", base.withListen(base.listen().withHost("0.0.0.0")).listen().host());
    assertEquals(tcp, base.withTcp(tcp).tcp());
    assertEquals(7, base.withBudgets(base.budgets().withMaxEndpoints(7)).budgets().maxEndpoints());
    assertEquals(
        8192L,
        base.withSlicing(base.slicing().withBaseBlockBytes(8192)).slicing().baseBlockBytes());
    assertEquals(
        9L,
        base.withTimeouts(base.timeouts().withDescribeTimeoutMillis(9))
            .timeouts()
            .describeTimeoutMillis());
    assertEquals(true, base.withRdma(base.rdma().withEnabled(true)).rdma().enabled());
    assertEquals("native", base.withRdma(base.rdma().withProvider("native")).rdma().provider());
    assertEquals(
        java.util.List.of("mlx5_0"),
        base.withRdma(base.rdma().withDevices(java.util.List.of("mlx5_0"))).rdma().devices());
    assertEquals(
        java.util.List.of("10.0.0.1", "10.0.1.1"),
        base.withRdma(base.rdma().withSoftwareAddresses(java.util.List.of("10.0.0.1", "10.0.1.1")))
            .rdma()
            .softwareAddresses());
    assertEquals(
        RdmaConfig.defaults().withRailPolicy(5, 20000, 1000, 8000, 0),
        base.withRdma(base.rdma().withRailPolicy(5, 20000, 1000, 8000, 0)).rdma());
    assertEquals(
        RdmaConfig.defaults().withPriorityAging(25, true),
        base.withRdma(base.rdma().withPriorityAging(25, true)).rdma());
    assertNotEquals(base, base.withName("other"));
    assertEquals(EngineConfig.defaults(), base);
  }

  static Stream<Arguments> outOfRangeValues() {
    return KEYS.stream()
        .flatMap(k -> Stream.of(Arguments.of(k, k.min() - 1), Arguments.of(k, k.max() + 1)));
  }

  @ParameterizedTest(name = "{0} = {1}")
  @MethodSource("outOfRangeValues")
  void constructorRejectsOutOfRangeValueNamingItsPath(NumericKey key, long value) {
    ConfigException e =
        assertThrows(ConfigException.class, () -> key.with().apply(key.base(), value));
    assertEquals(key.path(), e.path());
    assertEquals(
        key.path() + ": must be " + key.min() + ".." + key.max() + ", got " + value,
        e.getMessage());
    assertEquals("must be " + key.min() + ".." + key.max() + ", got " + value, e.detail());
  }

  @ParameterizedTest(name = "{0}")
  @FieldSource("KEYS")
  void constructorAcceptsBothEndsOfEachRange(NumericKey key) {
    assertEquals(key.min(), key.get().apply(key.with().apply(key.base(), key.min())));
    assertEquals(key.max(), key.get().apply(key.with().apply(key.base(), key.max())));
  }

  @ParameterizedTest
  @ValueSource(longs = {4097, 100000, 65535, 3 * 4096, 67108863})
  void baseBlockBytesThatIsNotAPowerOfTwoIsRejected(long value) {
    ConfigException e =
        assertThrows(
            ConfigException.class, () -> SlicingConfig.defaults().withBaseBlockBytes(value));
    assertEquals("slicing.baseBlockBytes", e.path());
    assertEquals("slicing.baseBlockBytes: must be a power of two, got " + value, e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(longs = {4096, 8192, 65536, 1048576, 67108864})
  void baseBlockBytesThatIsAPowerOfTwoIsAccepted(long value) {
    assertEquals(value, SlicingConfig.defaults().withBaseBlockBytes(value).baseBlockBytes());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "a",
        "orbite",
        "Engine_01.prod-eu",
        "0123456789012345678901234567890123456789012345678901234567890123"
      })
  void validNamesAreAccepted(String name) {
    assertEquals(name, EngineConfig.defaults().withName(name).name());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "has space",
        "slash/name",
        "ünï",
        "tab\tname",
        "01234567890123456789012345678901234567890123456789012345678901234"
      })
  void invalidNamesAreRejectedNamingThePath(String name) {
    ConfigAssertions.assertRejected(
        "name",
        "name: must be 1..64 characters of [A-Za-z0-9._-], got \"",
        () -> EngineConfig.defaults().withName(name));
  }

  @Test
  void overlongNameIsEchoedShortened() {
    String name = "x".repeat(200);
    ConfigException e =
        assertThrows(ConfigException.class, () -> EngineConfig.defaults().withName(name));
    assertEquals(
        "name: must be 1..64 characters of [A-Za-z0-9._-], got \"" + "x".repeat(80) + "...\"",
        e.getMessage());
  }

  @Test
  void readyAtStartDefaultsToTrueAndIsKeptByTheOtherWithers() {
    assertTrue(ListenConfig.defaults().readyAtStart());
    assertTrue(new ListenConfig("127.0.0.1", 7070).readyAtStart());
    ListenConfig notReady = ListenConfig.defaults().withReadyAtStart(false);
    assertEquals(new ListenConfig("127.0.0.1", 0, false), notReady);
    assertEquals(
        new ListenConfig("10.0.0.1", 9000, false), notReady.withHost("10.0.0.1").withPort(9000));
    assertTrue(notReady.withReadyAtStart(true).readyAtStart());
    assertEquals(notReady, EngineConfig.fromJson("{\"listen\":{\"readyAtStart\":false}}").listen());
  }

  @Test
  void hostOfMaximumLengthIsAccepted() {
    String host = "h".repeat(253);
    assertEquals(host, ListenConfig.defaults().withHost(host).host());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "two words", "line\nbreak"})
  void hostThatIsEmptyOrHasWhitespaceIsRejected(String host) {
    ConfigAssertions.assertRejected(
        "listen.host",
        "listen.host: must be 1..253 characters without whitespace, got \"",
        () -> ListenConfig.defaults().withHost(host));
  }

  @Test
  void hostLongerThan253CharactersIsRejected() {
    ConfigAssertions.assertRejected(
        "listen.host",
        "listen.host: must be 1..253 characters without whitespace, got \"hhh",
        () -> ListenConfig.defaults().withHost("h".repeat(254)));
  }

  @Test
  void nullComponentsAreRejectedNamingTheirPath() {
    EngineConfig d = EngineConfig.defaults();
    assertAll(
        () ->
            assertEquals(
                "name: must not be null",
                assertThrows(ConfigException.class, () -> d.withName(null)).getMessage()),
        () ->
            assertEquals(
                "listen: must not be null",
                assertThrows(ConfigException.class, () -> d.withListen(null)).getMessage()),
        () ->
            assertEquals(
                "tcp: must not be null",
                assertThrows(ConfigException.class, () -> d.withTcp(null)).getMessage()),
        () ->
            assertEquals(
                "budgets: must not be null",
                assertThrows(ConfigException.class, () -> d.withBudgets(null)).getMessage()),
        () ->
            assertEquals(
                "slicing: must not be null",
                assertThrows(ConfigException.class, () -> d.withSlicing(null)).getMessage()),
        () ->
            assertEquals(
                "timeouts: must not be null",
                assertThrows(ConfigException.class, () -> d.withTimeouts(null)).getMessage()),
        () ->
            assertEquals(
                "rdma: must not be null",
                assertThrows(ConfigException.class, () -> d.withRdma(null)).getMessage()),
        () ->
            assertEquals(
                "listen.host: must not be null",
                assertThrows(ConfigException.class, () -> d.listen().withHost(null)).getMessage()));
  }

  @Test
  void configExceptionIsARuntimeExceptionWithPathAndDetail() {
    ConfigException e = new ConfigException("tcp.lanes", "must be 1..64, got 0");
    RuntimeException asRuntime = e;
    assertEquals("tcp.lanes: must be 1..64, got 0", asRuntime.getMessage());
    assertEquals("tcp.lanes", e.path());
    assertEquals("must be 1..64, got 0", e.detail());
  }
}
