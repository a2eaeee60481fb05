package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;

/**
 * An open device: its async event queue and what lives on it (PDs, CQs, completion channels), which
 * {@code closeDevice} refuses {@code EBUSY} while any remain. Guarded by the provider's lock, but
 * for the event queue, which is guarded by this object (events are raised from the wire's threads
 * too, and {@link #awaitEvent} waits on it without holding the provider's lock).
 */
final class SoftContext {
  final long handle;
  final SoftDevice device;
  final Verbs.Context record;
  private final ArrayDeque<Verbs.AsyncEvent> events = new ArrayDeque<>();
  int pds;
  int cqs;
  int channels;

  SoftContext(long handle, SoftDevice device) {
    this.handle = handle;
    this.device = device;
    this.record = new Verbs.Context(handle, device.name());
  }

  synchronized void event(int type, long element) {
    events.add(new Verbs.AsyncEvent(type, element));
    notifyAll();
  }

  /** The oldest pending event, taken; null when none is. */
  synchronized Verbs.AsyncEvent takeEvent() {
    return events.poll();
  }

  /** Waits at most {@code millis} for an event to be pending; whether one is. */
  synchronized boolean awaitEvent(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(millis);
    while (events.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return true;
  }

  boolean busy() {
    return pds > 0 || cqs > 0 || channels > 0;
  }
}
