package io.orbite.qualification.qualify;

/**
 * A profile that cannot be run as written; the message names the value's path and what is wrong.
 */
public final class ProfileException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error whose message starts with the path of the value at fault. */
  public ProfileException(String message) {
    super(message);
  }
}
