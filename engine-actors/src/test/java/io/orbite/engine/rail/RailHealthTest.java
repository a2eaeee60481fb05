package io.orbite.engine.rail;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.rail.RailHealth.Admission;
import io.orbite.engine.rail.RailHealth.Pair;
import io.orbite.engine.rail.RailHealth.Policy;
import io.orbite.engine.rail.RailHealth.State;
import io.orbite.engine.rail.RailHealth.Ticket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The rail circuit's rules, one by one, on a manual clock (C13). */
class RailHealthTest {
  private static final Pair AB = new Pair(0xabcL, 0, 1);
  private long now = 1_000_000_000L;
  private final RailHealth health = new RailHealth(Policy.DEFAULTS, () -> now);

  private void advance(Duration d) {
    now += d.toNanos();
  }

  private Ticket admitted(Pair p) {
    return assertInstanceOf(Admission.Admitted.class, health.admit(p)).ticket();
  }

  private String refused(Pair p) {
    return assertInstanceOf(Admission.Refused.class, health.admit(p)).why();
  }

  /** Three failures of ordinary work inside the window. */
  private void openIt(Pair p) {
    for (int i = 0; i < 3; i++) {
      health.failed(admitted(p));
    }
    assertEquals(State.OPEN, health.state(p));
  }

  @Test
  void threeErrorsInTenSecondsOpenThePairAndTwoDoNot() {
    health.failed(admitted(AB));
    advance(Duration.ofSeconds(4));
    health.failed(admitted(AB));
    assertEquals(State.CLOSED, health.state(AB), "two errors");
    advance(Duration.ofSeconds(7)); // the first error has left the window
    health.failed(admitted(AB));
    assertEquals(State.CLOSED, health.state(AB), "two errors inside ten seconds");
    advance(Duration.ofSeconds(1));
    health.failed(admitted(AB));
    assertEquals(State.OPEN, health.state(AB), "three inside ten seconds");
    assertTrue(refused(AB).contains("is open for another 30000 ms"), refused(AB));
    assertEquals(1, health.counts().opens());
  }

  @Test
  void eachLocalRailCountsItsOwnFailuresAndRefusingPairs() {
    Pair onOne = new Pair(0xabcL, 1, 0);
    Pair otherPeerOnOne = new Pair(0xdefL, 1, 1);
    assertEquals(new RailHealth.RailCounts(0, 0, 0), health.rail(0), "a rail never seen");
    health.failed(admitted(AB));
    openIt(onOne);
    health.failed(admitted(otherPeerOnOne));
    assertEquals(new RailHealth.RailCounts(0, 0, 1), health.rail(0), "one failure, no open pair");
    assertEquals(new RailHealth.RailCounts(1, 0, 4), health.rail(1), "three opened a pair");
    advance(Duration.ofSeconds(30));
    Ticket trial = admitted(onOne);
    assertTrue(trial.trial());
    assertEquals(new RailHealth.RailCounts(0, 1, 4), health.rail(1), "the pair is half-open");
    health.succeeded(trial);
    assertEquals(new RailHealth.RailCounts(0, 0, 4), health.rail(1), "closed, failures kept");
    assertEquals(5, health.counts().errors(), "the totals are the rails' sum");
  }

  @Test
  void anOpenPairAdmitsOneTrialAfterTheCooldownAndOnlyItsSuccessClosesIt() {
    Ticket early = admitted(AB); // ordinary work admitted before the pair opened
    openIt(AB);
    advance(Duration.ofSeconds(29));
    refused(AB);
    health.succeeded(early); // a late success of old work cannot close the pair
    assertEquals(State.OPEN, health.state(AB));
    advance(Duration.ofSeconds(1));
    Ticket trial = admitted(AB);
    assertTrue(trial.trial());
    assertEquals(State.HALF_OPEN, health.state(AB));
    assertTrue(refused(AB).contains("its one trial is running"), refused(AB));
    assertFalse(health.healthy(AB));
    health.succeeded(trial);
    assertEquals(State.CLOSED, health.state(AB));
    assertFalse(admitted(AB).trial());
    assertEquals(1, health.counts().recoveries());
  }

  @Test
  void aFailedTrialDoublesTheCooldownUpToFiveMinutes() {
    openIt(AB);
    long[] cooldowns = {30, 60, 120, 240, 300, 300};
    for (long seconds : cooldowns) {
      advance(Duration.ofSeconds(seconds).minusMillis(1));
      refused(AB);
      advance(Duration.ofMillis(1));
      Ticket trial = admitted(AB);
      assertTrue(trial.trial(), "a trial after " + seconds + " s");
      health.failed(trial);
      assertEquals(State.OPEN, health.state(AB));
    }
    assertEquals(Duration.ofMinutes(5), health.view().getFirst().cooldown());
    advance(Duration.ofMinutes(5));
    health.succeeded(admitted(AB));
    assertEquals(State.CLOSED, health.state(AB));
    assertEquals(Duration.ofSeconds(30), health.view().getFirst().cooldown(), "reset on recovery");
  }

  @Test
  void earlyFailuresLeaveTheCooldownAsItIs() {
    Ticket a = admitted(AB);
    Ticket b = admitted(AB);
    openIt(AB);
    advance(Duration.ofSeconds(20));
    health.failed(a);
    health.failed(b);
    advance(Duration.ofSeconds(10));
    assertTrue(admitted(AB).trial(), "the cooldown still ended 30 s after the pair opened");
  }

