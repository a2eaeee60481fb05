package io.orbite.engine.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.spi.Lifecycle;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The checks every forward-only state type gets (the pattern of {@code LaneLifecycleTest}): every
 * pair of states against the moves the type should allow, and racing movers that never undo each
 * other.
 */
public final class StateTypes {
  private StateTypes() {}

  /**
   * Checks every pair of {@code type}'s states: a lifecycle moved to {@code from} (from the first
   * state, by a legal path) moves to {@code to} exactly when {@code legal} has that pair, and a
   * terminal state has no move.
   *
   * @param type the state enum
   * @param legal the legal moves, each {@code List.of(from, to)}
   * @param <S> the state type
   */
  public static <S extends Enum<S> & Lifecycle.Stage<S>> void everyPair(
      Class<S> type, Set<List<S>> legal) {
    S[] states = type.getEnumConstants();
    for (S from : states) {
      for (S to : states) {
        boolean expected = legal.contains(List.of(from, to));
        assertEquals(expected, from.mayMoveTo(to), from + " -> " + to);
        Lifecycle<S> l = at(states[0], from, legal);
        assertEquals(expected, l.moveTo(to), from + " -> " + to + " on a lifecycle");
        assertEquals(expected ? to : from, l.state(), "after " + from + " -> " + to);
      }
      if (from.terminal()) {
        for (S to : states) {
          assertTrue(!from.mayMoveTo(to), from + " is terminal, yet moves to " + to);
        }
      }
    }
  }

  /** A lifecycle in {@code target}, reached from {@code first} by legal moves. */
  private static <S extends Enum<S> & Lifecycle.Stage<S>> Lifecycle<S> at(
      S first, S target, Set<List<S>> legal) {
    Lifecycle<S> l = new Lifecycle<>(first);
    if (target != first) {
      assertTrue(
          legal.contains(List.of(first, target)) && l.moveTo(target),
          target + " is reachable from " + first + " in one move");
    }
    return l;
  }

  /**
   * Racing movers: threads that each try one move from the first state succeed at most once each,
   * the state only goes forward, and when {@code terminals} race one of them ends it.
   *
   * @param type the state enum
   * @param moves the states the racers try to move to
   * @param terminals the terminal states among {@code moves}
   * @param <S> the state type
   */
  public static <S extends Enum<S> & Lifecycle.Stage<S>> void racing(
      Class<S> type, List<S> moves, Set<S> terminals) throws InterruptedException {
    S first = type.getEnumConstants()[0];
    for (int round = 0; round < 200; round++) {
      Lifecycle<S> l = new Lifecycle<>(first);
      List<AtomicInteger> won = new ArrayList<>();
      moves.forEach(m -> won.add(new AtomicInteger()));
      List<Runnable> movers = new ArrayList<>();
      for (int t = 0; t < 2 * moves.size(); t++) {
        int which = t % moves.size();
        movers.add(
            () -> {
              if (l.moveTo(moves.get(which))) {
                won.get(which).incrementAndGet();
              }
            });
      }
      Racers.race(movers);
      for (AtomicInteger w : won) {
        assertTrue(w.get() <= 1, "a move is won at most once");
      }
      if (!terminals.isEmpty()) {
        assertTrue(terminals.contains(l.state()), "a terminal move won: " + l.state());
        int terminalWins = 0;
        for (int i = 0; i < moves.size(); i++) {
          terminalWins += terminals.contains(moves.get(i)) ? won.get(i).get() : 0;
        }
        assertEquals(1, terminalWins, "exactly one terminal state is reached");
      }
    }
  }

  /** The usual forward relation of {@code type}: every later state, from a non-terminal one. */
  public static <S extends Enum<S> & Lifecycle.Stage<S>> Set<List<S>> forward(Class<S> type) {
    Set<List<S>> out = new HashSet<>();
    for (S from : EnumSet.allOf(type)) {
      for (S to : EnumSet.allOf(type)) {
        if (!from.terminal() && to.ordinal() > from.ordinal()) {
          out.add(List.of(from, to));
        }
      }
    }
    return out;
  }
}
