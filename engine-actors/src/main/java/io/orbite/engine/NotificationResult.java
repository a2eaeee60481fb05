package io.orbite.engine;

/**
 * What became of a notification, as far as its sender knows.
 *
 * @param state where it stands
 * @param errorKind why it was not delivered (REFUSED, NOT_SENT, UNKNOWN); null otherwise
 * @param detail a human-readable explanation; empty when DELIVERED, NONE or PENDING
 */
public record NotificationResult(State state, ErrorKind errorKind, String detail) {
  /** Where a notification stands. */
  public enum State {
    /** No notification was attached to the submission. */
    NONE,
    /** Not yet decided: a task of its submission is pending, or the peer has not answered yet. */
    PENDING,
    /** The peer's inbox accepted it: it is delivered to the peer's receivers exactly once. */
    DELIVERED,
    /**
     * The peer answered and refused it; not delivered. Why: its inbox was full
     * (RESOURCE_EXHAUSTED), the tag or payload was over the peer's own bound (INVALID_ARGUMENT,
     * naming its key), another incarnation answers at the peer's endpoint now (EPOCH_MISMATCH), or
     * the peer is closing (UNAVAILABLE).
     */
    REFUSED,
    /**
     * It was never sent: a WRITE of its submission failed (or was cancelled), or no connection to
     * the peer could be made. Not delivered.
     */
    NOT_SENT,
    /**
     * It was sent, but the answer was lost (the connection broke). It may or may not have been
     * delivered; it is never sent again (at most once).
     */
    UNKNOWN
  }

  public static final NotificationResult NONE = new NotificationResult(State.NONE, null, "");
  public static final NotificationResult PENDING = new NotificationResult(State.PENDING, null, "");
  public static final NotificationResult DELIVERED =
      new NotificationResult(State.DELIVERED, null, "");

  /** Checks the components. */
  public NotificationResult {
    java.util.Objects.requireNonNull(state, "NotificationResult.state is null");
    detail = detail == null ? "" : detail;
  }

  /**
   * Whether the peer accepted it.
   *
   * @return true when DELIVERED
   */
  public boolean delivered() {
    return state == State.DELIVERED;
  }
}
