package io.orbite.transport.tcp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Deterministic test bytes: the byte at absolute position {@code p} for {@code seed}. */
final class Patterns {
  private Patterns() {}

  static byte at(long seed, long p) {
    long x = (seed ^ 0x9E3779B97F4A7C15L) + p * 0xBF58476D1CE4E5B9L;
    x ^= x >>> 31;
    x *= 0x94D049BB133111EBL;
    x ^= x >>> 29;
    return (byte) x;
  }

  static void fill(MemorySegment s, long seed) {
    for (long p = 0; p < s.byteSize(); p++) {
      s.set(ValueLayout.JAVA_BYTE, p, at(seed, p));
    }
  }

  /** Index of the first byte of {@code s[from, from+len)} that differs from {@code seed} at {@code patternFrom + i}, or -1. */
  static long mismatch(MemorySegment s, long from, long len, long seed, long patternFrom) {
    for (long i = 0; i < len; i++) {
      if (s.get(ValueLayout.JAVA_BYTE, from + i) != at(seed, patternFrom + i)) {
        return from + i;
      }
    }
    return -1;
  }
}
