package io.orbite.engine.priority;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Priority;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The post queue's order and aging (C14), on explicit times. */
class PostQueueTest {
  private static final long MS = 1_000_000L;
  private static final Priority[] TIERS = Priority.values();

  private static List<String> drain(PostQueue<String> q) {
    List<String> out = new ArrayList<>();
    for (String s = q.poll(); s != null; s = q.poll()) {
      out.add(s);
    }
    return out;
  }

  @Test
  void highThenMediumThenLowFifoWithinATier() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    q.offer("low1", Priority.LOW, 0);
    q.offer("med1", Priority.MEDIUM, 1);
    q.offer("low2", Priority.LOW, 2);
    q.offer("high1", Priority.HIGH, 3);
    q.offer("med2", Priority.MEDIUM, 4);
    q.offer("high2", Priority.HIGH, 5);
    assertEquals(List.of("high1", "high2", "med1", "med2", "low1", "low2"), drain(q));
    assertNull(q.poll());
  }

  @Test
  void aHighTaskQueuedAfterALowBacklogIsPostedFirst() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    for (int i = 0; i < 100; i++) {
      q.offer("low" + i, Priority.LOW, i);
    }
    q.offer("high", Priority.HIGH, 200);
    q.promote(5 * MS); // nothing has waited 10 ms yet
    assertEquals("high", q.poll());
    assertEquals("low0", q.poll());
  }

  @Test
  void aLowEntryWaitingTenMillisecondsIsPromotedOneTierPerPassKeepingItsAge() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    q.offer("low-old", Priority.LOW, 0);
    q.offer("low-new", Priority.LOW, 9 * MS);
    q.offer("med", Priority.MEDIUM, 10 * MS);
    q.promote(10 * MS); // the LOW head aged out: the whole LOW tier moves to MEDIUM
    assertEquals(0, q.size(Priority.LOW));
    assertEquals(3, q.size(Priority.MEDIUM));
    assertEquals(0, q.size(Priority.HIGH), "one tier per pass");
    q.offer("high-late", Priority.HIGH, 15 * MS);
    q.promote(10 * MS + MS / 2); // within a millisecond of the last pass: nothing
    assertEquals(3, q.size(Priority.MEDIUM));
    // The MEDIUM head's original age (11 ms) promotes its whole tier again; in HIGH, age order.
    q.promote(11 * MS);
    assertEquals(List.of("low-old", "low-new", "med", "high-late"), drain(q));
    assertEquals(5, q.promotions()); // two LOW entries, then three MEDIUM ones
  }

  @Test
  void perEntryPromotesOnlyTheEntriesThatAgedOut() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, true);
    q.offer("low-old", Priority.LOW, 0);
    q.offer("low-new", Priority.LOW, 5 * MS);
    q.offer("med", Priority.MEDIUM, 6 * MS);
    q.promote(10 * MS);
    assertEquals(List.of("low-old", "med", "low-new"), drain(q));
    assertEquals(1, q.promotions());
  }

  @Test
  void aNonPositiveTimeoutIsRefused() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> new PostQueue<String>(Duration.ZERO, false));
    assertEquals("promotion timeout must be positive, got PT0S", e.getMessage());
  }

  @Test
  void isEmptyUntilAnOfferAndAgainOnceEverythingWasPolled() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    assertTrue(q.isEmpty());
    q.offer("low", Priority.LOW, 0);
    assertFalse(q.isEmpty());
    q.poll();
    assertTrue(q.isEmpty());
  }

  @Test
  void removeIfHandsOverTheMatchesInPostOrderAndTheRestKeepTheirTierOrderAndAge() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    q.offer("low-x1", Priority.LOW, 0);
    q.offer("low-keep1", Priority.LOW, 1);
    q.offer("high-x", Priority.HIGH, 2);
    q.offer("med-keep", Priority.MEDIUM, 3 * MS);
    q.offer("low-x2", Priority.LOW, 4);
    q.offer("low-keep2", Priority.LOW, 5);
    q.offer("high-keep", Priority.HIGH, 6);
    List<String> removed = new ArrayList<>();
    assertEquals(3, q.removeIf(s -> s.contains("-x"), removed::add));
    assertEquals(List.of("high-x", "low-x1", "low-x2"), removed);
    assertEquals(4, q.size());
    assertEquals(2, q.size(Priority.LOW));
    // The kept LOW head keeps its age (enqueued at 1 ns): 10 ms later its tier joins MEDIUM,
    // ahead of the younger MEDIUM entry.
    q.promote(10 * MS + 1);
    assertEquals(List.of("high-keep", "low-keep1", "low-keep2", "med-keep"), drain(q));
  }

  @Test
  void whenTheSweepThrowsNothingItHasNotRemovedIsLost() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    for (String s : List.of("a-x", "b", "c-boom", "d-x", "e")) {
      q.offer(s, Priority.MEDIUM, 0);
    }
    List<String> removed = new ArrayList<>();
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () ->
                q.removeIf(
                    s -> {
                      if (s.contains("boom")) {
                        throw new IllegalStateException("boom");
                      }
                      return s.contains("-x");
                    },
                    removed::add));
    assertEquals("boom", e.getMessage());
    assertEquals(List.of("a-x"), removed);
    assertEquals(List.of("b", "c-boom", "d-x", "e"), drain(q));
  }

  @Test
  void drainToHandsOverEverythingInPostOrderAndEmptiesTheQueue() {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, true);
    q.offer("low", Priority.LOW, 0);
    q.offer("med", Priority.MEDIUM, 1);
    q.offer("high", Priority.HIGH, 2);
    q.offer("high2", Priority.HIGH, 3);
    List<String> out = new ArrayList<>();
    assertEquals(4, q.drainTo(out::add));
    assertEquals(List.of("high", "high2", "med", "low"), out);
    assertTrue(q.isEmpty());
    assertEquals(0, q.drainTo(out::add));
  }

  @Test
  void tiersGrowPastTheirFirstCapacityAndWrapAroundKeepingFifoOrder() {
    PostQueue<Integer> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);
    List<Integer> expected = new ArrayList<>();
    int next = 0;
    int polled = 0;
    // Offers outpace polls three to one, so the ring wraps while it grows.
    for (int round = 0; round < 2000; round++) {
      for (int k = 0; k < 3; k++) {
        q.offer(next, Priority.LOW, round);
        expected.add(next++);
      }
      assertEquals(expected.get(polled++), q.poll());
    }
    for (Integer got = q.poll(); got != null; got = q.poll()) {
      assertEquals(expected.get(polled++), got);
    }
    assertEquals(next, polled);
  }

  /**
   * The queue sits on the TCP small-task path (256 B of heap per task at most): once its rings have
   * grown to the backlog, offers, polls, promotions, sweeps and drains allocate nothing.
   */
  @Test
  void steadyStateOffersPollsPromotionsAndSweepsAllocateNothing() throws Exception {
    PostQueue<String> q = new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, true);
    String[] work = new String[64];
    for (int i = 0; i < work.length; i++) {
      work[i] = "w" + i;
    }
    java.util.function.Predicate<String> odd = s -> s.length() > 2;
    java.util.function.Consumer<String> ignore = s -> {};
    long[] now = {0};
    Runnable round =
        () -> {
          for (int i = 0; i < work.length; i++) {
            q.offer(work[i], TIERS[i % 3], now[0]);
            now[0] += MS / 4;
          }
          q.promote(now[0]);
          q.removeIf(odd, ignore);
          for (int i = 0; i < 8; i++) {
            q.poll();
          }
          q.drainTo(ignore);
        };
    for (int i = 0; i < 20_000; i++) {
      round.run();
    }
    long before = allocatedBytes();
    assertTrue(before > 0, "the probe counts this thread's allocations");
    for (int i = 0; i < 10_000; i++) {
      round.run();
    }
    long allocated = allocatedBytes() - before;
    // 640,000 offers: an object per entry would be megabytes; the bound leaves room for the probe.
    assertTrue(allocated < 4096, () -> allocated + " B allocated in steady state");
    assertTrue(q.promotions() > 0, "the rounds promoted work");
  }

  /**
   * This thread's allocated bytes. Reflective: the tests compile inside the engine's module, which
   * does not read jdk.management, and run on the class path, where it is reachable.
   */
  private static long allocatedBytes() throws Exception {
    Object bean =
        Class.forName("java.lang.management.ManagementFactory")
            .getMethod("getThreadMXBean")
            .invoke(null);
    return (long)
        Class.forName("com.sun.management.ThreadMXBean")
            .getMethod("getCurrentThreadAllocatedBytes")
            .invoke(bean);
  }
}
