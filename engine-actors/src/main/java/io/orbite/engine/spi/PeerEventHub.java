package io.orbite.engine.spi;

import io.orbite.engine.PeerEvent;
import io.orbite.engine.SegmentDescriptor;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where an engine's owners publish {@link PeerEvent}s, and the applications' listeners (and the
 * segment table) take them. Publishing never blocks and never runs a listener: a lane thread that
 * loses its connection only queues the event. Each subscriber is called on {@code executor}, one
 * event at a time, and gets the events of one publishing thread in the order it published them (two
 * lanes losing their connections at once may reach two subscribers in either order); a subscriber
 * that falls more than {@link #BACKLOG} events behind loses the oldest (counted in {@link
 * #dropped()}), so a stuck listener costs bounded memory.
 */
public final class PeerEventHub {
  private static final Logger LOG = LoggerFactory.getLogger(PeerEventHub.class);

  /** Most events one subscriber may have waiting. */
  public static final int BACKLOG = 1024;

  private final List<Subscriber> subscribers = new CopyOnWriteArrayList<>();
  private final AtomicLong dropped = new AtomicLong();
  private volatile Executor executor;
  private volatile BiConsumer<SegmentDescriptor, Long> fencer;

  /**
   * A hub whose subscribers are called on {@code executor}.
   *
   * @param executor runs the listeners (the engine's blocking-I/O dispatcher)
   */
  public PeerEventHub(Executor executor) {
    this.executor = executor;
  }

  /**
   * The executor listeners run on from now on (the engine's own, once its actor system runs).
   *
   * @param executor the executor
   */
  public void runOn(Executor executor) {
    this.executor = executor;
  }

  /**
   * Queues {@code event} for every subscriber; any thread, never blocks.
   *
   * @param event what happened
   */
  public void publish(PeerEvent event) {
    for (Subscriber s : subscribers) {
      s.offer(event);
    }
  }

  /**
   * Calls {@code listener} with every event published from now on until the returned handle is
   * closed.
   *
   * @param listener the listener; what it throws is logged and does not stop later events
   * @return closes the subscription
   */
  public AutoCloseable subscribe(Consumer<PeerEvent> listener) {
    Subscriber s = new Subscriber(listener);
    subscribers.add(s);
    return () -> subscribers.remove(s);
  }

  /**
   * Sets who fences a peer's entry when an owner learns that a newer incarnation answers at its
   * endpoint (the segment table); called once.
   *
   * @param fencer told the old incarnation and the newer epoch; must not block
   */
  public void onReplaced(BiConsumer<SegmentDescriptor, Long> fencer) {
    this.fencer = fencer;
  }

  /**
   * An owner learned that {@code newerEpoch} answers at {@code old}'s endpoint (a reconnecting
   * lane's HELLO was refused by it): the fencer fences every channel of {@code old} and publishes
   * {@link PeerEvent.PeerFenced}. Any thread, never blocks.
   *
   * @param old the incarnation the owner served
   * @param newerEpoch the epoch that answered
   */
  public void replaced(SegmentDescriptor old, long newerEpoch) {
    BiConsumer<SegmentDescriptor, Long> f = fencer;
    if (f != null) {
      f.accept(old, newerEpoch);
    }
  }

  /**
   * Events lost by subscribers that fell behind.
   *
   * @return the count since the engine started
   */
  public long dropped() {
    return dropped.get();
  }

  private final class Subscriber implements Runnable {
    private final Consumer<PeerEvent> listener;
    private final ArrayDeque<PeerEvent> queue = new ArrayDeque<>();
    private boolean scheduled;

    Subscriber(Consumer<PeerEvent> listener) {
      this.listener = listener;
    }

    void offer(PeerEvent event) {
      boolean schedule;
      synchronized (this) {
        if (queue.size() >= BACKLOG) {
          queue.pollFirst();
          dropped.incrementAndGet();
        }
        queue.addLast(event);
        schedule = !scheduled;
        scheduled = true;
      }
      if (schedule) {
        executor.execute(this);
      }
    }

    @Override
    public void run() {
      while (true) {
        PeerEvent next;
        synchronized (this) {
          next = queue.pollFirst();
          if (next == null) {
            scheduled = false;
            return;
          }
        }
        try {
          listener.accept(next);
        } catch (RuntimeException e) {
          LOG.warn("a peer-event listener threw on {}: {}", next, e.toString(), e);
        }
      }
    }
  }
}
