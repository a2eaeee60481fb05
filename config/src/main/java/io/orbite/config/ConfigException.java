package io.orbite.config;

import java.util.Objects;

/**
 * A configuration document or value was rejected.
 *
 * <p>Every rejection names where it happened: {@link #path()} is the dotted path of the offending
 * key relative to the document root (for example {@code tcp.lanes}), or {@code $} for problems with
 * the document as a whole (size, syntax, empty, root not an object, unreadable file). The exception
 * message always starts with the path followed by {@code ": "}, for example {@code tcp.lanes: must
 * be 1..64, got 0}.
 */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The path used for problems that concern the whole document rather than one key. */
  public static final String ROOT_PATH = "$";

  /** Dotted path of the offending key, or {@link #ROOT_PATH}; see {@link #path()}. */
  private final String path;

  /** What is wrong, without the leading path; see {@link #detail()}. */
  private final String detail;

  /**
   * A rejection with no underlying cause. The message is {@code path + ": " + detail}.
   *
   * @param path dotted path of the offending key relative to the root, or {@link #ROOT_PATH}
   * @param detail what is wrong, without the path (for example {@code must be 1..64, got 0})
   * @throws NullPointerException if {@code path} or {@code detail} is {@code null}
   */
  public ConfigException(String path, String detail) {
    this(path, detail, null);
  }

  /**
   * A rejection caused by another failure, for example the I/O error of an unreadable file, the
   * parser's error for malformed JSON, or the original rejection when it is rethrown with {@code
   * (in <file>)} appended. The message is {@code path + ": " + detail}.
   *
   * @param path dotted path of the offending key relative to the root, or {@link #ROOT_PATH}
   * @param detail what is wrong, without the path
   * @param cause the underlying failure, may be {@code null}
   * @throws NullPointerException if {@code path} or {@code detail} is {@code null}
   */
  public ConfigException(String path, String detail, Throwable cause) {
    super(
        Objects.requireNonNull(path, "path") + ": " + Objects.requireNonNull(detail, "detail"),
        cause);
    this.path = path;
    this.detail = detail;
  }

  /**
   * Dotted path of the offending key relative to the document root, or {@code $} for the whole
   * document.
   *
   * @return the path the message starts with, for example {@code tcp.lanes} or {@value #ROOT_PATH}
   */
  public String path() {
    return path;
  }

  /**
   * The message without the leading path, for example {@code must be 1..64, got 0}.
   *
   * @return what is wrong with the value at {@link #path()}, without the {@code path + ": "} prefix
   */
  public String detail() {
    return detail;
  }
}
