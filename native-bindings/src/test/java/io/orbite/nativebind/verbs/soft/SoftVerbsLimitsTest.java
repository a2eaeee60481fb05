package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The attribute table bounds what a device makes; regMr refuses what it cannot serve. */
class SoftVerbsLimitsTest {
  private static final int EINVAL = Errno.EINVAL.number();
  private static final int ENOMEM = Errno.ENOMEM.number();

  @Test
  void theAttributeTableBoundsEveryObject() {
    Verbs.DeviceAttr attr = new Verbs.DeviceAttr("t", 5, 4096, 0, 0, 1, 4, 2, 1, 8, 1, 1, 1, 0, 1);
    SoftFabric fabric =
        SoftFabric.of(
            List.of(
                new SoftFabric.DeviceSpec(
                    "soft0",
                    Inet4Address.ofLiteral("127.0.0.1"),
                    0,
                    5,
                    List.of(SoftFabric.PortSpec.active()),
                    attr)));
    SoftVerbs v = SoftVerbs.create(fabric);
    Verbs.Context c = v.openDevice(v.getDeviceList().value().get(0)).value();
    try (Arena arena = Arena.ofShared()) {
      Verbs.Pd pd = v.allocPd(c).value();
      assertEquals(ENOMEM, v.allocPd(c).errno(), "maxPd");
      assertEquals(EINVAL, v.createCq(c, 9, null, 0).errno(), "maxCqe");
      assertEquals(EINVAL, v.createCq(c, 0, null, 0).errno());
      Verbs.Cq cq = v.createCq(c, 8, null, 0).value();
      assertEquals(ENOMEM, v.createCq(c, 1, null, 0).errno(), "maxCq");
      assertEquals(
          EINVAL,
          v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 5, 4, 2, 2, 0, false)).errno(),
          "maxQpWr");
      assertEquals(
          EINVAL,
          v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 4, 4, 3, 2, 0, false)).errno(),
          "maxSge");
      Verbs.Qp qp = v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 4, 4, 2, 2, 0, false)).value();
      assertEquals(
          ENOMEM,
          v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 1, 1, 1, 1, 0, false)).errno(),
          "maxQp");
      assertEquals(
          EINVAL, v.regMr(pd, arena.allocate(4097), Ibv.ACCESS_LOCAL_WRITE).errno(), "maxMrSize");
      Verbs.Mr mr = v.regMr(pd, arena.allocate(64), Ibv.ACCESS_LOCAL_WRITE).value();
      assertEquals(ENOMEM, v.regMr(pd, arena.allocate(64), 0).errno(), "maxMr");
      Verbs.Mw mw = v.allocMw(pd, Ibv.MW_TYPE_2).value();
      assertEquals(ENOMEM, v.allocMw(pd, Ibv.MW_TYPE_2).errno(), "maxMw");
      assertEquals(0, v.deallocMw(mw));
      assertEquals(0, v.deregMr(mr));
      assertEquals(0, v.destroyQp(qp));
      assertEquals(0, v.destroyCq(cq));
      assertEquals(0, v.deallocPd(pd));
    }
    assertEquals(0, v.closeDevice(c));
  }

  @Test
  void regMrRefusesWhatTheResponderCouldNotServe() {
    SoftVerbs v = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1));
    Verbs.Context c = v.openDevice(v.getDeviceList().value().get(0)).value();
    Verbs.Pd pd = v.allocPd(c).value();
    try (Arena confined = Arena.ofConfined();
        Arena shared = Arena.ofShared()) {
      assertEquals(
          EINVAL, v.regMr(pd, MemorySegment.ofArray(new byte[64]), 0).errno(), "a heap segment");
      assertEquals(EINVAL, v.regMr(pd, confined.allocate(64), 0).errno(), "a confined arena");
      assertEquals(EINVAL, v.regMr(pd, shared.allocate(64).asSlice(0, 0), 0).errno(), "empty");
      assertEquals(
          EINVAL,
          v.regMr(pd, shared.allocate(64), Ibv.ACCESS_REMOTE_WRITE).errno(),
          "remote write without local write");
      assertEquals(
          Errno.EOPNOTSUPP.number(), v.allocMw(pd, Ibv.MW_TYPE_1).errno(), "type 1 windows");
      assertEquals(EINVAL, v.allocMw(pd, 3).errno());
      Verbs.Mr mr = v.regMr(pd, shared.allocate(64), Ibv.ACCESS_REMOTE_READ).value();
      assertTrue(mr.lkey() != mr.rkey());
      assertEquals(0, v.deregMr(mr));
    }
    assertEquals(0, v.deallocPd(pd));
    assertEquals(0, v.closeDevice(c));
    SoftVerbsConformance.assertNoSoftThreads();
  }
}
