package io.orbite.nativebind;

import java.util.Optional;

/**
 * A native call returned failure. Carries the call's name, its arguments as rendered by the
 * binding, and the errno captured by the linker for that very call.
 *
 * <p>Message form: {@code close(fd=-1) failed: EBADF (9)}.
 */
public final class NativeCallException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String call;
  private final String arguments;
  private final int errno;

  /**
   * @param call the native function, e.g. {@code "close"}
   * @param arguments the arguments rendered as {@code name=value} pairs, e.g. {@code "fd=-1"}
   * @param errno the errno captured for this call
   */
  public NativeCallException(String call, String arguments, int errno) {
    super(call + "(" + arguments + ") failed: " + Errno.describe(errno));
    this.call = call;
    this.arguments = arguments;
    this.errno = errno;
  }

  /** The native function that failed, e.g. {@code "close"}. */
  public String call() {
    return call;
  }

  /** The rendered arguments, e.g. {@code "fd=-1"}. */
  public String arguments() {
    return arguments;
  }

  /** The errno number. */
  public int errno() {
    return errno;
  }

  /** The errno's symbolic name, e.g. {@code "EBADF"}, or {@code "errno 1234"} if unknown. */
  public String errnoName() {
    return Errno.nameOf(errno);
  }

  /** The errno as a constant, if known. */
  public Optional<Errno> errnoConstant() {
    return Errno.of(errno);
  }

  /** Whether the errno is {@code e}. */
  public boolean is(Errno e) {
    return e.number() == errno;
  }
}
