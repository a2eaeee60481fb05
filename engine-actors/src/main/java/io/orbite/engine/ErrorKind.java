package io.orbite.engine;

/**
 * Why a task or call failed. Stable numeric codes travel on the wire as frame status; never
 * renumber an existing kind. Every kind is counted by the engine.
 */
public enum ErrorKind {
  /** A request or argument is malformed: bad offset, zero length, unknown region. */
  INVALID_ARGUMENT(1),
  /** The range exists but this access (direction, visibility) is not granted. */
  PERMISSION_DENIED(2),
  /** The transport, peer or service cannot be reached or is not enabled. */
  UNAVAILABLE(3),
  /** The request names an older (or newer) incarnation of the peer than the live one. */
  EPOCH_MISMATCH(4),
  /** A bounded resource (budget, table, window) is full; nothing was changed. */
  RESOURCE_EXHAUSTED(5),
  /** The deadline passed before the task could be confirmed. */
  TIMEOUT(6),
  /** The caller cancelled the batch before the task was confirmed. */
  CANCELLED(7),
  /** The connection to the peer broke while the task was in flight. */
  PEER_LOST(8),
  /** The peer spoke something that is not this protocol, or broke its rules. */
  PROTOCOL(9),
  /** The batch still has tasks that may touch memory; it cannot be freed yet. */
  BATCH_BUSY(10),
  /** Drain could not be proven within the destruction window; resources stay retained. */
  UNQUIESCED(11);

  private static final ErrorKind[] BY_CODE = new ErrorKind[16];

  static {
    for (ErrorKind kind : values()) {
      BY_CODE[kind.code] = kind;
    }
  }

  private final int code;

  ErrorKind(int code) {
    this.code = code;
  }

  /**
   * The stable wire code of this kind (0 is reserved for success).
   *
   * @return the code, from 1 (INVALID_ARGUMENT) to 11 (UNQUIESCED)
   */
  public int code() {
    return code;
  }

  /**
   * The kind for a wire code, or {@code null} for 0 (success) and unknown codes.
   *
   * @param code a status read from the wire
   * @return the kind whose {@link #code()} is {@code code}, or {@code null}
   */
  public static ErrorKind fromCode(int code) {
    return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
  }
}
