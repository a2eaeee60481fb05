package io.orbite.transport.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * How an SHM channel deals a run of tasks across its copy lanes: contiguous parts of whole tasks,
 * each lane in turn, every lane used by a run of at least as many equal tasks as lanes.
 */
class RunDealerTest {
  private static final long KIB = 1024;

  private static int[] deal(RunDealer dealer, long... lengths) {
    dealer.start(Arrays.stream(lengths).sum());
    int[] lanes = new int[lengths.length];
    for (int k = 0; k < lengths.length; k++) {
      lanes[k] = dealer.next(lengths[k]);
    }
    return lanes;
  }

  private static long[] same(int n, long length) {
    long[] lengths = new long[n];
    Arrays.fill(lengths, length);
    return lengths;
  }

  @Test
  void aRunSmallerThanEveryLanesPartIsSplitInContiguousHalves() {
    int[] lanes = deal(new RunDealer(2, 256 * KIB), same(64, 4 * KIB));
    for (int k = 0; k < 64; k++) {
      assertEquals(k < 32 ? 0 : 1, lanes[k], "task " + k + " of " + Arrays.toString(lanes));
    }
  }

  @Test
  void aLargeRunGoesInPartsOfTheMostBytesToTheLanesInTurn() {
    int[] lanes = deal(new RunDealer(2, 256 * KIB), same(1024, 4 * KIB));
    for (int k = 0; k < 1024; k++) {
      // 256 KiB parts: 64 tasks to lane 0, the next 64 to lane 1, and so on.
      assertEquals((k / 64) % 2, lanes[k], "task " + k);
    }
  }

  @Test
  void everyLaneGetsPartOfARunOfAtLeastAsManyEqualTasksAsLanes() {
    for (int laneCount = 1; laneCount <= 16; laneCount++) {
      for (int tasks = laneCount; tasks <= 200; tasks += 7) {
        int[] lanes = deal(new RunDealer(laneCount, 256 * KIB), same(tasks, 4 * KIB));
        int[] count = new int[laneCount];
        int switches = 0;
        for (int k = 0; k < tasks; k++) {
          assertTrue(lanes[k] >= 0 && lanes[k] < laneCount, "lane in range");
          count[lanes[k]]++;
          if (k > 0 && lanes[k] != lanes[k - 1]) {
            switches++;
          }
        }
        for (int i = 0; i < laneCount; i++) {
          assertTrue(
              count[i] > 0,
              laneCount
                  + " lanes, "
                  + tasks
                  + " tasks: lane "
                  + i
                  + " got none, "
                  + Arrays.toString(count));
        }
        // Contiguous parts: the lane changes only between parts, one part per lane while the run
        // is at most lanes x 256 KiB, parts of 256 KiB beyond.
        long run = tasks * 4 * KIB;
        long parts = Math.max(laneCount, (run + 256 * KIB - 1) / (256 * KIB));
        assertTrue(
            switches <= parts - 1,
            laneCount + " lanes, " + tasks + " tasks: " + switches + " lane changes");
      }
    }
  }

  @Test
  void tasksAsLargeAsAPartAlternateAndTheTurnCarriesOverToTheNextRun() {
    RunDealer dealer = new RunDealer(3, 256 * KIB);
    assertArrayEquals(new int[] {0, 1, 2, 0}, deal(dealer, same(4, 1 << 20)));
    // The last run ended its part on lane 0: the next starts on lane 1.
    assertArrayEquals(new int[] {1, 2}, deal(dealer, same(2, 1 << 20)));
    // A run of one small task fills its own part and passes the turn on.
    assertArrayEquals(new int[] {0}, deal(dealer, 4 * KIB));
    assertArrayEquals(new int[] {1}, deal(dealer, 4 * KIB));
    assertEquals(2, dealer.single());
    assertEquals(0, dealer.single());
  }

  @Test
  void partsEndWhereTheRunPassesEachBoundarySoNoLaneIsLeftOut() {
    RunDealer dealer = new RunDealer(5, 256 * KIB);
    // 48 KiB over 5 lanes: boundaries every 9830 B; 3, 2, 3, 2 and 2 tasks.
    assertArrayEquals(
        new int[] {0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4}, deal(dealer, same(12, 4 * KIB)));
    // That run ended with lane 4's part unfinished: the next starts on lane 0.
    assertEquals(0, deal(dealer, same(5, 4 * KIB))[0]);
  }

  @Test
  void anUnfinishedPartHandsTheNextRunToTheFollowingLane() {
    RunDealer dealer = new RunDealer(2, 256 * KIB);
    // 12 KiB over 2 lanes: a boundary at 6 KiB, so lane 0 takes two tasks and lane 1 one, whose
    // part is unfinished: the next run starts on lane 0 again.
    assertArrayEquals(new int[] {0, 0, 1}, deal(dealer, same(3, 4 * KIB)));
    assertArrayEquals(new int[] {0, 0, 1}, deal(dealer, same(3, 4 * KIB)));
  }

  @Test
  void badSizesAreRefusedNamingBoth() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new RunDealer(0, 256 * KIB));
    assertTrue(e.getMessage().contains("got 0 and 262144"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new RunDealer(2, 0));
  }
}
