package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.testkit.StateTypes;
import io.orbite.transport.rdma.QpLifecycle.State;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An RC QP's lifecycle as one state value: every pair of states against the only legal moves
 * (forward, a destroy claimed before it ends, nothing out of DESTROYED or KEPT), the first stop's
 * reason and kind kept, and racing movers (a lane closing it, an owner destroying it unused, the
 * monitor retiring it) that never undo each other and claim the destroy once.
 */
class QpLifecycleTest {
  /** A lifecycle moved to {@code s} along legal moves. */
  private static QpLifecycle at(State s) {
    QpLifecycle l = new QpLifecycle();
    switch (s) {
      case CONNECTING -> {}
      case READY -> assertTrue(l.connected());
      case BROKEN -> assertTrue(l.stop("broken", ErrorKind.UNAVAILABLE));
      case RETIRING -> assertTrue(l.retire("retiring", ErrorKind.UNAVAILABLE));
      case DESTROY_CLAIMED -> assertTrue(l.claimDestroy());
      case DESTROYED, KEPT -> {
        assertTrue(l.claimDestroy());
        l.destroyEnded(s == State.DESTROYED);
      }
    }
    assertEquals(s, l.state());
    return l;
  }

  /** Moves {@code l} to {@code to} by the one method that asks for it. */
  private static boolean move(QpLifecycle l, State to) {
    return switch (to) {
      case CONNECTING -> false; // nothing moves back to it
      case READY -> l.connected();
      case BROKEN -> l.stop("stopped", ErrorKind.UNAVAILABLE);
      case RETIRING -> l.retire("retired", ErrorKind.UNAVAILABLE);
      case DESTROY_CLAIMED -> l.claimDestroy();
      case DESTROYED, KEPT -> {
        State before = l.state();
        l.destroyEnded(to == State.DESTROYED);
        yield l.state() != before;
      }
    };
  }

  @Test
  void everyMoveIsForwardAndOnlyAClaimedDestroyEnds() {
    int legal = 0;
    for (State from : State.values()) {
      for (State to : State.values()) {
        QpLifecycle l = at(from);
        boolean expected =
            !from.terminal()
                && to.ordinal() > from.ordinal()
                && (!to.terminal() || from == State.DESTROY_CLAIMED);
        assertEquals(expected, from.mayMoveTo(to), from + " -> " + to + " (the table)");
        assertEquals(expected, move(l, to), from + " -> " + to);
        assertEquals(expected ? to : from, l.state(), "after " + from + " -> " + to);
        assertEquals(l.state().ordinal() <= State.READY.ordinal(), l.takesWork());
        assertEquals(l.state().terminal(), l.settled().isDone());
        legal += expected ? 1 : 0;
      }
    }
    // CONNECTING: 4 (READY, BROKEN, RETIRING, DESTROY_CLAIMED); READY: 3; BROKEN: 2; RETIRING: 1;
    // DESTROY_CLAIMED: 2 (DESTROYED, KEPT); the terminal ones none.
    assertEquals(12, legal);
  }

  @Test
  void theFirstStopsReasonAndKindStandAndSettledSaysHowItEnded() {
    QpLifecycle l = new QpLifecycle();
    assertNull(l.reason(), "it takes work");
    assertTrue(l.connected());
    assertTrue(l.retire("its connection failed", ErrorKind.PEER_LOST));
    assertFalse(l.stop("the endpoint closes", ErrorKind.UNAVAILABLE), "retiring already");
    assertFalse(l.retire("again", ErrorKind.UNAVAILABLE), "retired once");
    assertEquals("its connection failed", l.reason());
    assertEquals(ErrorKind.PEER_LOST, l.kind(), "what it held fails as its connection did");
    assertTrue(l.claimDestroy());
    assertFalse(l.claimDestroy(), "the destroy is claimed once");
    l.destroyEnded(false);
    assertEquals(State.KEPT, l.settled().join());
    l.destroyEnded(true);
    assertEquals(State.KEPT, l.state(), "a kept QP is never destroyed after");
    assertFalse(l.destroyed());
  }

  @Test
  void racingMoversNeverUndoEachOtherAndTheDestroyIsClaimedOnce() throws Exception {
    StateTypes.racing(
        QpLifecycle::new,
        QpLifecycle::state,
        QpLifecycleTest::move,
        List.of(State.READY, State.BROKEN, State.RETIRING, State.DESTROY_CLAIMED),
        (l, won) -> {
          assertEquals(1, won.get(State.DESTROY_CLAIMED), "some racer claims the destroy, once");
          assertEquals(State.DESTROY_CLAIMED, l.state());
          assertFalse(l.takesWork());
          assertFalse(l.settled().isDone(), "nothing settles before the claimed destroy ends");
        });
  }
}
