package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;

/** Byte checks shared by the adversarial tests: whole regions, payload and guards. */
public final class Bytes {
  private Bytes() {}

  /**
   * Every byte of {@code region}: the spans hold their patterns, everything else the guard pattern.
   */
  static void assertRegion(MemorySegment region, List<Span> spans, long guardSeed, String what) {
    long bad = RegionCheck.check(region, spans, guardSeed);
    assertEquals(-1, bad, () -> what + ": first wrong byte at " + bad + " of " + region.byteSize());
  }

  /**
   * Every byte of {@code [offset, offset + length)} holds either pattern {@code a} (from {@code
   * fromA}) or pattern {@code b} (from {@code fromB}) at its position: what a range that may have
   * been partly written holds.
   */
  public static void assertEachByteIsOneOf(
      MemorySegment region,
      long offset,
      long length,
      long a,
      long fromA,
      long b,
      long fromB,
      String what) {
    for (long i = 0; i < length; i++) {
      byte v = region.get(ValueLayout.JAVA_BYTE, offset + i);
      if (v != Pattern.at(a, fromA + i) && v != Pattern.at(b, fromB + i)) {
        throw new AssertionError(
            what + ": byte " + (offset + i) + " is neither pattern " + a + " nor " + b);
      }
    }
  }

  /** A private copy of {@code region}, to compare it with later. */
  static MemorySegment snapshot(MemorySegment region) {
    MemorySegment copy = Arena.ofAuto().allocate(region.byteSize(), 64);
    MemorySegment.copy(region, 0, copy, 0, region.byteSize());
    return copy;
  }

  /** Asserts that {@code region} still equals {@code snapshot}, byte for byte. */
  static void assertUnchanged(MemorySegment region, MemorySegment snapshot, String what) {
    long at = region.mismatch(snapshot);
    assertEquals(-1, at, () -> what + ": byte " + at + " changed");
  }

  /**
   * Asserts that {@code region} stays equal to {@code snapshot} for the whole of {@code period}:
   * bytes that must never arrive are given that long to arrive.
   */
  static void assertStaysUnchanged(
      MemorySegment region, MemorySegment snapshot, Duration period, String what) {
    boolean changed = Await.until(period, () -> region.mismatch(snapshot) >= 0);
    long at = region.mismatch(snapshot);
    assertEquals(
        -1, at, () -> what + ": byte " + at + " changed" + (changed ? " during the watch" : ""));
  }
}
