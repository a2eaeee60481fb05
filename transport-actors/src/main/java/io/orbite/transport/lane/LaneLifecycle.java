package io.orbite.transport.lane;

import io.orbite.engine.spi.Lifecycle;

/**
 * The lifecycle of one lane (a TCP requester or source lane, an SHM copy lane, a file ring lane, an
 * RDMA CQ lane) as one state value, readable by any thread with one volatile read. A lane only
 * moves forward:
 *
 * <pre>
 *   RUNNING ──► DRAINING ──► CLOSING ──► CLOSED
 *      │            │           │
 *      └────────────┴───────────┴──────► QUARANTINED
 * </pre>
 *
 * <p>{@code RUNNING}: it takes work. {@code DRAINING}: it broke (a connection reset, a protocol
 * error, a fenced peer) and fails or hands over what it holds; a broken TCP lane may offer its
 * READs to another lane. {@code CLOSING}: it was closed on purpose and fails what it holds, never
 * retrying it elsewhere (a close while draining makes the drain deliberate). {@code CLOSED}: its
 * thread no longer touches any task's memory. {@code QUARANTINED}: it could not show that within
 * the destruction window and keeps what it holds. A move to an earlier or equal state, or between
 * the two terminal ones, is refused ({@link #moveTo} returns false), so racing closers and the
 * lane's own end need no lock and never undo each other.
 */
public final class LaneLifecycle {
  /** Where a lane stands; the order of the constants is the only order a lane moves in. */
  public enum State implements Lifecycle.Stage<State> {
    RUNNING,
    DRAINING,
    CLOSING,
    CLOSED,
    QUARANTINED;

    /** CLOSED and QUARANTINED: nothing moves a lane out of them. */
    @Override
    public boolean terminal() {
      return this == CLOSED || this == QUARANTINED;
    }

    /** Whether a lane in this state may move to {@code next}. */
    @Override
    public boolean mayMoveTo(State next) {
      return Lifecycle.forward(this, next);
    }
  }

  private final Lifecycle<State> state = new Lifecycle<>(State.RUNNING);

  /** The state now. */
  public State state() {
    return state.state();
  }

  /** Whether the lane still takes work. */
  public boolean running() {
    return state.is(State.RUNNING);
  }

  /**
   * Moves to {@code next} if that is a legal move from the state now; false (and nothing changes)
   * when the lane is already there or further on.
   */
  public boolean moveTo(State next) {
    return state.moveTo(next);
  }

  @Override
  public String toString() {
    return state.toString();
  }
}
