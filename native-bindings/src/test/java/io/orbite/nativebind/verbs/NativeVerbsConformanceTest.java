package io.orbite.nativebind.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link RcConformance} against {@link NativeVerbs#system()}: the same provider-agnostic tests the
 * soft provider passes, on a real RDMA device. Both ends are in this JVM, each with its own
 * context: on one device (RC loopback through one HCA), or the peer on a second device when {@code
 * ORBITE_RDMA_DEVICE2} names one.
 *
 * <p>The device: {@code ORBITE_RDMA_DEVICE} (a name such as {@code mlx5_0}; default the first
 * listed), {@code ORBITE_RDMA_PORT} (default 1) and {@code ORBITE_RDMA_GID_INDEX} (default 0; on
 * RoCE, the index of the GID to speak from); the peer's {@code ORBITE_RDMA_PORT2} and {@code
 * ORBITE_RDMA_GID_INDEX2} default to the same. Without a usable library or device (no RDMA
 * subsystem, no device listed, the named device absent) every test is skipped by an assumption that
 * states why and how to run it, and the reason is printed on stderr: a machine without RDMA
 * hardware, CI included, is expected, so this is a skip, never a failure. A device that is there
 * but whose port is not ACTIVE fails, naming it.
 */
class NativeVerbsConformanceTest extends RcConformance<VerbsEnd> {
  private static final String HOW =
      "run on a machine with an RDMA device: ORBITE_RDMA_DEVICE=mlx5_0 ./orbite test -pl"
          + " native-bindings -Dtest=NativeVerbsConformanceTest";

  private static Optional<String> skip = Optional.empty();
  private static Verbs.Device device;
  private static Verbs.Device device2;
  private static int port;
  private static int port2;
  private static int gidIndex;
  private static int gidIndex2;

  @BeforeAll
  static void findDevice() {
    NativeVerbs verbs = NativeVerbs.system();
    Optional<String> cause = verbs.unavailabilityCause();
    if (cause.isPresent()) {
      skip = Optional.of("no RDMA device here: " + cause.get() + "; " + HOW);
    } else {
      List<Verbs.Device> listed = verbs.getDeviceList().value();
      port = intEnv("ORBITE_RDMA_PORT", 1);
      gidIndex = intEnv("ORBITE_RDMA_GID_INDEX", 0);
      port2 = intEnv("ORBITE_RDMA_PORT2", port);
      gidIndex2 = intEnv("ORBITE_RDMA_GID_INDEX2", gidIndex);
      Optional<Verbs.Device> first = named(listed, "ORBITE_RDMA_DEVICE", listed.get(0));
      Optional<Verbs.Device> second = named(listed, "ORBITE_RDMA_DEVICE2", first.orElse(null));
      if (first.isEmpty() || second.isEmpty()) {
        String env = first.isEmpty() ? "ORBITE_RDMA_DEVICE" : "ORBITE_RDMA_DEVICE2";
        skip =
            Optional.of(
                "no RDMA device "
                    + System.getenv(env)
                    + " ("
                    + env
                    + ") here; listed: "
                    + listed.stream().map(Verbs.Device::name).toList()
                    + "; "
                    + HOW);
      } else {
        device = first.get();
        device2 = second.get();
      }
    }
    skip.ifPresent(
        why ->
            System.err.println("NOT RUN (NativeVerbsConformanceTest, no RDMA hardware): " + why));
  }

  /** The device {@code env} names, {@code otherwise} when unset, empty when none is so named. */
  private static Optional<Verbs.Device> named(
      List<Verbs.Device> listed, String env, Verbs.Device otherwise) {
    String name = System.getenv(env);
    if (name == null || name.isBlank()) {
      return Optional.ofNullable(otherwise);
    }
    return listed.stream().filter(d -> d.name().equals(name.strip())).findFirst();
  }

  private static int intEnv(String env, int otherwise) {
    String v = System.getenv(env);
    if (v == null || v.isBlank()) {
      return otherwise;
    }
    try {
      return Integer.parseInt(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(env + " is not a number: " + v, e);
    }
  }

  @Override
  protected VerbsEnd openLocal() {
    assumeTrue(skip.isEmpty(), skip.orElse(""));
    VerbsEnd end = new VerbsEnd(NativeVerbs.system(), device, port, gidIndex);
    Verbs.PortAttr attr = end.verbs.queryPort(end.context, port).value();
    if (attr.state() != Ibv.PORT_ACTIVE) {
      end.close();
      assertEquals(Ibv.PORT_ACTIVE, attr.state(), device.name() + " port " + port + " state");
    }
    return end;
  }

  @Override
  protected ConformancePeer openPeer() {
    return new InJvmPeer(NativeVerbs.system(), device2, port2, gidIndex2);
  }
}
