package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Lifecycle;
import io.orbite.engine.testkit.Racers;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A source grant's lifecycle ({@link GrantState}, a {@link Reservation} and its {@link GrantOwner})
 * as one state value: every pair of states against the only legal moves, every state reached by the
 * reservation's own operations, and racing movers (the session owner's tick promoting it, the
 * reader and the lanes ending it) of which exactly one decides who gives the loan back.
 */
class GrantStateTest {
  private static final Map<GrantState, Set<GrantState>> LEGAL =
      Map.of(
          GrantState.REFUSED, Set.of(GrantState.ENDED_AS_RECORD),
          GrantState.RESERVED,
              Set.of(
                  GrantState.SETTLED,
                  GrantState.PROMOTED,
                  GrantState.DRAINING,
                  GrantState.KEPT,
                  GrantState.ENDED_AS_RECORD),
          GrantState.SETTLED, Set.of(GrantState.PROMOTED_SETTLED, GrantState.ENDED_AS_RECORD),
          GrantState.PROMOTED,
              Set.of(
                  GrantState.PROMOTED_SETTLED,
                  GrantState.DRAINING,
                  GrantState.KEPT,
                  GrantState.ENDED),
          GrantState.PROMOTED_SETTLED, Set.of(GrantState.ENDED),
          GrantState.DRAINING, Set.of(GrantState.KEPT_DONE, GrantState.ENDED),
          GrantState.KEPT, Set.of(GrantState.KEPT_DONE),
          GrantState.KEPT_DONE, Set.of(),
          GrantState.ENDED_AS_RECORD, Set.of(),
          GrantState.ENDED, Set.of());

  private static Reservation reserved(int slices) {
    return Reservation.reserved(
        new RdmaWire.Reserve(9, Op.READ.ordinal(), 1, 1000, 400, slices), Op.READ, null);
  }

  /** A reservation brought to {@code s} by its own operations. */
  private static Reservation at(GrantState s) {
    Reservation r =
        s == GrantState.REFUSED
            ? Reservation.refused(
                new RdmaWire.Reserve(9, Op.READ.ordinal(), 1, 1000, 400, 1), Op.READ, 6, "full")
            : reserved(s == GrantState.SETTLED || s == GrantState.PROMOTED_SETTLED ? 1 : 2);
    switch (s) {
      case REFUSED, RESERVED -> {}
      case SETTLED, PROMOTED_SETTLED -> {
        r.admit(Op.READ, 1000, 400);
        r.windowClosed(true, 400);
        if (s == GrantState.PROMOTED_SETTLED) {
          assertTrue(r.promote());
        }
      }
      case PROMOTED -> assertTrue(r.promote());
      case DRAINING -> {
        r.admit(Op.READ, 1000, 200);
        r.done();
      }
      case KEPT, KEPT_DONE -> {
        r.admit(Op.READ, 1000, 200);
        r.windowClosed(false, 0);
        if (s == GrantState.KEPT_DONE) {
          r.done();
        }
      }
      case ENDED_AS_RECORD -> r.done();
      case ENDED -> {
        assertTrue(r.promote());
        r.done();
      }
    }
    assertEquals(s, r.state(), "reached by the reservation's own operations");
    return r;
  }

  @Test
  void everyPairOfStatesIsLegalExactlyWhenTheDiagramSaysSoAndOnlyForward() {
    int legal = 0;
    for (GrantState from : GrantState.values()) {
      for (GrantState to : GrantState.values()) {
        boolean expected = LEGAL.get(from).contains(to);
        assertEquals(expected, from.mayMoveTo(to), from + " -> " + to);
        Lifecycle<GrantState> l = new Lifecycle<>(from);
        assertEquals(expected, l.moveTo(to), from + " -> " + to + " (moved)");
        assertEquals(expected ? to : from, l.state());
        if (expected) {
          assertTrue(to.ordinal() > from.ordinal(), from + " -> " + to + " goes forward");
        }
        legal += expected ? 1 : 0;
      }
      assertEquals(LEGAL.get(from).isEmpty(), from.terminal(), from + " terminal");
      at(from);
    }
    assertEquals(16, legal);
  }

  @Test
  void whatEachStateSaysOfThePromotionTheDoneAndTheKeep() {
    for (GrantState s : GrantState.values()) {
      Reservation r = at(s);
      assertEquals(s.kept(), r.kept(), s.toString());
      boolean wasPromoted = s.promoted();
      boolean promotes = s == GrantState.RESERVED || s == GrantState.SETTLED;
      assertEquals(wasPromoted || promotes, at(s).promote(), s + ": promote()");
      assertEquals(
          s == GrantState.REFUSED
              || s == GrantState.RESERVED
              || s == GrantState.SETTLED
              || s == GrantState.ENDED_AS_RECORD,
          at(s).endAsRecord(),
          s + ": endAsRecord()");
    }
  }

  @Test
  void aPromotionRacingTheEndDecidesOnceWhoGivesTheLoanBack() throws Exception {
    for (int round = 0; round < 500; round++) {
      Reservation r = reserved(2);
      r.admit(Op.READ, 1000, 200);
      r.admit(Op.READ, 1200, 200);
      AtomicBoolean promoted = new AtomicBoolean();
      List<Reservation.Settled> ends = Collections.synchronizedList(new ArrayList<>());
      Racers.race(
          List.of(
              () -> promoted.set(r.promote()),
              () -> ends.add(r.windowClosed(true, 200)),
              () -> ends.add(r.windowClosed(true, 200)),
              () -> ends.add(r.done())));
      GrantState end = r.state();
      assertTrue(end == GrantState.ENDED || end == GrantState.ENDED_AS_RECORD, end::toString);
      assertEquals(1, ends.stream().filter(Reservation.Settled::ended).count(), "ended once");
      assertEquals(1, ends.stream().filter(Reservation.Settled::slot).count(), "slot back once");
      assertEquals(400, ends.stream().mapToLong(Reservation.Settled::bytes).sum(), "every byte");
      // Exactly one of the two gives the loan back: the thread that ended it, or the owner.
      assertNotEquals(promoted.get(), r.endAsRecord(), "promoted " + promoted + ", ended " + end);
      assertEquals(promoted.get(), end == GrantState.ENDED);
      assertFalse(r.promote() && r.endAsRecord(), "never both");
    }
  }
}
