package io.orbite.engine.priority;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.engine.Priority;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The post queue's order and aging (C14), on explicit times. */
class PostQueueTest {
  private static final long MS = 1_000_000L;

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
}
