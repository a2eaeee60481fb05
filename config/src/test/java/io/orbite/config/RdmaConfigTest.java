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
 * The {@code rdma} section's keys that are not numbers: the provider names, the device list and the
 * software provider's address. Its numeric keys are in {@link NumericKey}.
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
                d.maxCqes()));
  }

  @Test
  void copyMethodsChangeOnlyTheirOwnComponent() {
    RdmaConfig d = RdmaConfig.defaults();
    assertEquals(
        new RdmaConfig(true, "software", List.of(), 2, "127.0.0.1", 2, 64, 64, 16, 1024),
        d.withEnabled(true));
    assertEquals(
        new RdmaConfig(false, "native", List.of(), 2, "127.0.0.1", 2, 64, 64, 16, 1024),
        d.withProvider("native"));
    assertEquals(
        new RdmaConfig(false, "software", List.of("a", "b"), 2, "127.0.0.1", 2, 64, 64, 16, 1024),
        d.withDevices(List.of("a", "b")));
    assertEquals(
        new RdmaConfig(false, "software", List.of(), 5, "127.0.0.1", 2, 64, 64, 16, 1024),
        d.withLanes(5));
    assertEquals(
        new RdmaConfig(false, "software", List.of(), 2, "127.0.0.1", 7, 64, 64, 16, 1024),
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
}
