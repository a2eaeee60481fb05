package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertJsonRejected;
import static io.orbite.config.ConfigAssertions.assertRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code rdma} section's keys that are not numbers: the provider names, the device list, the
 * software provider's address and its per-device address list; the rail circuit's thresholds as a
 * group (their cross-field rule and {@code withRailPolicy}); and the post queue's aging (C14) as a
 * pair ({@code withPriorityAging}). Its numeric keys one by one are in {@link NumericKey}; the
 * boolean {@code priorityAgingPerEntry}'s type errors are in {@link EngineConfigStrictnessTest}.
 *
 * <p>Longer than 500 lines: each copy method's test spells out the whole expected record, one
 * component a line (a record has no copy syntax), so that a copy that touches a neighbour fails.
 */
class RdmaConfigTest {

  @Test
  void defaultsAreOffWithTheSoftwareProviderOnEveryDevice() {
    RdmaConfig d = EngineConfig.defaults().rdma();
    assertEquals(RdmaConfig.defaults(), d);
    assertEquals(false, d.enabled());
    assertEquals("software", d.provider());
    assertEquals(List.of(), d.devices());
    assertEquals("127.0.0.1", d.softwareAddress());
    assertEquals(List.of(), d.softwareAddresses());
    assertEquals(RdmaConfig.defaults(), EngineConfig.fromJson("{\"rdma\":{}}").rdma());
  }

