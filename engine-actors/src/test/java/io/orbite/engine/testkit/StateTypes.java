package io.orbite.engine.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.spi.Lifecycle;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.function.Supplier;

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
    racing(
        () -> new Lifecycle<>(first),
        Lifecycle::state,
        Lifecycle::moveTo,
        moves,
        (l, won) -> {
          if (!terminals.isEmpty()) {
            assertTrue(terminals.contains(l.state()), "a terminal move won: " + l.state());
            int terminalWins = 0;
            for (S t : terminals) {
              terminalWins += won.getOrDefault(t, 0);
            }
            assertEquals(1, terminalWins, "exactly one terminal state is reached");
          }
        });
  }

  /**
   * Racing movers on a lifecycle that its own methods move: in each of 200 rounds, two threads per
   * move each try it once on a fresh lifecycle; a move is won at most once, no thread sees the
   * state go back, and {@code end} checks where the round ended.
   *
   * @param fresh a lifecycle in its first state
   * @param state reads its state
   * @param move makes one move by the lifecycle's own method: true when this call made it
   * @param moves the states the racers try to move to
   * @param end checks the lifecycle and how often each move was won, after a round
   * @param <L> the lifecycle
   * @param <S> its state type
   * @throws InterruptedException if interrupted while waiting for a round
   */
  public static <L, S extends Enum<S>> void racing(
      Supplier<L> fresh,
      Function<L, S> state,
      BiPredicate<L, S> move,
      List<S> moves,
      BiConsumer<L, Map<S, Integer>> end)
      throws InterruptedException {
    for (int round = 0; round < 200; round++) {
      L l = fresh.get();
      Map<S, AtomicInteger> won = new HashMap<>();
      moves.forEach(m -> won.put(m, new AtomicInteger()));
      List<Runnable> movers = new ArrayList<>();
      for (int t = 0; t < 2 * moves.size(); t++) {
        S to = moves.get(t % moves.size());
        movers.add(
            () -> {
              S before = state.apply(l);
              if (move.test(l, to)) {
                won.get(to).incrementAndGet();
              }
              S after = state.apply(l);
              assertTrue(after.ordinal() >= before.ordinal(), before + " then " + after);
            });
      }
      Racers.race(movers);
      Map<S, Integer> wins = new HashMap<>();
      won.forEach(
          (m, w) -> {
            assertTrue(w.get() <= 1, m + " won " + w.get() + " times");
            wins.put(m, w.get());
          });
      end.accept(l, wins);
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
