package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;

/**
 * A completion channel: the queue of CQ events its armed CQs raised, oldest first. Its file
 * descriptor is -1: the soft provider has no kernel object to wait on, so owners take events with
 * {@code getCqEvent} (which answers {@code EAGAIN} when nothing is queued) and wait for one with
 * {@code awaitCqEvent}, which parks the waiting thread until an event raised here unparks it.
 * Guarded by the provider's lock.
 */
final class SoftChannel {
  final long handle;
  final SoftContext context;
  final Verbs.CompChannel record;
  final ArrayDeque<SoftCq> events = new ArrayDeque<>();
  int cqs;

  /** The thread parked in {@code awaitCqEvent} on this channel, or null. */
  Thread waiter;

  SoftChannel(long handle, SoftContext context) {
    this.handle = handle;
    this.context = context;
    this.record = new Verbs.CompChannel(handle, context.record, -1);
  }
}
