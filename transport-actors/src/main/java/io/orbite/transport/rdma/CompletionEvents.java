package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.Verbs;
import java.util.concurrent.atomic.LongAdder;

/**
 * The completion channel of one CQ lane's CQ ({@code rdma.completionEvents}), or none: CQs without
 * one are polled only. With one, after a pass that polled completions the lane takes its pending
 * events (non-blocking), acknowledges them in batches, and arms the CQ again after any, so the next
 * completion raises one (the CQ itself is polled by the pass either way, so no completion waits on
 * an event; an event raised after its completion was polled is taken after the next one). Lane
 * thread only, but the count of events taken (the lane row's figure).
 */
final class CompletionEvents {
  /** Most events taken before they are acknowledged in one call. */
  private static final int ACK_BATCH = 64;

  private final Verbs verbs;
  private final Verbs.Cq cq;
  private final Verbs.CompChannel channel;

  /** Completion events taken and acknowledged (the lane row's figure). */
  final LongAdder taken = new LongAdder();

  /** Events taken and not acknowledged yet (acknowledged in batches, all at release). */
  private int unacked;

  /** The events of {@code cq} on {@code channel} (null: none); the CQ is armed at once. */
  CompletionEvents(Verbs verbs, Verbs.Cq cq, Verbs.CompChannel channel) {
    this.verbs = verbs;
    this.cq = cq;
    this.channel = channel;
    if (channel != null) {
      verbs.reqNotifyCq(cq, false); // armed: the first completion raises an event
    }
  }

  /** Whether the CQ has a completion channel. */
  boolean on() {
    return channel != null;
  }

  /** Takes the pending events, acknowledging them in batches, and arms the CQ again after any. */
  int take() {
    int n = 0;
    while (verbs.getCqEvent(channel).ok()) {
      n++;
      if (++unacked >= ACK_BATCH) {
        verbs.ackCqEvents(cq, unacked);
        unacked = 0;
      }
    }
    if (n > 0) {
      taken.add(n);
      verbs.reqNotifyCq(cq, false);
    }
    return n;
  }

  /**
   * Sleeps on the channel until a completion raises an event, the lane's thread is unparked (work
   * handed over, a close) or {@code timeoutNanos} pass; then takes what was queued, which arms the
   * CQ again. Safe only after a pass polled the CQ empty with the CQ armed: a completion that came
   * before the arming was polled by that pass, and any later one raises an event.
   */
  void sleep(long timeoutNanos) {
    if (verbs.awaitCqEvent(channel, timeoutNanos)) {
      take();
    }
  }

  /** Acknowledges every event taken, as {@code ibv_destroy_cq} requires before it. */
  void ackAll() {
    if (channel != null && unacked > 0) {
      verbs.ackCqEvents(cq, unacked);
      unacked = 0;
    }
  }

  /**
   * Destroys the channel, once the CQ on it is gone (spec 001: a channel with a CQ on it is busy).
   *
   * @return 0, or the errno of the destroy (the channel is then kept)
   */
  int destroy() {
    return channel == null ? 0 : verbs.destroyCompChannel(channel);
  }
}
