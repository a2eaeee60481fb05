package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.testkit.StateTypes;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The forward-only lifecycle every non-actor owner uses: a state type's own moves are the only ones
 * taken, a terminal state is never left, a claim ({@link Lifecycle#moveFrom}) is won once, and
 * racing movers never undo each other.
 */
class LifecycleTest {
  /** A sample state type: A → B → C, and A or B → X (terminal), C terminal. */
  enum Sample implements Lifecycle.Stage<Sample> {
    A,
    B,
    C,
    X;

    @Override
    public boolean mayMoveTo(Sample next) {
      return Lifecycle.forward(this, next);
    }

    @Override
    public boolean terminal() {
      return this == C || this == X;
    }
  }

  @Test
  void onlyTheStateTypesOwnMovesAreTaken() {
    int legal = 0;
    for (Sample from : Sample.values()) {
      for (Sample to : Sample.values()) {
        Lifecycle<Sample> l = new Lifecycle<>(Sample.A);
        if (from != Sample.A) {
          assertTrue(l.moveTo(from));
        }
        boolean expected = from.mayMoveTo(to);
        assertEquals(expected, l.moveTo(to), from + " -> " + to);
        assertEquals(expected ? to : from, l.state());
        legal += expected ? 1 : 0;
      }
    }
    // A: B, C, X; B: C, X; C and X: none.
    assertEquals(5, legal);
  }

  @Test
  void aClaimFromAStateIsWonOnceAndOnlyFromThatState() {
    Lifecycle<Sample> l = new Lifecycle<>(Sample.A);
    assertFalse(l.moveFrom(Sample.B, Sample.C), "not in B");
    assertTrue(l.moveFrom(Sample.A, Sample.B));
    assertFalse(l.moveFrom(Sample.A, Sample.B), "claimed already");
    assertTrue(l.is(Sample.B));
    assertEquals("b", l.toString());
  }

  @Test
  void racingMoversEachWinAtMostOnceAndTheStateOnlyGoesForward() throws Exception {
    StateTypes.racing(
        Sample.class, List.of(Sample.B, Sample.C, Sample.X), Set.of(Sample.C, Sample.X));
  }
}
