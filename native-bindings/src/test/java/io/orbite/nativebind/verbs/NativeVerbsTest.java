package io.orbite.nativebind.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.testkit.Prerequisite;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The FFM binding's load paths, for real: {@code libibverbs.so.1} loads once and binds every
 * required export; a missing library, or one without the verbs exports, makes every call fail
 * {@code ENOSYS} naming the library or the first missing symbol, before any native call; and a
 * machine without RDMA devices (this one: no RDMA kernel subsystem) is told apart with the reason.
 */
class NativeVerbsTest {
  private static final Path VERBS_SYSFS = Path.of("/sys/class/infiniband_verbs");

  @Test
  void aDevicesNumaNodeIsReadFromSysfsAndUnknownWhenMissingOrNegative(
      @org.junit.jupiter.api.io.TempDir Path root) throws java.io.IOException {
    for (String[] d :
        new String[][] {
          {"mlx5_0", "1\n"}, {"mlx5_1", "-1\n"}, {"mlx5_2", "x"}, {"mlx5_3", " 0 "}
        }) {
      Files.createDirectories(root.resolve(d[0]).resolve("device"));
      Files.writeString(root.resolve(d[0]).resolve("device").resolve("numa_node"), d[1]);
    }
    assertEquals(1, NativeVerbs.numaNodeIn(root, "mlx5_0"));
    assertEquals(-1, NativeVerbs.numaNodeIn(root, "mlx5_1"));
    assertEquals(-1, NativeVerbs.numaNodeIn(root, "mlx5_2"));
    assertEquals(0, NativeVerbs.numaNodeIn(root, "mlx5_3"));
    assertEquals(-1, NativeVerbs.numaNodeIn(root, "mlx5_9"), "no such device");
    assertEquals(-1, NativeVerbs.numaNodeIn(root, "../mlx5_0"), "not a device name");
  }

  @Test
  void theSystemLibraryLoadsOnceWithEveryRequiredExport() {
    Prerequisite.require(
        Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1"))
            || Files.exists(Path.of("/lib/x86_64-linux-gnu/libibverbs.so.1")),
        "libibverbs.so.1 is not installed (apt-get install libibverbs1; .ci/run installs it as"
            + " root)");
    NativeVerbs verbs = NativeVerbs.system();
    assertSame(verbs, NativeVerbs.system());
    assertTrue(verbs.availability().isAvailable(), verbs.availability().toString());
    assertEquals("libibverbs", verbs.provider());
  }

  @Test
  void withoutAnRdmaSubsystemTheDeviceListFailsEnosysAndNoDeviceIsUsableNamingWhy() {
    NativeVerbs verbs = NativeVerbs.system();
    Prerequisite.require(verbs.availability().isAvailable(), verbs.availability().toString());
    VerbsResult<List<Verbs.Device>> list = verbs.getDeviceList();
    Optional<String> cause = verbs.unavailabilityCause();
    if (!Files.exists(VERBS_SYSFS)) {
      // This kernel has no RDMA subsystem (no ib_uverbs, rxe or siw): the real zero-device path.
      assertFalse(list.ok(), list.toString());
      assertEquals(Errno.ENOSYS.number(), list.errno(), list.describe());
      assertTrue(cause.isPresent());
      assertEquals(
          "libibverbs: unavailable (no RDMA device: ibv_get_device_list (this kernel has no RDMA"
              + " subsystem: no ib_uverbs, rxe or siw): ENOSYS (38))",
          cause.get());
    } else if (list.ok() && list.value().isEmpty()) {
      assertEquals(
          Optional.of("libibverbs: unavailable (no RDMA device: ibv_get_device_list listed none)"),
          cause);
    } else if (list.ok()) {
      assertEquals(Optional.empty(), cause);
      list.value().forEach(d -> assertFalse(d.name().isEmpty(), d.toString()));
    } else {
      assertTrue(cause.orElseThrow().contains(list.describe()), cause.get());
    }
  }

  @Test
  void aMissingLibraryFailsEveryCallEnosysNamingIt() {
    NativeVerbs verbs = NativeVerbs.load("libibverbs-absent", "libibverbs-absent.so.1");
    assertFalse(verbs.availability().isAvailable());
    String cause = verbs.availability().cause().orElseThrow();
    assertTrue(cause.contains("cannot load libibverbs-absent.so.1"), cause);
    assertEquals(Optional.of(verbs.availability().toString()), verbs.unavailabilityCause());
    everyCallRefused(verbs, "libibverbs-absent.so.1");
  }

  @Test
  void aLibraryWithoutTheVerbsExportsFailsNamingTheMissingSymbol() {
    NativeVerbs verbs = NativeVerbs.load("libc-as-verbs", "libc.so.6");
    assertFalse(verbs.availability().isAvailable());
    String cause = verbs.availability().cause().orElseThrow();
    assertTrue(cause.startsWith("symbol ibv_get_device_list not found"), cause);
    everyCallRefused(verbs, "ibv_get_device_list");
  }

  /** Each kind of call answers ENOSYS (or its negative) without touching native code. */
  private static void everyCallRefused(NativeVerbs verbs, String named) {
    VerbsResult<List<Verbs.Device>> list = verbs.getDeviceList();
    assertEquals(Errno.ENOSYS.number(), list.errno());
    assertTrue(list.describe().contains(named), list.describe());
    // Handles no native call could have made: the table must refuse before dereferencing them.
    Verbs.Context ctx = new Verbs.Context(1, "none");
    Verbs.Pd pd = new Verbs.Pd(1, ctx);
    Verbs.Cq cq = new Verbs.Cq(1, ctx, 1);
    Verbs.Qp qp = new Verbs.Qp(1, pd, 1);
    assertEquals(Errno.ENOSYS.number(), verbs.openDevice(new Verbs.Device(1, "x", 0)).errno());
    assertEquals(Errno.ENOSYS.number(), verbs.allocPd(ctx).errno());
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment range = arena.allocate(64);
      assertEquals(Errno.ENOSYS.number(), verbs.regMr(pd, range, Ibv.ACCESS_LOCAL_WRITE).errno());
    }
    assertEquals(Errno.ENOSYS.number(), verbs.allocMw(pd, Ibv.MW_TYPE_2).errno());
    assertEquals(Errno.ENOSYS.number(), verbs.createCq(ctx, 16, null, 0).errno());
    assertEquals(Errno.ENOSYS.number(), verbs.reqNotifyCq(cq, false));
    assertEquals(Errno.ENOSYS.number(), verbs.destroyQp(qp));
    assertEquals(Errno.ENOSYS.number(), verbs.deallocPd(pd));
    assertEquals(Errno.ENOSYS.number(), verbs.closeDevice(ctx));
    Verbs.PostResult post =
        verbs.postSend(qp, List.of(Verbs.SendWr.send(7, Ibv.SEND_SIGNALED, List.of())));
    assertEquals(new Verbs.PostResult(Errno.ENOSYS.number(), 0), post);
    assertEquals(-Errno.ENOSYS.number(), verbs.pollCq(cq, new Verbs.Wc[4]));
    assertEquals(Errno.ENOSYS.number(), verbs.getAsyncEvent(ctx).errno());
    assertEquals(-Errno.ENOSYS.number(), verbs.awaitAsyncEvent(ctx, 10));
    assertEquals(
        Errno.ENOSYS.number(),
        verbs.regDmabufMr(pd, 0, 4096, 0, 3, Ibv.ACCESS_LOCAL_WRITE).errno());
  }
}
