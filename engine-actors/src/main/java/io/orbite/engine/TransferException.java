package io.orbite.engine;

/** A call of the public API failed; {@link #kind()} says why, the message names what. */
public final class TransferException extends RuntimeException {
  private final ErrorKind kind;

  public TransferException(ErrorKind kind, String message) {
    super(kind + ": " + message);
    this.kind = kind;
  }

  public TransferException(ErrorKind kind, String message, Throwable cause) {
    super(kind + ": " + message, cause);
    this.kind = kind;
  }

  public ErrorKind kind() {
    return kind;
  }
}
