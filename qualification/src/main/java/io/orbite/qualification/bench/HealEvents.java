package io.orbite.qualification.bench;

import io.orbite.engine.PeerEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The peer events the requester of {@code bench heal} published, in the order they arrived, so a
 * trial can wait for the first event of a kind after a mark. Events carry their own publication
 * time ({@link PeerEvent#at()}), which is what the trials measure against: the listener runs on the
 * engine's executor, a little later.
 */
final class HealEvents implements Consumer<PeerEvent> {
  private final List<PeerEvent> events = new ArrayList<>();

  @Override
  public synchronized void accept(PeerEvent event) {
    events.add(event);
    notifyAll();
  }

  /** The position the next event will take: what {@link #await} counts from. */
  synchronized int mark() {
    return events.size();
  }

  /**
   * Waits up to {@code timeout} for the first event of {@code type} at or after {@code from} that
   * {@code test} accepts.
   *
   * @return the event, or null when none came in time
   */
  synchronized <T extends PeerEvent> T await(
      int from, Class<T> type, Predicate<T> test, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      for (int i = from; i < events.size(); i++) {
        if (type.isInstance(events.get(i)) && test.test(type.cast(events.get(i)))) {
          return type.cast(events.get(i));
        }
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      wait(Math.max(1, left / 1_000_000L));
    }
  }

  /** How many events of {@code type} arrived at or after {@code from}. */
  synchronized int count(int from, Class<? extends PeerEvent> type) {
    int n = 0;
    for (int i = from; i < events.size(); i++) {
      n += type.isInstance(events.get(i)) ? 1 : 0;
    }
    return n;
  }

  /**
   * Waits up to {@code timeout} until as many lanes came back as were lost since {@code from} (the
   * channel healed completely).
   *
   * @return whether it did in time
   */
  synchronized boolean awaitHealed(int from, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (count(from, PeerEvent.LaneLost.class) > count(from, PeerEvent.LaneRestored.class)) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      wait(Math.max(1, left / 1_000_000L));
    }
    return true;
  }

  /** The events at or after {@code from}, for a failure's message. */
  synchronized List<PeerEvent> since(int from) {
    return List.copyOf(events.subList(from, events.size()));
  }
}
