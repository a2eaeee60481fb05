package io.orbite.qualification.verify;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Checks a whole region byte for byte: each span holds its pattern, and every byte between spans
 * (the guards) still holds the guard pattern at its own position.
 */
public final class RegionCheck {
  private RegionCheck() {}

  /**
   * @return the index of the first wrong byte, or -1 if every byte of the region is right
   */
  public static long check(MemorySegment region, List<Span> spans, long guardSeed) {
    List<Span> sorted = new ArrayList<>(spans);
    sorted.sort(Comparator.comparingLong(Span::offset));
    long at = 0;
    for (Span s : sorted) {
      if (s.offset() < at) {
        throw new IllegalArgumentException("spans overlap at " + s.offset());
      }
      long bad = Pattern.verify(region, at, s.offset() - at, guardSeed, at);
      if (bad >= 0) {
        return bad;
      }
      bad = Pattern.verify(region, s.offset(), s.length(), s.seed(), s.from());
      if (bad >= 0) {
        return bad;
      }
      at = s.offset() + s.length();
    }
    return Pattern.verify(region, at, region.byteSize() - at, guardSeed, at);
  }
}
