package io.orbite.engine.wire;

/**
 * A frame broke the protocol (foreign magic, unknown version or type, absurd or inconsistent
 * length, truncated header, a response from another incarnation, or a malformed HELLO identity).
 * The connection that carried it must be closed; nothing of its payload has been read, but for a
 * HELLO's identity, which is read whole before it is judged.
 */
public final class FrameRejectedException extends Exception {
  /** Which rule the frame broke. */
  public enum Reason {
    FOREIGN_MAGIC,
    UNSUPPORTED_VERSION,
    UNKNOWN_TYPE,
    ABSURD_LENGTH,
    INCONSISTENT_LENGTH,
    TRUNCATED_HEADER,
    UNEXPECTED_TYPE,
    /** A response on a lane that names another incarnation than the one the lane was opened to. */
    WRONG_EPOCH,
    /** A payload whose contents break its format (a HELLO's requester identity). */
    MALFORMED_PAYLOAD
  }

  private final Reason reason;
  private final String detail;

  public FrameRejectedException(Reason reason, String message) {
    super(reason + ": " + message, null, false, false);
    this.reason = reason;
    this.detail = message;
  }

  /**
   * The refusal for a user's message: a foreign peer's says what it is (its sentence already names
   * the protocol or says it is not OrbiTE's), any other rule is named before what broke it.
   */
  public String describe() {
    return reason == Reason.FOREIGN_MAGIC ? detail : getMessage();
  }

  public Reason reason() {
    return reason;
  }
}
