package io.orbite.qualification.verify;

/**
 * A range {@code [offset, offset + length)} of a region that should hold pattern {@code seed}
 * starting at pattern position {@code from}; everything outside the listed spans is guard bytes.
 */
public record Span(long offset, long length, long seed, long from) {}
