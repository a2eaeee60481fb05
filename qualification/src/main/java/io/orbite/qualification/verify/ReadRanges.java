package io.orbite.qualification.verify;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Checks a READ destination byte for byte after a batch some of whose READs may have failed: the
 * region held the stale pattern before the batch and the source held the fresh one, both at the
 * same positions (a READ's local offset equals its remote offset). Outside every READ's range (the
 * guards) each byte is still stale; inside a completed READ's range each byte is fresh; inside a
 * failed one each byte is stale or fresh (a failed READ reports effect {@code NONE}, yet bytes of
 * its slices may have landed), never anything else.
 */
public final class ReadRanges {
  private ReadRanges() {}

  /**
   * Checks {@code region}.
   *
   * @param region the READs' destination
   * @param staleSeed the pattern the region held before the READs
   * @param freshSeed the pattern the source held
   * @param ranges one {@code {offset, length, completed}} per READ, completed 1 or 0; not
   *     overlapping
   * @return the index of the first wrong byte, or -1 if every byte of the region is right
   */
  public static long check(
      MemorySegment region, long staleSeed, long freshSeed, List<long[]> ranges) {
    List<long[]> sorted = new ArrayList<>(ranges);
    sorted.sort(Comparator.comparingLong(r -> r[0]));
    long at = 0;
    for (long[] r : sorted) {
      if (r[0] < at) {
        throw new IllegalArgumentException("ranges overlap at " + r[0]);
      }
      long bad = Pattern.verify(region, at, r[0] - at, staleSeed, at);
      if (bad >= 0) {
        return bad;
      }
      bad =
          r[2] != 0
              ? Pattern.verify(region, r[0], r[1], freshSeed, r[0])
              : eitherPattern(region, r[0], r[1], staleSeed, freshSeed);
      if (bad >= 0) {
        return bad;
      }
      at = r[0] + r[1];
    }
    return Pattern.verify(region, at, region.byteSize() - at, staleSeed, at);
  }

  /**
   * The first byte of {@code [offset, offset + length)} that is neither pattern's, or -1. Ranges
   * that hold one pattern whole are settled at memory speed; only a mixed range is read byte by
   * byte.
   */
  private static long eitherPattern(
      MemorySegment region, long offset, long length, long staleSeed, long freshSeed) {
    if (Pattern.verify(region, offset, length, staleSeed, offset) < 0
        || Pattern.verify(region, offset, length, freshSeed, offset) < 0) {
      return -1;
    }
    for (long p = offset; p < offset + length; p++) {
      byte b = region.get(ValueLayout.JAVA_BYTE, p);
      if (b != Pattern.at(staleSeed, p) && b != Pattern.at(freshSeed, p)) {
        return p;
      }
    }
    return -1;
  }
}
