package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RailSelectorTest {
  private static final long BLOCK = 64 * 1024;
  private static final boolean[] BOTH = {true, true};

  private static int[] counts(int[] rails, int n) {
    int[] c = new int[n];
    for (int r : rails) {
      c[r]++;
    }
    return c;
  }

  @Test
  void aSingleSliceTakesTheLowestScoreAndEqualRailsTakeTurns() {
    RailSelector s = new RailSelector(new double[] {100, 100});
    int first = s.assign(1, BLOCK, BOTH)[0];
    int second = s.assign(1, BLOCK, BOTH)[0];
    assertTrue(first != second, "ties rotate: " + first + ", " + second);
    s.charge(0, 10L << 20);
    for (int i = 0; i < 4; i++) {
      assertEquals(1, s.assign(1, BLOCK, BOTH)[0], "the rail with bytes in flight scores worse");
    }
  }

  @Test
  void aFasterRailScoresBetterAndAMultiSliceParentSplitsByWeightWithLeftoversToTheBest() {
    RailSelector s = new RailSelector(new double[] {100, 300});
    assertEquals(1, s.assign(1, BLOCK, BOTH)[0]);
    int[] c = counts(s.assign(64, BLOCK, BOTH), 2);
    // Weights 1:3 of 64 slices: floor 16 and 48, nothing left over.
    assertArrayEquals(new int[] {16, 48}, c);
    int[] odd = counts(s.assign(7, BLOCK, BOTH), 2);
    // floor(7/4) = 1, floor(21/4) = 5, the leftover to the best (rail 1).
    assertArrayEquals(new int[] {1, 6}, odd);
  }

  @Test
  void everyHundredthMultiSliceParentProbesRoundRobinAndNeverAnIneligibleRail() {
    RailSelector s = new RailSelector(new double[] {100, 100, 400});
    boolean[] notRail0 = {false, true, true};
    for (int parent = 1; parent <= 300; parent++) {
      int[] rails = s.assign(6, BLOCK, notRail0);
      int[] c = counts(rails, 3);
      assertEquals(0, c[0], "parent " + parent + ": " + Arrays.toString(rails));
      if (parent % RailSelector.PROBE_EVERY == 0) {
        assertArrayEquals(new int[] {0, 3, 3}, c, "a probe deals round-robin");
      } else {
        assertTrue(c[2] > c[1], "otherwise by weight: " + Arrays.toString(c));
      }
    }
    assertNull(s.assign(1, BLOCK, new boolean[] {false, false, false}), "no eligible rail");
  }

  @Test
  void estimatesFollowTheirSamplesWithinTheirClampsAndChargesAreReturned() {
    RailSelector s = new RailSelector(new double[] {0}); // unknown rate: 400 Gb/s
    long seed = (long) (400e9 / 8);
    assertEquals(seed, s.load(0).linkBytesPerSecond());
    s.charge(0, 1000);
    s.posted(0, 1000, 0);
    // 1000 B in 1 s: far below a tenth of the seed, so clamped there.
    s.finished(0, 1000, true, true, 0, 1_000_000_000L);
    RailSelector.Load l = s.load(0);
    assertEquals(seed / 10, l.selectionBytesPerSecond(), seed / 1000.0);
    assertEquals(0, l.chargedBytes());
    assertEquals(1000, l.postedBytes());
    assertEquals(1000, l.completedBytes());
    assertEquals(1000, l.allocatedBytes());
    // 40 GB in 1 s, inside the clamps: the EWMA moves 99% of the way (old weight 0.01).
    s.charge(0, 40_000_000_000L);
    s.posted(0, 40_000_000_000L, 0);
    s.finished(0, 40_000_000_000L, true, true, 0, 1_000_000_000L);
    double expected = 0.01 * (seed / 10.0) + 0.99 * 40e9;
    assertEquals(expected, s.load(0).selectionBytesPerSecond(), expected * 1e-6);
    // A failed slice returns its charge and feeds no estimate.
    long before = s.load(0).selectionBytesPerSecond();
    s.charge(0, 5000);
    s.finished(0, 5000, false, true, 0, 10);
    assertEquals(before, s.load(0).selectionBytesPerSecond());
    assertEquals(0, s.load(0).chargedBytes());
  }
}
