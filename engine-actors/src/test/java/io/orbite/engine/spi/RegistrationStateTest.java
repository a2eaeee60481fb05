package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.spi.Registration.State;
import io.orbite.engine.testkit.StateTypes;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A registration's one state (C1): VISIBLE → HIDDEN → RELEASED, forward only; loans and pins are
 * granted only while VISIBLE; a release frees the engine's memory once, whoever calls it.
 */
class RegistrationStateTest {
  @Test
  void everyPairOfStatesAndRacingMovers() throws Exception {
    StateTypes.everyPair(
        State.class,
        Set.of(
            List.of(State.VISIBLE, State.HIDDEN),
            List.of(State.VISIBLE, State.RELEASED),
            List.of(State.HIDDEN, State.RELEASED)));
    StateTypes.racing(State.class, List.of(State.HIDDEN, State.RELEASED), Set.of(State.RELEASED));
  }

  @Test
  void loansAndPinsAreGrantedOnlyWhileVisibleAndTheMemoryIsFreedOnce() {
    Arena arena = Arena.ofShared();
    Registration r = new Registration(7, arena.allocate(4096), Access.READ_WRITE, arena);
    assertEquals(State.VISIBLE, r.state());
    assertTrue(r.tryLoan());
    assertTrue(r.tryPin());
    r.hide();
    assertEquals(State.HIDDEN, r.state());
    assertFalse(r.tryLoan(), "no loan once hidden");
    assertFalse(r.tryPin(), "no pin once hidden");
    assertEquals(2, r.loans(), "the loan and the pin taken before stay out");
    r.returnLoan();
    r.unpin();
    r.release();
    assertTrue(r.released());
    assertFalse(arena.scope().isAlive(), "engine-owned memory freed");
    r.release(); // a second release does nothing (the arena is not closed twice)
    r.hide(); // nothing moves a released range back
    assertEquals(State.RELEASED, r.state());
  }
}
