package io.orbite.engine;

/**
 * A call of the public API failed; {@link #kind()} says why, the message names what.
 *
 * <p>The message is {@code "<KIND>: <detail>"} with exactly one kind prefix: a detail that already
 * starts with kind prefixes (because it was built from another failure's message) loses them, so
 * {@code UNAVAILABLE: UNAVAILABLE: describe ...} cannot happen.
 */
public final class TransferException extends RuntimeException {
  /** Why the call failed; see {@link #kind()}. */
  private final ErrorKind kind;

  /** What failed, without the kind prefix; see {@link #detail()}. */
  private final String detail;

  /**
   * A failure of kind {@code kind}; its message is {@code "<KIND>: <message>"}.
   *
   * @param kind why the call failed
   * @param message what failed, without the kind (a leading kind prefix is removed)
   */
  public TransferException(ErrorKind kind, String message) {
    super(kind + ": " + withoutKindPrefix(message));
    this.kind = kind;
    this.detail = withoutKindPrefix(message);
  }

  /**
   * A failure of kind {@code kind} caused by {@code cause}; its message is {@code "<KIND>:
   * <message>"}.
   *
   * @param kind why the call failed
   * @param message what failed, without the kind (a leading kind prefix is removed)
   * @param cause the underlying failure, or null
   */
  public TransferException(ErrorKind kind, String message, Throwable cause) {
    super(kind + ": " + withoutKindPrefix(message), cause);
    this.kind = kind;
    this.detail = withoutKindPrefix(message);
  }

  /**
   * Why the call failed.
   *
   * @return the kind given at construction
   */
  public ErrorKind kind() {
    return kind;
  }

  /**
   * What failed: the message without its kind prefix.
   *
   * @return the detail; empty when the message given was null
   */
  public String detail() {
    return detail;
  }

  /**
   * What {@code failure} says, for use inside another message: a TransferException's {@link
   * #detail()}, another exception's message (its class name when it has none), with no kind prefix
   * and no wrapper class names.
   *
   * @param failure the failure to describe; CompletionException and ExecutionException wrappers are
   *     looked through to their cause
   * @return the description; {@code "unknown failure"} when {@code failure} is null
   */
  public static String describe(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (t == null) {
      return "unknown failure";
    }
    if (t instanceof TransferException te) {
      return te.detail();
    }
    String message = t.getMessage();
    return message == null || message.isBlank()
        ? t.getClass().getSimpleName()
        : withoutKindPrefix(message);
  }

  /** {@code message} without the {@code "<KIND>: "} prefixes it starts with, if any. */
  static String withoutKindPrefix(String message) {
    if (message == null) {
      return "";
    }
    String rest = message;
    boolean stripped;
    do {
      stripped = false;
      for (ErrorKind k : ErrorKind.values()) {
        String prefix = k.name() + ": ";
        if (rest.startsWith(prefix)) {
          rest = rest.substring(prefix.length());
          stripped = true;
          break;
        }
      }
    } while (stripped);
    return rest;
  }
}
