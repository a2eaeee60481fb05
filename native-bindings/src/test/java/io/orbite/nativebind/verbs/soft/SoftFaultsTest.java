package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.nativebind.Errno;
import org.junit.jupiter.api.Test;

/** The table itself: NONE refuses faults; a table serves one provider; rules fire as armed. */
class SoftFaultsTest {
  @Test
  void noneRefusesEveryFault() {
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.NONE.withholdCqe(1, 1));
    assertThrows(
        UnsupportedOperationException.class,
        () -> SoftFaults.NONE.failNextDestroy(SoftFaults.Kind.QP, 5, false));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.NONE.stallWire(1));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.NONE.dropWire(1));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.NONE.nullWire(true));
    assertFalse(SoftFaults.NONE.nullWire());
    assertEquals(0, SoftFaults.NONE.destroyFailure(SoftFaults.Kind.QP, 1));
  }

  @Test
  void aTableServesOneProviderOnly() {
    SoftFaults f = SoftFaults.create();
    assertThrows(IllegalStateException.class, () -> f.dropWire(1), "no provider yet");
    SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f);
    assertThrows(
        IllegalStateException.class,
        () -> SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f));
    assertThrows(IllegalArgumentException.class, () -> f.dropWire(12345), "no such QP");
    assertThrows(IllegalArgumentException.class, () -> f.setPortState("soft9", 1, 4));
  }

  @Test
  void onceFiresOnceAndStickyBindsToTheFirstObjectItHits() {
    SoftFaults f = SoftFaults.create();
    int eio = Errno.EIO.number();
    f.failDestroy(SoftFaults.Kind.MR, 7, eio, false);
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.MW, 7), "another kind");
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.MR, 7));
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.MR, 7));
    f.failNextDestroy(SoftFaults.Kind.CQ, eio, true);
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.CQ, 3));
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.CQ, 4), "bound to CQ 3");
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.CQ, 3));
    f.clearDestroyFaults();
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.CQ, 3));
  }
}
