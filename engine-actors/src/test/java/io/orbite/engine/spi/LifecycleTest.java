package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
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
    for (int round = 0; round < 200; round++) {
      Lifecycle<Sample> l = new Lifecycle<>(Sample.A);
      Sample[] moves = {Sample.B, Sample.C, Sample.X};
      AtomicInteger[] won = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        int which = t % moves.length;
        threads.add(
            Thread.ofPlatform()
                .start(
                    () -> {
                      try {
                        go.await();
                      } catch (InterruptedException e) {
                        return;
                      }
                      if (l.moveTo(moves[which])) {
                        won[which].incrementAndGet();
                      }
                    }));
      }
      go.countDown();
      for (Thread t : threads) {
        t.join();
      }
      for (AtomicInteger w : won) {
        assertTrue(w.get() <= 1, "a move is won at most once");
      }
      assertTrue(l.state().terminal(), "some terminal move won: " + l.state());
      assertEquals(1, won[1].get() + won[2].get(), "exactly one terminal state is reached");
    }
  }
}
