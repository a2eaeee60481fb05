package io.orbite.engine.wire;

/**
 * A frame broke the protocol (foreign magic, unknown version or type, absurd or inconsistent
 * length, truncated header, or a response from another incarnation). The connection that carried
 * it must be closed; nothing of its payload has been read.
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
    WRONG_EPOCH
  }

  private final Reason reason;

  public FrameRejectedException(Reason reason, String message) {
    super(reason + ": " + message, null, false, false);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
