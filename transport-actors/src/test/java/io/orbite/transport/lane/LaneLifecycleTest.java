package io.orbite.transport.lane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.testkit.StateTypes;
import io.orbite.transport.lane.LaneLifecycle.State;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A lane's lifecycle as one state value (issue 15, item 4): every pair of states, checked against
 * the only legal moves (forward, never out of CLOSED or QUARANTINED), and racing movers that never
 * undo each other.
 */
class LaneLifecycleTest {
  private static LaneLifecycle at(State s) {
    LaneLifecycle l = new LaneLifecycle();
    if (s != State.RUNNING) {
      assertTrue(l.moveTo(s), "RUNNING -> " + s);
    }
    return l;
  }

  @Test
  void everyMoveIsForwardAndNothingLeavesATerminalState() {
    int legal = 0;
    for (State from : State.values()) {
      for (State to : State.values()) {
        LaneLifecycle l = at(from);
        boolean expected =
            from != State.CLOSED && from != State.QUARANTINED && to.ordinal() > from.ordinal();
        assertEquals(expected, l.moveTo(to), from + " -> " + to);
        assertEquals(expected ? to : from, l.state(), "after " + from + " -> " + to);
        assertEquals(l.state() == State.RUNNING, l.running());
        legal += expected ? 1 : 0;
      }
    }
    // RUNNING: 4 moves; DRAINING: 3; CLOSING: 2 (CLOSED, QUARANTINED); the terminal ones none.
    assertEquals(9, legal);
  }

  @Test
  void aCloseDuringADrainMakesItDeliberateAndTheLaneEndNeverUndoesAClose() {
    LaneLifecycle broken = new LaneLifecycle();
    assertTrue(broken.moveTo(State.DRAINING));
    assertTrue(broken.moveTo(State.CLOSING), "a close while draining: nothing is retried");
    LaneLifecycle closed = new LaneLifecycle();
    assertTrue(closed.moveTo(State.CLOSING));
    assertFalse(closed.moveTo(State.DRAINING), "the lane's own end after a close stays CLOSING");
    assertEquals(State.CLOSING, closed.state());
    assertTrue(closed.moveTo(State.CLOSED));
    assertFalse(closed.moveTo(State.QUARANTINED), "a closed lane is never quarantined after");
  }

  @Test
  void racingMoversEachSucceedAtMostOnceAndTheStateOnlyGoesForward() throws Exception {
    StateTypes.racing(
        LaneLifecycle::new,
        LaneLifecycle::state,
        LaneLifecycle::moveTo,
        List.of(State.DRAINING, State.CLOSING, State.CLOSED, State.QUARANTINED),
        (l, won) -> {
          assertTrue(
              l.state().terminal() || l.state() == State.CLOSING || l.state() == State.DRAINING);
          assertFalse(l.running());
        });
  }
}
