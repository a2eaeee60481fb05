package io.orbite.engine.spi;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.TransferException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The state of one peer channel, the same on every transport, and the one mapping from that state
 * to the error kind a refused task or call gets (DESIGN C18). A channel keeps no flag of its own
 * beside it: whether it accepts work, and why not, is read here.
 *
 * <pre>
 *   ACTIVE ◄──► RECONNECTING
 *     │            │
 *     └─────┬──────┘
 *           ▼
 *   CLOSED(PEER_LOST | LOCAL_CLOSE) ──► CLOSED(HELD) ──► FENCED(newer epoch)
 *   (a move may skip any state to its right; none goes left, and only ACTIVE and RECONNECTING
 *   move both ways between each other)
 * </pre>
 *
 * <p>{@code RECONNECTING}: every lane of the channel broke and drained, and lanes are being rebuilt
 * while the peer proves, by its HELLO, that it still runs the same epoch. The channel still takes
 * work ({@link #active()} is true): a task waits for a lane within its deadline, or is refused
 * PEER_LOST when the configuration says so. A HELLO answered by another epoch fences it; a peer
 * that answers no reconnection within the configured bound closes it (PEER_LOST).
 *
 * <p>{@code ACTIVE}: it takes work. {@code CLOSED}: it takes none, for a reason of this incarnation
 * ({@link Why}): its peer was lost, this engine closed it, or its owner holds memory it could not
 * prove released. {@code FENCED}: a newer incarnation of the peer answers at its endpoint; it never
 * sends again (C3), and a closed channel still moves here when the newer epoch is learned later, so
 * a restart learned after a loss reads as a restart. A closed channel whose owner then cannot prove
 * its workers let go (a drain past the destruction window) moves on to CLOSED(HELD): what it holds
 * outranks why it closed, so later refusals read UNQUIESCED. Nothing leaves FENCED. The state moves
 * by compare-and-set, so the first closer's reason stands and racing movers never undo each other.
 */
public final class ChannelGate {
  /** Why a channel of this incarnation closed. */
  public enum Why {
    /** The peer stopped answering: its connection broke, its process ended. Tasks: PEER_LOST. */
    PEER_LOST,
    /** This engine closed the channel (a close, a side close, shutdown). Tasks: UNAVAILABLE. */
    LOCAL_CLOSE,
    /**
     * The channel's owner could not prove its workers let go and keeps what it holds (a quarantined
     * endpoint). Tasks: UNQUIESCED.
     */
    HELD
  }

  /** A state of a channel. */
  public sealed interface State permits Active, Reconnecting, Closed, Fenced {}

  /** The channel takes work. */
  public enum Active implements State {
    /** The one value. */
    INSTANCE
  }

  /**
   * No lane works; lanes are being rebuilt to the same incarnation. The channel still takes work.
   *
   * @param reason why the last lane was lost, for messages
   * @param sinceNanos when the channel began reconnecting ({@link System#nanoTime()})
   */
  public record Reconnecting(String reason, long sinceNanos) implements State {}

  /**
   * The channel takes no work, for a reason of this incarnation.
   *
   * @param why the kind of closure
   * @param reason a sentence for messages
   */
  public record Closed(Why why, String reason) implements State {}

  /**
   * A newer incarnation answers at the peer's endpoint.
   *
   * @param newerEpoch the epoch learned (0 when only "not this one" is known)
   * @param reason a sentence for messages
   */
  public record Fenced(long newerEpoch, String reason) implements State {}

  /**
   * The error kind a task or call refused by a channel in {@code state} gets: the one mapping.
   *
   * @param state a channel's state
   * @return null for {@link Active}; PEER_LOST (also for a task refused while {@link
   *     Reconnecting}), UNAVAILABLE, UNQUIESCED or EPOCH_MISMATCH
   */
  public static ErrorKind kindOf(State state) {
    return switch (state) {
      case Active a -> null;
      case Reconnecting r -> ErrorKind.PEER_LOST;
      case Fenced f -> ErrorKind.EPOCH_MISMATCH;
      case Closed c ->
          switch (c.why()) {
            case PEER_LOST -> ErrorKind.PEER_LOST;
            case LOCAL_CLOSE -> ErrorKind.UNAVAILABLE;
            case HELD -> ErrorKind.UNQUIESCED;
          };
    };
  }

  private static int rank(State s) {
    return switch (s) {
      case Active a -> 0;
      case Reconnecting r -> 0;
      case Closed c -> c.why() == Why.HELD ? 2 : 1;
      case Fenced f -> 3;
    };
  }

  private final String label;
  private final AtomicReference<State> state = new AtomicReference<>(Active.INSTANCE);

  /**
   * A gate, active.
   *
   * @param label what messages call the channel, for example {@code the TCP channel to
   *     127.0.0.1:4000@5e1f}
   */
  public ChannelGate(String label) {
    this.label = label;
  }

  /**
   * What messages call the channel.
   *
   * @return the label
   */
  public String label() {
    return label;
  }

  /**
   * The state now.
   *
   * @return the state (one volatile read)
   */
  public State state() {
    return state.get();
  }

  /**
   * Whether the channel takes work.
   *
   * @return true while {@link Active} or {@link Reconnecting}
   */
  public boolean active() {
    State s = state.get();
    return s == Active.INSTANCE || s instanceof Reconnecting;
  }

  /**
   * Whether a lane of the channel works now.
   *
   * @return true while {@link Active}
   */
  public boolean working() {
    return state.get() == Active.INSTANCE;
  }

  /**
   * Marks an active channel reconnecting: its last lane broke and lanes are being rebuilt.
   *
   * @param reason why the last lane was lost
   * @return true when this call moved it (it was {@link Active})
   */
  public boolean reconnecting(String reason) {
    return state.compareAndSet(Active.INSTANCE, new Reconnecting(reason, System.nanoTime()));
  }

  /**
   * Marks a reconnecting channel active again: a lane to the same incarnation works.
   *
   * @return true when this call moved it (it was {@link Reconnecting}); false when it was active,
   *     closed or fenced meanwhile
   */
  public boolean restored() {
    while (true) {
      State now = state.get();
      if (!(now instanceof Reconnecting)) {
        return false;
      }
      if (state.compareAndSet(now, Active.INSTANCE)) {
        return true;
      }
    }
  }

  /**
   * Closes an active channel.
   *
   * @param why the kind of closure
   * @param reason why, for messages
   * @return true when this call moved it: it was active, or {@code why} is HELD and it was closed
   *     for another reason; false when it was already closed (or held) or fenced
   */
  public boolean close(Why why, String reason) {
    return move(new Closed(why, reason));
  }

  /**
   * Fences the channel: a newer incarnation answers at the peer's endpoint.
   *
   * @param newerEpoch the epoch learned, or 0
   * @param reason why, for messages
   * @return true when this call fenced it; false when it was already fenced
   */
  public boolean fence(long newerEpoch, String reason) {
    return move(new Fenced(newerEpoch, reason));
  }

  private boolean move(State next) {
    while (true) {
      State now = state.get();
      if (rank(next) <= rank(now)) {
        return false;
      }
      if (state.compareAndSet(now, next)) {
        return true;
      }
    }
  }

  /**
   * The kind a task or call refused now gets.
   *
   * @return null while {@link Active}, else {@link #kindOf} of the state
   */
  public ErrorKind refusalKind() {
    return kindOf(state.get());
  }

  /**
   * Why the channel refuses, as a sentence naming it.
   *
   * @return for example {@code the TCP channel to 127.0.0.1:4000@5e1f is fenced: a newer
   *     incarnation answers}; "... is active" while it takes work
   */
  public String refusal() {
    return switch (state.get()) {
      case Active a -> label + " is active";
      case Reconnecting r -> label + " is reconnecting: " + r.reason();
      case Fenced f -> label + " is fenced: " + f.reason();
      case Closed c ->
          switch (c.why()) {
            case PEER_LOST -> label + " lost its peer: " + c.reason();
            case LOCAL_CLOSE -> label + " is closed: " + c.reason();
            case HELD -> label + " is held: " + c.reason();
          };
    };
  }

  /**
   * The refusal as an exception, for a call refused before anything was admitted.
   *
   * @param prefix what was refused, for example {@code task 3: }
   * @return an exception of {@link #refusalKind()}, or UNAVAILABLE if the channel turned active
   */
  public TransferException refusalException(String prefix) {
    ErrorKind kind = refusalKind();
    return new TransferException(kind == null ? ErrorKind.UNAVAILABLE : kind, prefix + refusal());
  }

  /**
   * Fails {@code work} as refused by this channel, never sent: one failure receipt, effect NONE.
   *
   * @param work a task the channel did not take
   * @return 1, the receipts the task now owes (for {@link PeerChannel#dispatch})
   */
  public int refuse(TaskWork work) {
    ErrorKind kind = refusalKind();
    work.sink()
        .deliver(
            Receipt.failed(
                work.taskIndex(),
                kind == null ? ErrorKind.UNAVAILABLE : kind,
                RemoteEffect.NONE,
                refusal() + " (never sent)"));
    return 1;
  }

  @Override
  public String toString() {
    return refusal();
  }
}
