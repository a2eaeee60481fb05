package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion queue of exactly {@code cqe} entries, with its completion-channel arming.
 *
 * <p>Overflow: when a completion arrives while the CQ already holds {@code cqe} entries, the CQ
 * enters error. That completion and every later one are discarded (not queued); the CQ's context
 * gets {@code EVENT_CQ_ERR} (element: the CQ handle); every QP that uses the CQ (as send or receive
 * CQ) goes to ERR and its context gets {@code EVENT_QP_FATAL} (element: the QP handle), its
 * outstanding WRs flushed (to an overflowed CQ: discarded; to a healthy one: delivered). {@code
 * pollCq} still returns the entries held before the overflow, then {@code -EOVERFLOW} on every call
 * once they are drained.
 *
 * <p>Arming: {@code reqNotifyCq} arms the CQ once (solicited-only is treated as any completion);
 * the next completion queued on an armed CQ disarms it and queues one event on its channel; events
 * queued and not yet acknowledged make {@code destroyCq} answer {@code EBUSY}. Guarded by the
 * provider's lock.
 */
final class SoftCq {
  final long handle;
  final SoftContext context;
  final SoftChannel channel;
  final int capacity;
  final Verbs.Cq record;
  final Set<SoftQp> users = new LinkedHashSet<>();
  private final SoftFaults faults;
  private final ArrayDeque<Verbs.Wc> entries = new ArrayDeque<>();
  private boolean overflowed;

  /**
   * Entries held, or -1 once overflowed: written under the provider's lock, read without it by
   * {@link SoftCqVerbs#pollCq}, which answers an empty healthy CQ without taking the lock.
   */
  volatile int held;

  /** Run after each entry is queued ({@link SoftCqVerbs#wakeOnCompletion}), or null. */
  volatile Runnable waker;

  private boolean armed;
  int eventsQueued;
  int eventsAcked;

  SoftCq(long handle, SoftContext context, SoftChannel channel, int capacity, SoftFaults faults) {
    this.handle = handle;
    this.context = context;
    this.channel = channel;
    this.capacity = capacity;
    this.faults = faults;
    this.record = new Verbs.Cq(handle, context.record, capacity);
  }

  /** Queues {@code wc} of {@code qp} (or withholds it, or overflows). */
  void deliver(SoftQp qp, Verbs.Wc wc) {
    if (wc.status() == Ibv.WC_SUCCESS && faults.takeWithheld(qp.qpNum, wc.wrId())) {
      return;
    }
    if (overflowed) {
      return;
    }
    if (entries.size() >= capacity) {
      overflowed = true;
      held = -1;
      context.event(Ibv.EVENT_CQ_ERR, handle);
      for (SoftQp user : new ArrayList<>(users)) {
        user.fatal();
      }
      return;
    }
    entries.add(wc);
    held = entries.size();
    if (armed && channel != null) {
      armed = false;
      eventsQueued++;
      channel.events.add(this);
      if (channel.waiter != null) {
        LockSupport.unpark(channel.waiter); // the thread blocked in awaitCqEvent
      }
    }
    Runnable w = waker;
    if (w != null) {
      w.run();
    }
  }

  int poll(Verbs.Wc[] out) {
    int n = 0;
    while (n < out.length && !entries.isEmpty()) {
      out[n++] = entries.poll();
    }
    if (!overflowed) {
      held = entries.size();
    }
    if (n == 0 && overflowed && out.length > 0) {
      return -Errno.EOVERFLOW.number();
    }
    return n;
  }

  void arm() {
    armed = true;
  }

  boolean unacknowledgedEvents() {
    return eventsAcked < eventsQueued;
  }

  void ack(int events) {
    eventsAcked = (int) Math.min((long) eventsQueued, (long) eventsAcked + Math.max(events, 0));
  }
}
