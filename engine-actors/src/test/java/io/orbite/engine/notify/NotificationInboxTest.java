package io.orbite.engine.notify;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.SegmentDescriptor;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The inbox alone: its two bounds, order, exactly one taker per notification under concurrent
 * takers, waiters woken by the putting thread and never lost when a woken waiter leaves, and close.
 */
class NotificationInboxTest {
  private static final SegmentDescriptor SENDER = new SegmentDescriptor("127.0.0.1", 4000, 0x5e1f);

  private static ReceivedNotification n(String tag, int length) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = (byte) (tag.hashCode() + i);
    }
    return new ReceivedNotification("sender", SENDER, tag, b, System.nanoTime());
  }

  @Test
  void refusesPastItsCountAndAcceptsAgainOnceOneIsTaken() {
    NotificationInbox inbox = new NotificationInbox(3, 1 << 20);
    for (int i = 0; i < 3; i++) {
      assertEquals(NotificationInbox.Offer.ACCEPTED, inbox.offer(n("t" + i, 10), 12));
    }
    assertEquals(NotificationInbox.Offer.FULL, inbox.offer(n("t3", 10), 12));
    ReceivedNotification first = inbox.poll();
    assertEquals("t0", first.tag());
    assertArrayEquals(n("t0", 10).bytes(), first.bytes());
    assertEquals(NotificationInbox.Offer.ACCEPTED, inbox.offer(n("t4", 10), 12));
    List<String> tags = inbox.drain(10).stream().map(ReceivedNotification::tag).toList();
    assertEquals(List.of("t1", "t2", "t4"), tags);
    assertEquals(0, inbox.size());
  }

  @Test
  void refusesPastItsBytesAndCountsTakenBytesBack() {
    NotificationInbox inbox = new NotificationInbox(100, 1000);
    assertEquals(NotificationInbox.Offer.ACCEPTED, inbox.offer(n("a", 600), 600));
    assertEquals(NotificationInbox.Offer.FULL, inbox.offer(n("b", 401), 401));
    assertEquals(NotificationInbox.Offer.ACCEPTED, inbox.offer(n("c", 400), 400));
    assertEquals("a", inbox.poll().tag());
    assertEquals(NotificationInbox.Offer.ACCEPTED, inbox.offer(n("d", 600), 600));
    assertEquals(NotificationInbox.Offer.FULL, inbox.offer(n("e", 1), 1));
  }

  @Test
  void aParkedPollerIsWokenByThePuttingThread() throws Exception {
    NotificationInbox inbox = new NotificationInbox(8, 1 << 20);
    AtomicReference<ReceivedNotification> got = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(1);
    Thread poller =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    got.set(inbox.poll(TimeUnit.SECONDS.toNanos(30)));
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  done.countDown();
                });
    while (poller.getState() != Thread.State.WAITING
        && poller.getState() != Thread.State.TIMED_WAITING) {
      Thread.sleep(1);
    }
    ReceivedNotification sent = n("wake", 5);
    inbox.offer(sent, 9);
    assertTrue(done.await(10, TimeUnit.SECONDS), "the poller was not woken");
    assertSame(sent, got.get());
  }

  @Test
  void aTimedPollReturnsNullWhenNothingComes() throws Exception {
    NotificationInbox inbox = new NotificationInbox(8, 1 << 20);
    assertNull(inbox.poll(TimeUnit.MILLISECONDS.toNanos(20)));
  }

  @Test
  void aWokenWaiterThatLeavesPassesTheWakeOn() {
    NotificationInbox inbox = new NotificationInbox(8, 1 << 20);
    AtomicInteger aWoken = new AtomicInteger();
    AtomicInteger bWoken = new AtomicInteger();
    NotificationInbox.Waiter a = aWoken::incrementAndGet;
    NotificationInbox.Waiter b = bWoken::incrementAndGet;
    assertNull(inbox.pollOrWait(a));
    assertNull(inbox.pollOrWait(b));
    inbox.offer(n("x", 1), 2);
    assertEquals(1, aWoken.get(), "the first waiter is woken first");
    assertEquals(0, bWoken.get(), "one notification wakes one waiter");
    inbox.leave(a); // a goes away without taking it
    assertEquals(1, bWoken.get(), "the wake passed on to b");
    assertEquals("x", inbox.pollOrWait(b).tag());
  }

  @Test
  void closeRefusesWakesEveryWaiterAndStillHandsOutWhatItHolds() {
    NotificationInbox inbox = new NotificationInbox(8, 1 << 20);
    inbox.offer(n("kept", 3), 7);
    AtomicInteger woken = new AtomicInteger();
    inbox.drain(1);
    assertNull(inbox.pollOrWait(woken::incrementAndGet));
    assertNull(inbox.pollOrWait(woken::incrementAndGet));
    inbox.offer(n("kept2", 3), 8); // wakes one
    inbox.close();
    assertEquals(2, woken.get());
    assertEquals(NotificationInbox.Offer.CLOSED, inbox.offer(n("late", 3), 7));
    assertTrue(!inbox.closedAndEmpty());
    assertEquals("kept2", inbox.poll().tag());
    assertTrue(inbox.closedAndEmpty());
  }

  @Test
  void concurrentTakersGetEachNotificationExactlyOnce() throws Exception {
    int total = 20_000;
    NotificationInbox inbox = new NotificationInbox(64, 1 << 20);
    List<List<String>> taken = new ArrayList<>();
    List<Thread> takers = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      List<String> mine = new ArrayList<>();
      taken.add(mine);
      int which = t;
      takers.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      while (true) {
                        if (which % 2 == 0) {
                          ReceivedNotification r = inbox.poll(TimeUnit.SECONDS.toNanos(2));
                          if (r == null) {
                            return;
                          }
                          mine.add(r.tag());
                        } else {
                          List<ReceivedNotification> some = inbox.drain(3);
                          if (some.isEmpty()) {
                            ReceivedNotification r = inbox.poll(TimeUnit.SECONDS.toNanos(2));
                            if (r == null) {
                              return;
                            }
                            mine.add(r.tag());
                          }
                          some.forEach(r -> mine.add(r.tag()));
                        }
                      }
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }));
    }
    for (int i = 0; i < total; i++) {
      ReceivedNotification r = n(Integer.toString(i), 0);
      while (inbox.offer(r, 0) == NotificationInbox.Offer.FULL) {
        Thread.onSpinWait();
      }
    }
    for (Thread t : takers) {
      t.join(30_000);
    }
    Set<String> seen = new HashSet<>();
    int count = 0;
    for (List<String> mine : taken) {
      for (String tag : mine) {
        assertTrue(seen.add(tag), "taken twice: " + tag);
        count++;
      }
    }
    assertEquals(total, count, "every notification taken once");
  }
}
