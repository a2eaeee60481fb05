package io.orbite.qualification.verify;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Deterministic test bytes. The byte at position {@code p} of pattern {@code seed} is byte {@code p
 * & 7} (little-endian) of a 64-bit mix of {@code (seed, p >>> 3)}, so any range of any pattern can
 * be produced or checked independently of how it is chunked, at memory speed. Each thread keeps one
 * scratch buffer.
 */
public final class Pattern {
  private static final int CHUNK = 1 << 20;
  private static final ValueLayout.OfLong LE_LONG =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ThreadLocal<MemorySegment> SCRATCH =
      ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CHUNK + 16, 8));

  private Pattern() {}

  static long word(long seed, long index) {
    long x = seed * 0x9E3779B97F4A7C15L + index;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  /** The pattern byte at position {@code p}. */
  public static byte at(long seed, long p) {
    return (byte) (word(seed, p >>> 3) >>> ((p & 7) * 8));
  }

  /** Writes pattern bytes {@code [from, from + length)} into {@code dst} at {@code offset}. */
  public static void fill(MemorySegment dst, long offset, long length, long seed, long from) {
    MemorySegment scratch = SCRATCH.get();
    for (long done = 0; done < length; done += CHUNK) {
      int n = (int) Math.min(CHUNK, length - done);
      int shift = generate(scratch, seed, from + done, n);
      MemorySegment.copy(scratch, shift, dst, offset + done, n);
    }
  }

  /**
   * Checks that {@code seg[offset, offset + length)} holds pattern bytes {@code [from, from +
   * length)}.
   *
   * @return the index in {@code seg} of the first wrong byte, or -1
   */
  public static long verify(MemorySegment seg, long offset, long length, long seed, long from) {
    MemorySegment scratch = SCRATCH.get();
    for (long done = 0; done < length; done += CHUNK) {
      int n = (int) Math.min(CHUNK, length - done);
      int shift = generate(scratch, seed, from + done, n);
      long at =
          MemorySegment.mismatch(seg, offset + done, offset + done + n, scratch, shift, shift + n);
      if (at >= 0) {
        return offset + done + at;
      }
    }
    return -1;
  }

  /** Generates pattern bytes starting at {@code start} into scratch; returns where they begin. */
  private static int generate(MemorySegment scratch, long seed, long start, int n) {
    int shift = (int) (start & 7);
    long first = start >>> 3;
    int words = (shift + n + 7) >>> 3;
    for (int w = 0; w < words; w++) {
      scratch.set(LE_LONG, (long) w * 8, word(seed, first + w));
    }
    return shift;
  }
}