  @Test
  void providerAcceptsEachName() {
    for (String provider : RdmaConfig.PROVIDERS) {
      assertEquals(
          provider,
          EngineConfig.fromJson("{\"rdma\":{\"provider\":\"" + provider + "\"}}")
              .rdma()
              .provider());
      assertEquals(provider, RdmaConfig.defaults().withProvider(provider).provider());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "soft", "Software", "NATIVE", "verbs", " native"})
  void anUnknownProviderIsRejectedListingTheAcceptedOnes(String provider) {
    String message =
        "rdma.provider: must be one of \"software\", \"native\", got " + Checks.quote(provider);
    assertEquals(
        message,
        assertJsonRejected(
                "{\"rdma\":{\"provider\":" + Checks.quote(provider) + "}}",
                "rdma.provider",
                "rdma.provider: ")
            .getMessage());
    assertEquals(
        message,
        assertRejected(
                "rdma.provider",
                "rdma.provider: ",
                () -> RdmaConfig.defaults().withProvider(provider))
            .getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"rdma\":{\"provider\":1}}               | rdma.provider        | rdma.provider: expected a string, got integer 1",
        "{\"rdma\":{\"provider\":null}}            | rdma.provider        | rdma.provider: expected a string, got null",
        "{\"rdma\":{\"softwareAddress\":[]}}       | rdma.softwareAddress | rdma.softwareAddress: expected a string, got array",
        "{\"rdma\":{\"devices\":\"mlx5_0\"}}       | rdma.devices         | rdma.devices: expected an array of strings, got string \"mlx5_0\"",
        "{\"rdma\":{\"devices\":null}}             | rdma.devices         | rdma.devices: expected an array of strings, got null",
        "{\"rdma\":{\"devices\":{}}}               | rdma.devices         | rdma.devices: expected an array of strings, got object",
        "{\"rdma\":{\"devices\":[1]}}              | rdma.devices[0]      | rdma.devices[0]: expected a string, got integer 1",
        "{\"rdma\":{\"devices\":[\"a\",null]}}     | rdma.devices[1]      | rdma.devices[1]: expected a string, got null",
        "{\"rdma\":{\"devices\":[\"a\",[\"b\"]]}}  | rdma.devices[1]      | rdma.devices[1]: expected a string, got array",
        "{\"rdma\":{\"devices\":[\"a\",\" \"]}}    | rdma.devices[1]      | rdma.devices[1]: must not be blank, got \" \"",
        "{\"rdma\":{\"devices\":[\"\"]}}           | rdma.devices[0]      | rdma.devices[0]: must not be blank, got \"\"",
        "{\"rdma\":{\"devices\":[\"a\",\"b\",\"a\"]}} | rdma.devices[2]   | rdma.devices[2]: must differ from every other device, got \"a\" again (first at rdma.devices[0])",
      })
  void aWrongTypeOrAnInvalidDeviceIsRejectedNamingItsPath(
      String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  @Test
  void devicesAreReadInOrder() {
    assertEquals(
        List.of("mlx5_1", "mlx5_0", "soft0"),
        EngineConfig.fromJson("{\"rdma\":{\"devices\":[\"mlx5_1\",\"mlx5_0\",\"soft0\"]}}")
            .rdma()
            .devices());
    assertEquals(List.of(), EngineConfig.fromJson("{\"rdma\":{\"devices\":[]}}").rdma().devices());
  }

  private static List<String> names(int count) {
    return IntStream.range(0, count).mapToObj(i -> "dev" + i).toList();
  }

  private static String devicesDocument(List<String> devices) {
    return "{\"rdma\":{\"devices\":["
        + String.join(",", devices.stream().map(Checks::quote).toList())
        + "]}}";
  }

  @Test
  void sixteenDevicesAreAcceptedAndSeventeenRejected() {
    assertEquals(names(16), RdmaConfig.defaults().withDevices(names(16)).devices());
    assertEquals(names(16), EngineConfig.fromJson(devicesDocument(names(16))).rdma().devices());
    String message = "rdma.devices: must hold at most 16 device names, got 17";
    assertEquals(
        message,
        assertJsonRejected(devicesDocument(names(17)), "rdma.devices", "rdma.devices: ")
            .getMessage());
    assertEquals(
        message,
        assertRejected(
                "rdma.devices",
                "rdma.devices: ",
                () -> RdmaConfig.defaults().withDevices(names(17)))
            .getMessage());
  }

  @Test
  void aNullListOrNameIsRejectedNamingItsPath() {
    assertEquals(
        "rdma.devices: must not be null",
        assertThrows(ConfigException.class, () -> RdmaConfig.defaults().withDevices(null))
            .getMessage());
    assertEquals(
        "rdma.devices[1]: must not be null",
        assertThrows(
                ConfigException.class,
                () -> RdmaConfig.defaults().withDevices(Arrays.asList("a", null)))
            .getMessage());
    assertEquals(
        "rdma.provider: must not be null",
        assertThrows(ConfigException.class, () -> RdmaConfig.defaults().withProvider(null))
            .getMessage());
  }

  @Test
  void theDeviceListIsCopiedAndImmutable() {
    List<String> devices = new ArrayList<>(List.of("mlx5_0"));
    RdmaConfig config = RdmaConfig.defaults().withDevices(devices);
    devices.add("mlx5_1");
    assertEquals(List.of("mlx5_0"), config.devices());
    assertThrows(UnsupportedOperationException.class, () -> config.devices().add("x"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"127.0.0.1", "0.0.0.0", "10.0.0.2", "192.168.100.200", "255.255.255.255"})
  void aDottedIpv4SoftwareAddressIsAccepted(String address) {
    assertEquals(
        address,
        EngineConfig.fromJson("{\"rdma\":{\"softwareAddress\":\"" + address + "\"}}")
            .rdma()
            .softwareAddress());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "localhost",
        "::1",
        "127.0.0",
        "127.0.0.1.1",
        "256.0.0.1",
        "1.2.3.300",
        "01.2.3.4",
        "127.0.0.1 ",
        "127.0.0.1:80",
        "1..2.3",
        "-1.2.3.4",
        "١٢٧.0.0.1"
      })
  void aSoftwareAddressThatIsNotADottedIpv4LiteralIsRejected(String address) {
    assertEquals(
        "rdma.softwareAddress: must be a dotted IPv4 address such as \"127.0.0.1\", got "
            + Checks.quote(address),
        assertJsonRejected(
                "{\"rdma\":{\"softwareAddress\":" + Checks.quote(address) + "}}",
                "rdma.softwareAddress",
                "rdma.softwareAddress: ")
            .getMessage());
  }

  @Test
  void aNullSoftwareAddressIsRejected() {
    RdmaConfig d = RdmaConfig.defaults();
    assertRejected(
        "rdma.softwareAddress",
        "rdma.softwareAddress: must not be null",
        () ->
            new RdmaConfig(
                d.enabled(),
                d.provider(),
                d.devices(),
                d.lanes(),
                null,
                d.softwareDevices(),
                d.maxEndpoints(),
                d.maxGrants(),
                d.maxSendWr(),
                d.maxCqes(),
                d.railErrors(),
                d.railErrorWindowMillis(),
                d.railCooldownMillis(),
                d.railMaxCooldownMillis(),
                d.railProbeIntervalMillis(),
                d.priorityAgingMillis(),
                d.priorityAgingPerEntry(),
                d.softwareAddresses(),
                d.gidIndex(),
                d.maxDirectBytes(),
                d.selection()));
  }

  @Test
  void copyMethodsChangeOnlyTheirOwnComponent() {
    RdmaConfig d = RdmaConfig.defaults();
    assertEquals(
        new RdmaConfig(
            true,
            "software",
            List.of(),
            2,
            "127.0.0.1",
            2,
            64,
            1024,
            1024,
            32768,
            3,
            10000,
            30000,
            300000,
            1000,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        d.withEnabled(true));
    assertEquals(
        new RdmaConfig(
            false,
            "native",
            List.of(),
            2,
            "127.0.0.1",
            2,
            64,
            1024,
            1024,
            32768,
            3,
            10000,
            30000,
            300000,
            1000,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        d.withProvider("native"));
    assertEquals(
        new RdmaConfig(
            false,
            "software",
            List.of("a", "b"),
            2,
            "127.0.0.1",
            2,
            64,
            1024,
            1024,
            32768,
            3,
            10000,
            30000,
            300000,
            1000,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        d.withDevices(List.of("a", "b")));
    assertEquals(
        new RdmaConfig(
            false,
            "software",
            List.of(),
            5,
            "127.0.0.1",
            2,
            64,
            1024,
            1024,
            32768,
            3,
            10000,
            30000,
            300000,
            1000,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        d.withLanes(5));
    assertEquals(
        new RdmaConfig(
            false,
            "software",
            List.of(),
            2,
            "127.0.0.1",
            7,
            64,
            1024,
            1024,
            32768,
            3,
            10000,
            30000,
            300000,
            1000,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        d.withSoftwareDevices(7));
    assertEquals(RdmaConfig.defaults(), d, "the original is unchanged");
  }

  @Test
  void aConfigWithDevicesSurvivesTheRoundTrip() {
    EngineConfig config =
        EngineConfig.defaults()
            .withRdma(
                RdmaConfig.defaults()
                    .withEnabled(true)
                    .withProvider("native")
                    .withDevices(List.of("mlx5_0", "mlx5_1", "mlx5_\"q\""))
                    .withLanes(16)
                    .withSoftwareDevices(1));
    assertEquals(config, EngineConfig.fromJson(config.toJson()));
    assertEquals(config.toJson(), EngineConfig.fromJson(config.toJson()).toJson());
  }

  @Test
  void theRailCircuitDefaultsAreTheReferences() {
    RdmaConfig d = RdmaConfig.defaults();
    assertEquals(3, d.railErrors());
    assertEquals(10000, d.railErrorWindowMillis());
    assertEquals(30000, d.railCooldownMillis());
    assertEquals(300000, d.railMaxCooldownMillis());
    assertEquals(1000, d.railProbeIntervalMillis());
  }

  @ParameterizedTest
  @CsvSource({"30000, 29999", "30000, 1", "3600000, 3599999", "2, 1"})
  void aMaxCooldownBelowTheCooldownIsRejectedGivingBoth(int cooldown, int maxCooldown) {
    String message =
        "rdma.railMaxCooldownMillis: must be at least rdma.railCooldownMillis ("
            + cooldown
            + "), got "
            + maxCooldown;
    assertEquals(
        message,
        assertRejected(
                "rdma.railMaxCooldownMillis",
                "rdma.railMaxCooldownMillis: ",
                () -> RdmaConfig.defaults().withRailPolicy(3, 10000, cooldown, maxCooldown, 1000))
            .getMessage());
    assertEquals(
        message,
        assertJsonRejected(
                "{\"rdma\":{\"railCooldownMillis\":"
                    + cooldown
                    + ",\"railMaxCooldownMillis\":"
                    + maxCooldown
                    + "}}",
                "rdma.railMaxCooldownMillis",
                "rdma.railMaxCooldownMillis: ")
            .getMessage());
  }

  @Test
  void oneThresholdAgainstTheOthersDefaultIsCheckedToo() {
    assertEquals(
        "rdma.railMaxCooldownMillis: must be at least rdma.railCooldownMillis (300001), got 300000",
        assertJsonRejected(
                "{\"rdma\":{\"railCooldownMillis\":300001}}",
                "rdma.railMaxCooldownMillis",
                "rdma.railMaxCooldownMillis: ")
            .getMessage());
    assertEquals(
        "rdma.railMaxCooldownMillis: must be at least rdma.railCooldownMillis (30000), got 29999",
        assertJsonRejected(
                "{\"rdma\":{\"railMaxCooldownMillis\":29999}}",
                "rdma.railMaxCooldownMillis",
                "rdma.railMaxCooldownMillis: ")
            .getMessage());
    RdmaConfig d = RdmaConfig.defaults();
    assertRejected(
        "rdma.railMaxCooldownMillis",
        "rdma.railMaxCooldownMillis: must be at least rdma.railCooldownMillis (30000), got 29999",
        () ->
            new RdmaConfig(
                d.enabled(),
                d.provider(),
                d.devices(),
                d.lanes(),
                d.softwareAddress(),
                d.softwareDevices(),
                d.maxEndpoints(),
                d.maxGrants(),
                d.maxSendWr(),
                d.maxCqes(),
                d.railErrors(),
                d.railErrorWindowMillis(),
                30000,
                29999,
                d.railProbeIntervalMillis(),
                d.priorityAgingMillis(),
                d.priorityAgingPerEntry(),
                d.softwareAddresses(),
                d.gidIndex(),
                d.maxDirectBytes(),
                d.selection()));
  }

  @Test
  void aMaxCooldownEqualToTheCooldownIsAccepted() {
    RdmaConfig equal = RdmaConfig.defaults().withRailPolicy(3, 10000, 60000, 60000, 1000);
    assertEquals(60000, equal.railCooldownMillis());
    assertEquals(60000, equal.railMaxCooldownMillis());
    RdmaConfig read =
        EngineConfig.fromJson(
                "{\"rdma\":{\"railCooldownMillis\":400000,\"railMaxCooldownMillis\":400000}}")
            .rdma();
    assertEquals(400000, read.railCooldownMillis());
    assertEquals(400000, read.railMaxCooldownMillis());
  }

  @Test
  void aValueOutsideItsOwnRangeIsReportedBeforeTheCrossFieldRule() {
    assertRejected(
        "rdma.railMaxCooldownMillis",
        "rdma.railMaxCooldownMillis: must be 1..86400000, got 0",
        () -> RdmaConfig.defaults().withRailPolicy(3, 10000, 30000, 0, 1000));
    assertRejected(
        "rdma.railCooldownMillis",
        "rdma.railCooldownMillis: must be 1..3600000, got 3600001",
        () -> RdmaConfig.defaults().withRailPolicy(3, 10000, 3600001, 1, 1000));
  }

  @Test
  void withRailPolicyReplacesTheFiveThresholdsAndKeepsTheRest() {
    RdmaConfig base =
        RdmaConfig.defaults()
            .withEnabled(true)
            .withProvider("native")
            .withDevices(List.of("mlx5_0"))
            .withLanes(4)
            .withSoftwareDevices(3);
    RdmaConfig changed = base.withRailPolicy(7, 20000, 500, 4000, 0);
    assertEquals(
        new RdmaConfig(
            true,
            "native",
            List.of("mlx5_0"),
            4,
            "127.0.0.1",
            3,
            64,
            1024,
            1024,
            32768,
            7,
            20000,
            500,
            4000,
            0,
            10,
            false,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        changed);
    assertEquals(3, base.railErrors(), "the original is unchanged");
    assertEquals(
        base,
        changed.withRailPolicy(3, 10000, 30000, 300000, 1000),
        "the defaults' thresholds give the original back");
    assertEquals(
        RdmaConfig.defaults(), RdmaConfig.defaults().withRailPolicy(3, 10000, 30000, 300000, 1000));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "0,       10000,   30000,   300000,   1000    | rdma.railErrors              | rdma.railErrors: must be 1..1000, got 0",
        "1001,    10000,   30000,   300000,   1000    | rdma.railErrors              | rdma.railErrors: must be 1..1000, got 1001",
        "3,       0,       30000,   300000,   1000    | rdma.railErrorWindowMillis   | rdma.railErrorWindowMillis: must be 1..3600000, got 0",
        "3,       10000,   0,       300000,   1000    | rdma.railCooldownMillis      | rdma.railCooldownMillis: must be 1..3600000, got 0",
        "3,       10000,   30000,   86400001, 1000    | rdma.railMaxCooldownMillis   | rdma.railMaxCooldownMillis: must be 1..86400000, got 86400001",
        "3,       10000,   30000,   300000,   -1      | rdma.railProbeIntervalMillis | rdma.railProbeIntervalMillis: must be 0..3600000, got -1",
        "3,       10000,   30000,   300000,   3600001 | rdma.railProbeIntervalMillis | rdma.railProbeIntervalMillis: must be 0..3600000, got 3600001",
        "0,       0,       0,       0,        -1      | rdma.railErrors              | rdma.railErrors: must be 1..1000, got 0",
      })
  void withRailPolicyChecksEachValueAsTheConstructorDoes(
      String values, String path, String message) {
    int[] v =
        Arrays.stream(values.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
    assertEquals(
        message,
        assertRejected(
                path,
                path + ": ",
                () -> RdmaConfig.defaults().withRailPolicy(v[0], v[1], v[2], v[3], v[4]))
            .getMessage());
  }

  @Test
  void aZeroProbeIntervalIsAcceptedAndTheThresholdsSurviveTheRoundTrip() {
    EngineConfig config =
        EngineConfig.defaults()
            .withRdma(RdmaConfig.defaults().withRailPolicy(1000, 1, 1, 86400000, 0));
    assertEquals(0, config.rdma().railProbeIntervalMillis());
    assertEquals(config, EngineConfig.fromJson(config.toJson()));
    assertEquals(
        0,
        EngineConfig.fromJson("{\"rdma\":{\"railProbeIntervalMillis\":0}}")
            .rdma()
            .railProbeIntervalMillis());
  }

  @Test
  void thePriorityAgingDefaultsAreTheReferences() {
    RdmaConfig d = RdmaConfig.defaults();
    assertEquals(10, d.priorityAgingMillis());
    assertEquals(false, d.priorityAgingPerEntry());
    RdmaConfig empty = EngineConfig.fromJson("{\"rdma\":{}}").rdma();
    assertEquals(10, empty.priorityAgingMillis());
    assertEquals(false, empty.priorityAgingPerEntry());
  }

  @Test
  void withPriorityAgingReplacesTheTwoAndKeepsTheRest() {
    RdmaConfig base =
        RdmaConfig.defaults()
            .withEnabled(true)
            .withProvider("native")
            .withDevices(List.of("mlx5_0"))
            .withLanes(4)
            .withSoftwareDevices(3)
            .withRailPolicy(7, 20000, 500, 4000, 0);
    RdmaConfig changed = base.withPriorityAging(250, true);
    assertEquals(
        new RdmaConfig(
            true,
            "native",
            List.of("mlx5_0"),
            4,
            "127.0.0.1",
            3,
            64,
            1024,
            1024,
            32768,
            7,
            20000,
            500,
            4000,
            0,
            250,
            true,
            List.of(),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        changed);
    assertEquals(10, base.priorityAgingMillis(), "the original is unchanged");
    assertEquals(false, base.priorityAgingPerEntry(), "the original is unchanged");
    assertEquals(
        base, changed.withPriorityAging(10, false), "the defaults' aging gives the original back");
    assertEquals(RdmaConfig.defaults(), RdmaConfig.defaults().withPriorityAging(10, false));
    assertEquals(
        base.withRailPolicy(3, 10000, 30000, 300000, 1000).withPriorityAging(250, true),
        changed.withRailPolicy(3, 10000, 30000, 300000, 1000),
        "the rail circuit's copy method keeps the aging");
  }

  @Test
  void eachAgingKeyIsReadAloneAndKeepsTheOthersDefault() {
    RdmaConfig perEntry =
        EngineConfig.fromJson("{\"rdma\":{\"priorityAgingPerEntry\":true}}").rdma();
    assertEquals(RdmaConfig.defaults().withPriorityAging(10, true), perEntry);
    RdmaConfig millis = EngineConfig.fromJson("{\"rdma\":{\"priorityAgingMillis\":60000}}").rdma();
    assertEquals(RdmaConfig.defaults().withPriorityAging(60000, false), millis);
    RdmaConfig both =
        EngineConfig.fromJson(
                "{\"rdma\":{\"priorityAgingPerEntry\":true,\"priorityAgingMillis\":1}}")
            .rdma();
    assertEquals(RdmaConfig.defaults().withPriorityAging(1, true), both);
  }

  @ParameterizedTest
  @CsvSource({
    "0,           false",
    "0,           true",
    "-1,          false",
    "60001,       true",
    "-2147483648, false",
    "2147483647,  true"
  })
  void withPriorityAgingChecksTheTimeoutAsTheConstructorDoes(int millis, boolean perEntry) {
    assertEquals(
        "rdma.priorityAgingMillis: must be 1..60000, got " + millis,
        assertRejected(
                "rdma.priorityAgingMillis",
                "rdma.priorityAgingMillis: ",
                () -> RdmaConfig.defaults().withPriorityAging(millis, perEntry))
            .getMessage());
  }

  @ParameterizedTest
  @CsvSource({"1, true", "1, false", "60000, true", "60000, false", "10, true"})
  void theAgingSurvivesTheRoundTrip(int millis, boolean perEntry) {
    EngineConfig config =
        EngineConfig.defaults().withRdma(RdmaConfig.defaults().withPriorityAging(millis, perEntry));
    String json = config.toJson();
    assertEquals(config, EngineConfig.fromJson(json));
    assertEquals(json, EngineConfig.fromJson(json).toJson());
    assertEquals(
        true,
        json.contains(
            "\"priorityAgingMillis\": " + millis + ",\n    \"priorityAgingPerEntry\": " + perEntry),
        json);
  }

  @Test
  void softwareAddressesAreReadInOrder() {
    assertEquals(
        List.of("10.0.1.1", "10.0.0.1", "127.0.0.1"),
        EngineConfig.fromJson(
                "{\"rdma\":{\"softwareAddresses\":[\"10.0.1.1\",\"10.0.0.1\",\"127.0.0.1\"]}}")
            .rdma()
            .softwareAddresses());
    assertEquals(
        List.of(),
        EngineConfig.fromJson("{\"rdma\":{\"softwareAddresses\":[]}}").rdma().softwareAddresses());
    assertEquals(
        RdmaConfig.defaults().withSoftwareAddresses(List.of("10.0.0.1")),
        EngineConfig.fromJson("{\"rdma\":{\"softwareAddresses\":[\"10.0.0.1\"]}}").rdma(),
        "the key alone keeps every other default");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"rdma":{"softwareAddresses":"10.0.0.1"}}            | rdma.softwareAddresses    | rdma.softwareAddresses: expected an array of strings, got string "10.0.0.1"
          {"rdma":{"softwareAddresses":null}}                  | rdma.softwareAddresses    | rdma.softwareAddresses: expected an array of strings, got null
          {"rdma":{"softwareAddresses":{}}}                    | rdma.softwareAddresses    | rdma.softwareAddresses: expected an array of strings, got object
          {"rdma":{"softwareAddresses":[1]}}                   | rdma.softwareAddresses[0] | rdma.softwareAddresses[0]: expected a string, got integer 1
          {"rdma":{"softwareAddresses":["10.0.0.1",null]}}     | rdma.softwareAddresses[1] | rdma.softwareAddresses[1]: expected a string, got null
          {"rdma":{"softwareAddresses":["10.0.0.1","host"]}}   | rdma.softwareAddresses[1] | rdma.softwareAddresses[1]: must be a dotted IPv4 address such as "127.0.0.1", got "host"
          {"rdma":{"softwareAddresses":[""]}}                  | rdma.softwareAddresses[0] | rdma.softwareAddresses[0]: must be a dotted IPv4 address such as "127.0.0.1", got ""
          {"rdma":{"softwareAddresses":["01.2.3.4"]}}          | rdma.softwareAddresses[0] | rdma.softwareAddresses[0]: must be a dotted IPv4 address such as "127.0.0.1", got "01.2.3.4"
          {"rdma":{"softwareAddresses":["10.0.0.1","10.0.0.2","10.0.0.1"]}} | rdma.softwareAddresses[2] | rdma.softwareAddresses[2]: must differ from every other address, got "10.0.0.1" again (first at rdma.softwareAddresses[0])
          """)
  void aWrongTypeOrAnInvalidSoftwareAddressIsRejectedNamingItsPath(
      String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"rdma":{"selection":[]}}                                   | rdma.selection                 | rdma.selection: expected an object, got array
          {"rdma":{"selection":{"mask":[]}}}                          | rdma.selection.mask            | rdma.selection.mask: unknown key (known: deviceMask, preferredNumaNode, strictLocalNuma, customJsonPath, priorityMatrix)
          {"rdma":{"selection":{"deviceMask":"soft0"}}}               | rdma.selection.deviceMask      | rdma.selection.deviceMask: expected an array of strings, got string "soft0"
          {"rdma":{"selection":{"deviceMask":["soft0",1]}}}           | rdma.selection.deviceMask[1]   | rdma.selection.deviceMask[1]: expected a string, got integer 1
          {"rdma":{"selection":{"deviceMask":[" "]}}}                 | rdma.selection.deviceMask[0]   | rdma.selection.deviceMask[0]: must not be blank, got " "
          {"rdma":{"selection":{"deviceMask":["soft0","soft0"]}}}     | rdma.selection.deviceMask[1]   | rdma.selection.deviceMask[1]: must differ from every other device, got "soft0" again (first at rdma.selection.deviceMask[0])
          {"rdma":{"selection":{"strictLocalNuma":"true"}}}           | rdma.selection.strictLocalNuma | rdma.selection.strictLocalNuma: expected a boolean, got string "true"
          {"rdma":{"selection":{"customJsonPath":7}}}                 | rdma.selection.customJsonPath  | rdma.selection.customJsonPath: expected a string, got integer 7
          """)
  void aWrongSelectionIsRejectedNamingItsPath(String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  @Test
  void aDeviceMaskOrTopologyPathBeyondItsLimitIsRejected() {
    List<String> names = new java.util.ArrayList<>();
    for (int i = 0; i < 65; i++) {
      names.add("mlx5_" + i);
    }
    RdmaSelectionConfig d = RdmaSelectionConfig.defaults();
    assertEquals(
        "rdma.selection.deviceMask: must hold at most 64 device names, got 65",
        assertThrows(ConfigException.class, () -> d.withDeviceMask(names)).getMessage());
    assertEquals(names.subList(0, 64), d.withDeviceMask(names.subList(0, 64)).deviceMask());
    String tooLong = "/" + "a".repeat(4096);
    assertEquals(
        "rdma.selection.customJsonPath: must be at most 4096 characters, got 4097",
        assertThrows(ConfigException.class, () -> d.withCustomJsonPath(tooLong)).getMessage());
    assertEquals(
        "rdma.selection.customJsonPath: must not be null",
        assertThrows(ConfigException.class, () -> d.withCustomJsonPath(null)).getMessage());
    assertEquals(
        "rdma.selection: must not be null",
        assertThrows(ConfigException.class, () -> RdmaConfig.defaults().withSelection(null))
            .getMessage());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "localhost",
        "::1",
        "127.0.0",
        "127.0.0.1.1",
        "256.0.0.1",
        "01.2.3.4",
        "127.0.0.1 ",
        "127.0.0.1:80",
        "١٢٧.0.0.1"
      })
  void aSoftwareAddressesEntryIsCheckedAsSoftwareAddressIs(String address) {
    String message =
        "must be a dotted IPv4 address such as \"127.0.0.1\", got " + Checks.quote(address);
    assertEquals(
        "rdma.softwareAddress: " + message,
        assertThrows(
                ConfigException.class,
                () ->
                    EngineConfig.fromJson(
                        "{\"rdma\":{\"softwareAddress\":" + Checks.quote(address) + "}}"))
            .getMessage());
    assertEquals(
        "rdma.softwareAddresses[1]: " + message,
        assertRejected(
                "rdma.softwareAddresses[1]",
                "rdma.softwareAddresses[1]: ",
                () -> RdmaConfig.defaults().withSoftwareAddresses(List.of("10.0.0.1", address)))
            .getMessage());
  }

  private static List<String> addresses(int count) {
    return IntStream.range(0, count).mapToObj(i -> "10.0." + i + ".1").toList();
  }

  private static String addressesDocument(List<String> addresses) {
    return "{\"rdma\":{\"softwareAddresses\":["
        + String.join(",", addresses.stream().map(Checks::quote).toList())
        + "]}}";
  }

  @Test
  void eightSoftwareAddressesAreAcceptedAndNineRejected() {
    assertEquals(
        addresses(8),
        RdmaConfig.defaults().withSoftwareAddresses(addresses(8)).softwareAddresses());
    assertEquals(
        addresses(8),
        EngineConfig.fromJson(addressesDocument(addresses(8))).rdma().softwareAddresses());
    String message = "rdma.softwareAddresses: must hold at most 8 addresses, got 9";
    assertEquals(
        message,
        assertJsonRejected(
                addressesDocument(addresses(9)),
                "rdma.softwareAddresses",
                "rdma.softwareAddresses: ")
            .getMessage());
    assertEquals(
        message,
        assertRejected(
                "rdma.softwareAddresses",
                "rdma.softwareAddresses: ",
                () -> RdmaConfig.defaults().withSoftwareAddresses(addresses(9)))
            .getMessage());
  }

  @Test
  void aNullAddressListOrAddressIsRejectedNamingItsPath() {
    assertEquals(
        "rdma.softwareAddresses: must not be null",
        assertThrows(ConfigException.class, () -> RdmaConfig.defaults().withSoftwareAddresses(null))
            .getMessage());
    assertEquals(
        "rdma.softwareAddresses[1]: must not be null",
        assertThrows(
                ConfigException.class,
                () -> RdmaConfig.defaults().withSoftwareAddresses(Arrays.asList("10.0.0.1", null)))
            .getMessage());
  }

  @Test
  void theAddressListIsCopiedAndImmutable() {
    List<String> addresses = new ArrayList<>(List.of("10.0.0.1"));
    RdmaConfig config = RdmaConfig.defaults().withSoftwareAddresses(addresses);
    addresses.add("10.0.1.1");
    assertEquals(List.of("10.0.0.1"), config.softwareAddresses());
    assertThrows(
        UnsupportedOperationException.class, () -> config.softwareAddresses().add("10.0.2.1"));
  }

  @Test
  void withSoftwareAddressesReplacesTheListAndKeepsTheRest() {
    RdmaConfig base =
        RdmaConfig.defaults()
            .withEnabled(true)
            .withProvider("native")
            .withDevices(List.of("mlx5_0"))
            .withLanes(4)
            .withSoftwareDevices(3)
            .withRailPolicy(7, 20000, 500, 4000, 0)
            .withPriorityAging(250, true);
    RdmaConfig changed = base.withSoftwareAddresses(List.of("10.0.0.1", "10.0.1.1"));
    assertEquals(
        new RdmaConfig(
            true,
            "native",
            List.of("mlx5_0"),
            4,
            "127.0.0.1",
            3,
            64,
            1024,
            1024,
            32768,
            7,
            20000,
            500,
            4000,
            0,
            250,
            true,
            List.of("10.0.0.1", "10.0.1.1"),
            RdmaConfig.DEFAULT_GID_INDEX,
            RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
            RdmaSelectionConfig.defaults()),
        changed);
    assertEquals(List.of(), base.softwareAddresses(), "the original is unchanged");
    assertEquals(base, changed.withSoftwareAddresses(List.of()), "empty gives the original back");
  }

  @Test
  void everyOtherCopyMethodKeepsTheAddresses() {
    List<String> two = List.of("10.0.0.1", "10.0.1.1");
    RdmaConfig base = RdmaConfig.defaults().withSoftwareAddresses(two);
    for (RdmaConfig copy :
        List.of(
            base.withEnabled(true),
            base.withProvider("native"),
            base.withDevices(List.of("a")),
            base.withLanes(5),
            base.withSoftwareDevices(7),
            base.withRailPolicy(5, 20000, 1000, 8000, 0),
            base.withPriorityAging(25, true))) {
      assertEquals(two, copy.softwareAddresses(), copy::toString);
    }
  }

  @Test
  void softwareAddressOfIsTheSoftwareAddressWhenTheListIsEmpty() {
    RdmaConfig d = RdmaConfig.defaults();
    for (int device = 0; device < 10; device++) {
      assertEquals("127.0.0.1", d.softwareAddressOf(device));
    }
    RdmaConfig moved =
        EngineConfig.fromJson("{\"rdma\":{\"softwareAddress\":\"10.9.9.9\"}}").rdma();
    assertEquals("10.9.9.9", moved.softwareAddressOf(0));
    assertEquals("10.9.9.9", moved.softwareAddressOf(7));
  }

  @Test
  void softwareAddressOfTakesEntryIModuloTheListsLength() {
    RdmaConfig two =
        RdmaConfig.defaults()
            .withSoftwareDevices(4)
            .withSoftwareAddresses(List.of("10.0.0.1", "10.0.1.1"));
    assertEquals("10.0.0.1", two.softwareAddressOf(0));
    assertEquals("10.0.1.1", two.softwareAddressOf(1));
    assertEquals("10.0.0.1", two.softwareAddressOf(2));
    assertEquals("10.0.1.1", two.softwareAddressOf(3));
    assertEquals("10.0.1.1", two.softwareAddressOf(Integer.MAX_VALUE));
    RdmaConfig one = RdmaConfig.defaults().withSoftwareAddresses(List.of("10.0.0.1"));
    assertEquals("10.0.0.1", one.softwareAddressOf(5), "one entry serves every device");
    RdmaConfig eight = RdmaConfig.defaults().withSoftwareAddresses(addresses(8));
    for (int device = 0; device < 16; device++) {
      assertEquals(addresses(8).get(device % 8), eight.softwareAddressOf(device));
    }
    assertEquals(
        "127.0.0.1", two.softwareAddress(), "softwareAddress is kept but no device uses it");
  }

  @Test
  void softwareAddressOfRejectsANegativeDevice() {
    RdmaConfig two = RdmaConfig.defaults().withSoftwareAddresses(List.of("10.0.0.1", "10.0.1.1"));
    assertEquals(
        "device must be non-negative, got -1",
        assertThrows(IllegalArgumentException.class, () -> two.softwareAddressOf(-1)).getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> RdmaConfig.defaults().softwareAddressOf(Integer.MIN_VALUE));
  }

  @Test
  void theSoftwareAddressesSurviveTheRoundTrip() {
    EngineConfig config =
        EngineConfig.defaults()
            .withRdma(
                RdmaConfig.defaults()
                    .withEnabled(true)
                    .withSoftwareAddresses(List.of("10.0.0.1", "10.0.1.1")));
    String json = config.toJson();
    assertEquals(config, EngineConfig.fromJson(json));
    assertEquals(json, EngineConfig.fromJson(json).toJson());
    assertEquals(
        true,
        json.contains(
            "\"priorityAgingPerEntry\": false,\n"
                + "    \"softwareAddresses\": [\n"
                + "      \"10.0.0.1\",\n"
                + "      \"10.0.1.1\"\n"
                + "    ],\n"),
        json);
  }
}
