package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Op;
import org.junit.jupiter.api.Test;

/**
 * A source's reservation of one parent task: which grant requests it admits, when its slot and
 * bytes go back, when it ends (DONE came and every window was released) or is kept (a window could
 * not be released), and that it ends as a record or is promoted, never both.
 */
class ReservationTest {
  private static Reservation reserved(int slices) {
    return Reservation.reserved(
        new RdmaWire.Reserve(9, Op.READ.ordinal(), 1, 1000, 400, slices), Op.READ, null);
  }

  @Test
  void grantRequestsInsideTheRangeAndDirectionAreAdmittedUpToTheDeclaredCount() {
    Reservation r = reserved(2);
    assertNull(r.admit(Op.READ, 1000, 200));
    assertNull(r.admit(Op.READ, 1200, 200));
    assertEquals("grant request 3 for parent 9, which reserved 2", r.admit(Op.READ, 1000, 1));
  }

  @Test
  void aRequestOutsideTheRangeInTheOtherDirectionOrAfterDoneBreaksTheProtocol() {
    Reservation r = reserved(8);
    assertEquals(
        "a grant request for [999, +2) outside parent 9's reserved [1000, +400)",
        r.admit(Op.READ, 999, 2));
    assertEquals(
        "a grant request for [1300, +101) outside parent 9's reserved [1000, +400)",
        r.admit(Op.READ, 1300, 101));
    assertEquals(
        "a grant request for [1000, +9223372036854775807) outside parent 9's reserved [1000, +400)",
        r.admit(Op.READ, 1000, Long.MAX_VALUE));
    assertEquals(
        "a WRITE grant request for parent 9, reserved for READ", r.admit(Op.WRITE, 1000, 10));
    assertTrue(r.done().ended(), "no window: it ends at its DONE");
    assertEquals("a grant request for parent 9 after its DONE", r.admit(Op.READ, 1000, 10));
  }

  @Test
  void itsSlotAndBytesGoBackOnceEveryDeclaredWindowWasReleasedAndItEndsAtDone() {
    Reservation r = reserved(2); // 400 B in two slices of 200
    assertNull(r.admit(Op.READ, 1000, 200));
    assertEquals(new Reservation.Settled(false, 200, false), r.windowClosed(true, 200));
    assertNull(r.admit(Op.READ, 1200, 200), "admitted and counted as open in one step");
    assertEquals(
        new Reservation.Settled(true, 200, false),
        r.windowClosed(true, 200),
        "the last declared window's release gives the slot back, before DONE");
    assertEquals(new Reservation.Settled(false, 0, true), r.done(), "DONE then ends it");
    assertEquals(Reservation.Settled.NOTHING, r.done(), "and only once");
  }

  @Test
  void doneWithSlicesNeverAskedGivesBackWhatIsLeftOnceNoWindowIsOpen() {
    Reservation r = reserved(2);
    assertNull(r.admit(Op.READ, 1000, 200));
    assertEquals(Reservation.Settled.NOTHING, r.done(), "a window is still open");
    assertEquals(
        new Reservation.Settled(true, 400, true),
        r.windowClosed(true, 200),
        "its 200 B, the 200 B of the slice never asked, and the slot; ended");
  }

  @Test
  void aWindowThatCouldNotBeReleasedKeepsTheSlotAndItsBytesForGood() {
    Reservation r = reserved(2);
    assertNull(r.admit(Op.READ, 1000, 200));
    assertNull(r.admit(Op.READ, 1200, 200));
    assertEquals(Reservation.Settled.NOTHING, r.windowClosed(false, 0));
    assertEquals(
        new Reservation.Settled(false, 200, false),
        r.windowClosed(true, 200),
        "the released window's bytes go back; the slot and the kept window's bytes stay");
    assertEquals(Reservation.Settled.NOTHING, r.done(), "kept: it never ends");
    assertTrue(r.kept());
    assertEquals(1, r.windows(), "the window that could not be released stays counted");
  }

  @Test
  void aRefusedReservationHoldsNothingAndEndsAtDone() {
    Reservation r =
        Reservation.refused(
            new RdmaWire.Reserve(9, Op.READ.ordinal(), 1, 1000, 400, 2), Op.READ, 6, "full");
    assertNull(r.admit(Op.READ, 1000, 200), "its requests are answered with its refusal");
    assertEquals(0, r.windows(), "no window opens for it");
    assertEquals(new Reservation.Settled(false, 0, true), r.done());
  }

  @Test
  void aReservationEndsAsARecordOrIsPromotedNeverBoth() {
    Reservation quick = reserved(1);
    assertTrue(quick.endAsRecord(), "ended before any tick: its loan goes back where it ended");
    assertFalse(quick.promote(), "and it can no longer be promoted");

    Reservation held = reserved(1);
    assertTrue(held.promote(), "still held at a tick: promoted");
    assertTrue(held.promote(), "promoting again changes nothing");
    assertFalse(held.endAsRecord(), "its owner gives the loan back, not the thread that ends it");

    Reservation refused =
        Reservation.refused(
            new RdmaWire.Reserve(9, Op.READ.ordinal(), 1, 1000, 400, 1), Op.READ, 1, "no");
    assertFalse(refused.promote(), "a refused reservation holds nothing: never promoted");
  }
}
