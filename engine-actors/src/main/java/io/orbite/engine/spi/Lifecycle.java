package io.orbite.engine.spi;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The lifecycle of one owner that is not an actor (a lane, a QP, a grant reservation, a batch's
 * lease, a registration, a peer-table entry) as one state value: any thread reads it with one
 * volatile read, and it only moves forward. The legal moves are the state type's own ({@link
 * Stage#mayMoveTo}); a move that is not legal from the state now is refused ({@link #moveTo}
 * returns false and nothing changes), so racing movers need no lock and never undo each other.
 *
 * <p>Each state type keeps its diagram in its Javadoc; docs/architecture.md lists its states in a
 * table that {@code LifecycleDocsTest} keeps equal to the enum.
 *
 * @param <S> the state type
 */
public final class Lifecycle<S extends Enum<S> & Lifecycle.Stage<S>> {
  /** A state of a lifecycle: it says which states may follow it. */
  public interface Stage<S> {
    /**
     * Whether a lifecycle in this state may move to {@code next}.
     *
     * @param next the state asked for
     * @return true for a legal move (never for a move to the same state)
     */
    boolean mayMoveTo(S next);

    /**
     * Whether nothing moves a lifecycle out of this state.
     *
     * @return true for a terminal state
     */
    boolean terminal();
  }

  /**
   * The usual rule: a state may move to any later one (in declaration order) unless it is terminal.
   *
   * @param from the state now
   * @param next the state asked for
   * @return whether {@code from} may move to {@code next} under that rule
   * @param <S> the state type
   */
  public static <S extends Enum<S> & Stage<S>> boolean forward(S from, S next) {
    return !from.terminal() && next.ordinal() > from.ordinal();
  }

  private final AtomicReference<S> state;

  /**
   * A lifecycle starting in {@code initial}.
   *
   * @param initial the first state
   */
  public Lifecycle(S initial) {
    this.state = new AtomicReference<>(initial);
  }

  /**
   * The state now.
   *
   * @return the state (one volatile read)
   */
  public S state() {
    return state.get();
  }

  /**
   * Whether the state now is {@code s}.
   *
   * @param s a state
   * @return true when it is
   */
  public boolean is(S s) {
    return state.get() == s;
  }

  /**
   * Moves to {@code next} if that is a legal move from the state now.
   *
   * @param next the state asked for
   * @return true when this call moved it; false (and nothing changes) otherwise
   */
  public boolean moveTo(S next) {
    while (true) {
      S now = state.get();
      if (!now.mayMoveTo(next)) {
        return false;
      }
      if (state.compareAndSet(now, next)) {
        return true;
      }
    }
  }

  /**
   * Moves from exactly {@code expected} to {@code next}: a claim only one of several racing callers
   * wins (a destroy claimed once, a reservation ended once).
   *
   * @param expected the state the caller saw
   * @param next the state asked for
   * @return true when this call made the move
   */
  public boolean moveFrom(S expected, S next) {
    return expected.mayMoveTo(next) && state.compareAndSet(expected, next);
  }

  @Override
  public String toString() {
    return state.get().name().toLowerCase(Locale.ROOT);
  }
}
