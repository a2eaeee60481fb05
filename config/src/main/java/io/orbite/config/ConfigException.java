package io.orbite.config;

import java.util.Objects;

/**
 * A configuration document or value was rejected.
 *
 * <p>Every rejection names where it happened: {@link #path()} is the dotted path of the offending key
 * relative to the document root (for example {@code tcp.lanes}), or {@code $} for problems with the
 * document as a whole (size, syntax, empty, root not an object, unreadable file). The exception message
 * always starts with the path followed by {@code ": "}, for example
 * {@code tcp.lanes: must be 1..64, got 0}.
 */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The path used for problems that concern the whole document rather than one key. */
    public static final String ROOT_PATH = "$";

    private final String path;
    private final String detail;

    /**
     * @param path   dotted path of the offending key relative to the root, or {@link #ROOT_PATH}
     * @param detail what is wrong, without the path (for example {@code must be 1..64, got 0})
     */
    public ConfigException(String path, String detail) {
        this(path, detail, null);
    }

    /**
     * @param path   dotted path of the offending key relative to the root, or {@link #ROOT_PATH}
     * @param detail what is wrong, without the path
     * @param cause  the underlying failure, may be {@code null}
     */
    public ConfigException(String path, String detail, Throwable cause) {
        super(Objects.requireNonNull(path, "path") + ": " + Objects.requireNonNull(detail, "detail"), cause);
        this.path = path;
        this.detail = detail;
    }

    /** Dotted path of the offending key relative to the document root, or {@code $} for the whole document. */
    public String path() {
        return path;
    }

    /** The message without the leading path, for example {@code must be 1..64, got 0}. */
    public String detail() {
        return detail;
    }
}
