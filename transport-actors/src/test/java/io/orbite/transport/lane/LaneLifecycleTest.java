package io.orbite.transport.lane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.testkit.Racers;
import io.orbite.transport.lane.LaneLifecycle.State;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
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
    for (int round = 0; round < 200; round++) {
      LaneLifecycle l = new LaneLifecycle();
      State[] moves = {State.DRAINING, State.CLOSING, State.CLOSED, State.QUARANTINED};
      AtomicInteger[] won = new AtomicInteger[moves.length];
      for (int i = 0; i < won.length; i++) {
        won[i] = new AtomicInteger();
      }
      List<Runnable> movers = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int which = t % moves.length;
        movers.add(
            () -> {
              State before = l.state();
              if (l.moveTo(moves[which])) {
                won[which].incrementAndGet();
              }
              State after = l.state();
              assertTrue(after.ordinal() >= before.ordinal(), before + " then " + after);
            });
      }
      Racers.race(movers);
      for (int i = 0; i < moves.length; i++) {
        assertTrue(won[i].get() <= 1, moves[i] + " won " + won[i].get() + " times");
      }
      assertTrue(l.state().terminal() || l.state() == State.CLOSING || l.state() == State.DRAINING);
      assertFalse(l.running());
    }
  }
}
