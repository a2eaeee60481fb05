package io.orbite.nativebind;

/**
 * A function of a native library that is not available on this machine was called. Names the
 * library and the cause found when the library was probed (once, at class initialization).
 */
public final class NativeUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String library;
  private final String unavailabilityCause;

  public NativeUnavailableException(String library, String unavailabilityCause) {
    super("native library " + library + " is unavailable: " + unavailabilityCause);
    this.library = library;
    this.unavailabilityCause = unavailabilityCause;
  }

  public NativeUnavailableException(String library, String unavailabilityCause, String function) {
    super(
        "cannot call "
            + function
            + ": native library "
            + library
            + " is unavailable: "
            + unavailabilityCause);
    this.library = library;
    this.unavailabilityCause = unavailabilityCause;
  }

  /** The library's name, e.g. {@code "libc"}. */
  public String library() {
    return library;
  }

  /** Why the library is unavailable, e.g. {@code "symbol memfd_create not found"}. */
  public String unavailabilityCause() {
    return unavailabilityCause;
  }
}
