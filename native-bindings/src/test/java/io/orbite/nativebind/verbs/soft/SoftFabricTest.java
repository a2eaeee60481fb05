package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.nativebind.verbs.Ibv;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The configuration refuses what no device could be. */
class SoftFabricTest {
  @Test
  void devicesAreNamedInOrderAndValidated() {
    SoftFabric f = SoftFabric.onAddress("127.0.0.1", 3);
    assertEquals(
        List.of("soft0", "soft1", "soft2"),
        f.devices().stream().map(SoftFabric.DeviceSpec::name).toList());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            SoftFabric.of(
                List.of(
                    SoftFabric.DeviceSpec.of("a", "127.0.0.1", 1),
                    SoftFabric.DeviceSpec.of("a", "127.0.0.1", 2))));
    assertThrows(
        IllegalArgumentException.class, () -> SoftFabric.DeviceSpec.of("a", "::1", 1), "IPv4 only");
    assertThrows(
        IllegalArgumentException.class,
        () -> new SoftFabric.PortSpec(Ibv.PORT_INIT, 2, 32, Ibv.MTU_4096));
    assertThrows(
        IllegalArgumentException.class,
        () -> SoftFabric.DeviceSpec.of("a", "127.0.0.1", 1, List.of()));
  }
}
