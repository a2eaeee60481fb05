package io.orbite.cluster;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** A byte pattern derived from a seed and the offset, so a check names the first wrong byte. */
final class Bytes {
  private Bytes() {}

  static byte at(long seed, long offset) {
    long x = (seed ^ (offset * 0x9E3779B97F4A7C15L)) * 0xBF58476D1CE4E5B9L;
    return (byte) (x ^ (x >>> 29));
  }

  /** Writes the pattern of {@code seed} over {@code length} bytes from {@code offset}. */
  static void fill(MemorySegment segment, long offset, long length, long seed) {
    for (long i = 0; i < length; i++) {
      segment.set(ValueLayout.JAVA_BYTE, offset + i, at(seed, offset + i));
    }
  }

  /**
   * The first offset in {@code offset..offset+length} whose byte is not the pattern of {@code seed}
   * at {@code patternOffset + (i - offset)}, or -1 when all are.
   */
  static long mismatch(
      MemorySegment segment, long offset, long length, long seed, long patternOffset) {
    for (long i = 0; i < length; i++) {
      if (segment.get(ValueLayout.JAVA_BYTE, offset + i) != at(seed, patternOffset + i)) {
        return offset + i;
      }
    }
    return -1;
  }
}
