package io.orbite.nativebind.verbs;

import io.orbite.nativebind.Errno;
import java.util.Objects;

/**
 * What a {@link Verbs} call that makes something answers: the thing, or the errno it failed with
 * and a detail naming the call and why. Immutable.
 */
public final class VerbsResult<T> {
  private final T value;
  private final int errno;
  private final String detail;

  private VerbsResult(T value, int errno, String detail) {
    this.value = value;
    this.errno = errno;
    this.detail = detail;
  }

  public static <T> VerbsResult<T> ok(T value) {
    return new VerbsResult<>(Objects.requireNonNull(value, "value"), 0, "");
  }

  /** A failure: {@code errno} must be positive; {@code detail} names the call and the cause. */
  public static <T> VerbsResult<T> failed(int errno, String detail) {
    if (errno <= 0) {
      throw new IllegalArgumentException(
          "a failed verbs call needs a positive errno, got " + errno);
    }
    return new VerbsResult<>(null, errno, Objects.requireNonNull(detail, "detail"));
  }

  public boolean ok() {
    return errno == 0;
  }

  /** 0 on success, else the errno. */
  public int errno() {
    return errno;
  }

  /** The thing made; throws IllegalStateException with {@link #describe()} when the call failed. */
  public T value() {
    if (errno != 0) {
      throw new IllegalStateException(describe());
    }
    return value;
  }

  /** {@code "ok"}, or the detail with the errno's name: {@code "ibv_reg_mr: EINVAL (...)"}. */
  public String describe() {
    return errno == 0 ? "ok" : detail + ": " + Errno.describe(errno);
  }

  @Override
  public String toString() {
    return errno == 0 ? "ok(" + value + ")" : "failed(" + describe() + ")";
  }
}