  @Test
  void lookingUpHealthNeverArmsATrial() {
    openIt(AB);
    advance(Duration.ofSeconds(31));
    for (int i = 0; i < 5; i++) {
      assertFalse(health.healthy(AB));
    }
    assertEquals(State.OPEN, health.state(AB));
    assertEquals(0, health.counts().trials());
    assertTrue(admitted(AB).trial());
  }

  @Test
  void admissibleSaysWhetherAdmitWouldAdmitAndArmsNothing() {
    assertTrue(health.admissible(AB), "an unknown pair is closed");
    openIt(AB);
    assertFalse(health.admissible(AB), "open, cooling down");
    advance(Duration.ofSeconds(30));
    for (int i = 0; i < 3; i++) {
      assertTrue(health.admissible(AB), "its trial is due");
    }
    assertEquals(0, health.counts().trials(), "looking armed no trial");
    Ticket trial = admitted(AB);
    assertTrue(trial.trial());
    assertFalse(health.admissible(AB), "half-open: the trial is running");
    health.cancelled(trial);
    assertFalse(health.admissible(AB), "the next trial waits out the probe interval");
    advance(Duration.ofSeconds(1));
    assertTrue(health.admissible(AB));
    assertTrue(admitted(AB).trial());
  }

  @Test
  void aCancelledTrialGivesItsSlotBackAfterTheProbeInterval() {
    openIt(AB);
    advance(Duration.ofSeconds(30));
    Ticket trial = admitted(AB);
    health.cancelled(trial);
    assertEquals(State.OPEN, health.state(AB));
    assertTrue(refused(AB).contains("next trial is due in 1000 ms"), refused(AB));
    advance(Duration.ofMillis(400));
    assertTrue(refused(AB).contains("next trial is due in 600 ms"), refused(AB));
    advance(Duration.ofMillis(600));
    Ticket again = admitted(AB);
    assertTrue(again.trial());
    health.succeeded(trial); // the cancelled trial's ticket cannot close the pair
    assertEquals(State.HALF_OPEN, health.state(AB));
    health.succeeded(again);
    assertEquals(State.CLOSED, health.state(AB));

    RailHealth zero =
        new RailHealth(
            new Policy(
                3,
                Duration.ofSeconds(10),
                Duration.ofSeconds(30),
                Duration.ZERO,
                Duration.ofMinutes(5),
                8),
            () -> now);
    for (int i = 0; i < 3; i++) {
      health.failed(admitted(AB));
      zero.failed(((Admission.Admitted) zero.admit(AB)).ticket());
    }
    advance(Duration.ofSeconds(30));
    zero.cancelled(((Admission.Admitted) zero.admit(AB)).ticket());
    assertInstanceOf(Admission.Admitted.class, zero.admit(AB), "a zero interval: at once");
  }

  @Test
  void aPortFaultOpensEveryPairOfThatRailAndFencesTheirOldReceipts() {
    Pair other = new Pair(0xabcL, 1, 1);
    Pair sameRail = new Pair(0xdefL, 0, 0);
    Ticket before = admitted(AB);
    admitted(other);
    admitted(sameRail);
    openIt(sameRail);
    advance(Duration.ofSeconds(30));
    Ticket staleTrial = admitted(sameRail);
    health.portFault(0);
    assertEquals(State.OPEN, health.state(AB));
    assertEquals(State.OPEN, health.state(sameRail));
    assertEquals(State.CLOSED, health.state(other), "another local rail carries on");
    health.succeeded(before);
    health.succeeded(staleTrial);
    assertEquals(State.OPEN, health.state(AB), "a completion from before the fault");
    assertEquals(State.OPEN, health.state(sameRail), "a trial from before the fault");
  }

  @Test
  void aFullTableEvictsAnIdleHealthyPairAndRefusesWhenEveryPairIsActiveOrUnproven() {
    RailHealth small =
        new RailHealth(
            new Policy(
                3,
                Duration.ofSeconds(10),
                Duration.ofSeconds(30),
                Duration.ofSeconds(1),
                Duration.ofMinutes(5),
                2),
            () -> now);
    Pair p1 = new Pair(1, 0, 0);
    Pair p2 = new Pair(2, 0, 0);
    Pair p3 = new Pair(3, 0, 0);
    Ticket t1 = ((Admission.Admitted) small.admit(p1)).ticket();
    Ticket t2 = ((Admission.Admitted) small.admit(p2)).ticket();
    Admission full = small.admit(p3);
    assertTrue(
        assertInstanceOf(Admission.Exhausted.class, full).why().contains("2 pairs are held"),
        full::toString);
    small.succeeded(t1); // p1 now closed and idle: it may go
    assertInstanceOf(Admission.Admitted.class, small.admit(p3));
    assertEquals(1, small.counts().evictions());
    assertEquals(List.of(p2, p3), small.view().stream().map(RailHealth.PairView::pair).toList());
    small.failed(t2); // a recent error: p2 is unproven and stays
    assertInstanceOf(Admission.Exhausted.class, small.admit(p1));
  }

  @Test
  void aBadPolicyIsRefusedNamingTheField() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new Policy(
                    0,
                    Duration.ofSeconds(10),
                    Duration.ofSeconds(30),
                    Duration.ZERO,
                    Duration.ofMinutes(5),
                    8));
    assertEquals("errorThreshold must be at least 1, got 0", e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new Policy(
                    3,
                    Duration.ofSeconds(10),
                    Duration.ofSeconds(30),
                    Duration.ZERO,
                    Duration.ofSeconds(10),
                    8));
    assertTrue(
        e.getMessage().startsWith("maxCooldown (PT10S) must be at least cooldown"), e.getMessage());
  }
}
