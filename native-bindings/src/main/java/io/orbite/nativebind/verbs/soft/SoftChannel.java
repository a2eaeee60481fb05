package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;

/**
 * A completion channel: the queue of CQ events its armed CQs raised, oldest first. Its file
 * descriptor is -1: the soft provider has no kernel object to wait on, so owners poll {@code
 * getCqEvent} (which answers {@code EAGAIN} when nothing is queued). Guarded by the provider's
 * lock.
 */
final class SoftChannel {
  final long handle;
  final SoftContext context;
  final Verbs.CompChannel record;
  final ArrayDeque<SoftCq> events = new ArrayDeque<>();
  int cqs;

  SoftChannel(long handle, SoftContext context) {
    this.handle = handle;
    this.context = context;
    this.record = new Verbs.CompChannel(handle, context.record, -1);
  }
}
