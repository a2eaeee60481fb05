package io.orbite.nativebind;

import java.util.Objects;
import java.util.Optional;

/**
 * The result of probing a native library once: available, or unavailable with a cause. Immutable;
 * kept in a {@code static final} field of the library's class.
 */
public final class Availability {
  private final String library;
  private final String cause; // null when available

  private Availability(String library, String cause) {
    this.library = Objects.requireNonNull(library, "library");
    this.cause = cause;
  }

  public static Availability available(String library) {
    return new Availability(library, null);
  }

  public static Availability unavailable(String library, String cause) {
    return new Availability(library, Objects.requireNonNull(cause, "cause"));
  }

  public String library() {
    return library;
  }

  public boolean isAvailable() {
    return cause == null;
  }

  /** Why the library is unavailable; empty when it is available. */
  public Optional<String> cause() {
    return Optional.ofNullable(cause);
  }

  /**
   * Throws {@link NativeUnavailableException} naming the library, its cause and {@code function} if
   * unavailable.
   */
  public void require(String function) {
    if (cause != null) {
      throw new NativeUnavailableException(library, cause, function);
    }
  }

  @Override
  public String toString() {
    return cause == null ? library + ": available" : library + ": unavailable (" + cause + ")";
  }
}
