package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.PeerEvent;
import io.orbite.engine.SegmentDescriptor;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/**
 * The peer-event hub: each subscriber gets every event in order, on the executor, never on the
 * publisher's thread; a listener that throws does not stop later events; a subscriber that falls
 * behind loses the oldest, counted; a closed subscription gets nothing more; the replacement hook
 * reaches the one fencer.
 */
class PeerEventHubTest {
  private static final SegmentDescriptor PEER = new SegmentDescriptor("127.0.0.1", 4000, 0x5e1f);

  /** Runs what it was given only when told to. */
  private static final class Manual implements Executor {
    final ConcurrentLinkedQueue<Runnable> queued = new ConcurrentLinkedQueue<>();

    @Override
    public void execute(Runnable r) {
      queued.add(r);
    }

    void runAll() {
      Runnable r;
      while ((r = queued.poll()) != null) {
        r.run();
      }
    }
  }

  private static PeerEvent lost(int i) {
    return new PeerEvent.LaneLost(
        PEER, Instant.EPOCH, io.orbite.engine.Transport.TCP, "lane " + i, "cut", 0);
  }

  @Test
  void eachSubscriberGetsEveryEventInOrderOnTheExecutorAndAThrowingListenerDoesNotStopIt()
      throws Exception {
    Manual executor = new Manual();
    PeerEventHub hub = new PeerEventHub(executor);
    List<PeerEvent> first = new ArrayList<>();
    List<PeerEvent> second = new ArrayList<>();
    hub.subscribe(first::add);
    hub.subscribe(
        e -> {
          second.add(e);
          throw new IllegalStateException("a listener's bug");
        });
    for (int i = 0; i < 5; i++) {
      hub.publish(lost(i));
    }
    assertTrue(first.isEmpty(), "nothing runs on the publisher's thread");
    executor.runAll();
    assertEquals(List.of(lost(0), lost(1), lost(2), lost(3), lost(4)), first);
    assertEquals(first, second, "the throwing listener still got every event");
  }

  @Test
  void aSubscriberThatFallsBehindLosesTheOldestAndAClosedOneGetsNothingMore() throws Exception {
    Manual executor = new Manual();
    PeerEventHub hub = new PeerEventHub(executor);
    List<PeerEvent> got = new ArrayList<>();
    AutoCloseable subscription = hub.subscribe(got::add);
    int published = PeerEventHub.BACKLOG + 10;
    for (int i = 0; i < published; i++) {
      hub.publish(lost(i));
    }
    executor.runAll();
    assertEquals(PeerEventHub.BACKLOG, got.size());
    assertEquals(lost(10), got.getFirst(), "the oldest ten were dropped");
    assertEquals(10, hub.dropped());
    subscription.close();
    hub.publish(lost(-1));
    executor.runAll();
    assertEquals(PeerEventHub.BACKLOG, got.size(), "nothing after the close");
  }

  @Test
  void aReplacementReachesTheFencer() {
    PeerEventHub hub = new PeerEventHub(Runnable::run);
    List<String> told = new ArrayList<>();
    hub.replaced(PEER, 7); // no fencer yet: nothing happens
    hub.onReplaced((old, newer) -> told.add(old + " -> " + Long.toHexString(newer)));
    hub.replaced(PEER, 0x6a);
    assertEquals(List.of(PEER + " -> 6a"), told);
  }
}
