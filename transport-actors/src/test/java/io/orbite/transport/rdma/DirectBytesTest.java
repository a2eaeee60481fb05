package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DirectBytesTest {
  @Test
  void aChargeIsAllOrNothingAndReleasesReturnIt() {
    DirectBytes b = new DirectBytes(1000);
    assertTrue(b.tryCharge(600));
    assertFalse(b.tryCharge(401), "401 B more would pass the limit");
    assertEquals(600, b.usedBytes(), "a refused charge takes nothing");
    assertTrue(b.tryCharge(400), "exactly the limit fits");
    assertEquals(1000, b.usedBytes());
    b.release(600);
    b.release(400);
    assertEquals(0, b.usedBytes());
    assertFalse(b.tryCharge(1001), "more than the limit never fits");
    assertEquals(0, b.usedBytes());
  }

  @Test
  void releasingMoreThanWasChargedIsABrokenInvariant() {
    DirectBytes b = new DirectBytes(100);
    assertTrue(b.tryCharge(10));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.release(11));
    assertTrue(e.getMessage().contains("beyond their charges"), e::getMessage);
    assertThrows(IllegalArgumentException.class, () -> b.tryCharge(0));
    assertThrows(IllegalArgumentException.class, () -> new DirectBytes(0));
    assertTrue(b.refusal(5, "a task").contains("rdma.maxDirectBytes"));
  }

  @Test
  void waitersStartInArrivalOrderOnceTheyFitAndANewChargeNeverPassesThem() {
    DirectBytes b = new DirectBytes(1000);
    java.util.List<String> log = new java.util.ArrayList<>();
    Object owner = new Object();
    assertTrue(b.chargeOrWait(800, owner, () -> log.add("first"), why -> log.add("no")));
    assertFalse(b.chargeOrWait(500, owner, () -> log.add("500"), why -> log.add("refused 500")));
    assertFalse(
        b.chargeOrWait(100, owner, () -> log.add("100"), why -> log.add("refused 100")),
        "100 B would fit, but a waiter is ahead of it");
    assertFalse(b.tryCharge(1), "a source charge does not pass the waiters either");
    assertEquals(600, b.waitingBytes());
    b.release(300);
    assertEquals(java.util.List.of("500"), log, "the oldest fits now; the next does not yet");
    assertEquals(1000, b.usedBytes(), "charged as it starts");
    assertEquals(100, b.waitingBytes());
    b.release(100);
    assertEquals(java.util.List.of("500", "100"), log, "then the next, in order");
    assertEquals(1000, b.usedBytes());
    assertEquals(0, b.waitingBytes());
    assertThrows(
        IllegalArgumentException.class,
        () -> b.chargeOrWait(1001, owner, () -> {}, why -> {}),
        "beyond the whole budget never waits");
  }

  @Test
  void cancellingAnOwnersWaitersRefusesThemAndChargesNothing() {
    DirectBytes b = new DirectBytes(100);
    java.util.List<String> log = new java.util.ArrayList<>();
    Object mine = new Object();
    Object other = new Object();
    assertTrue(b.tryCharge(100));
    assertFalse(b.chargeOrWait(50, mine, () -> log.add("mine"), why -> log.add("mine: " + why)));
    assertFalse(b.chargeOrWait(50, other, () -> log.add("other"), why -> log.add("x")));
    b.cancel(mine, "closed");
    assertEquals(java.util.List.of("mine: closed"), log);
    assertEquals(50, b.waitingBytes(), "the other owner's waiter stays");
    b.release(100);
    assertEquals(java.util.List.of("mine: closed", "other"), log);
    assertEquals(50, b.usedBytes(), "only the started waiter is charged");
  }

  @Test
  void aWaiterPastItsDeadlineIsRemovedUnchargedAndTheOnesItHeldBackStart() {
    DirectBytes b = new DirectBytes(100);
    java.util.List<String> log = new java.util.ArrayList<>();
    Object mine = new Object();
    Object other = new Object();
    assertTrue(b.tryCharge(60));
    // A large waiter with a deadline at the head, then a small one of the same owner without,
    // then one of another owner whose deadline passed too.
    assertFalse(
        b.chargeOrWait(
            80, mine, () -> log.add("80"), why -> log.add("x"), 10, () -> log.add("80 late")));
    assertFalse(b.chargeOrWait(30, mine, () -> log.add("30"), why -> log.add("x")));
    assertFalse(
        b.chargeOrWait(
            10, other, () -> log.add("10"), why -> log.add("x"), 10, () -> log.add("10 late")));
    b.expire(mine, 5);
    assertEquals(java.util.List.of(), log, "nothing past its deadline yet");
    b.expire(mine, 11);
    assertEquals(
        java.util.List.of("80 late", "30", "10"),
        log,
        "the late one told, then the ones it held back start in order (the other owner's is not"
            + " this owner's to expire, and it fits)");
    assertEquals(100, b.usedBytes(), "60 + 30 + 10: the late one was never charged");
    assertEquals(0, b.waitingBytes());
  }
}
