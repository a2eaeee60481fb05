package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;

/**
 * An open device: its async event queue and what lives on it (PDs, CQs, completion channels), which
 * {@code closeDevice} refuses {@code EBUSY} while any remain. Guarded by the provider's lock.
 */
final class SoftContext {
  final long handle;
  final SoftDevice device;
  final Verbs.Context record;
  final ArrayDeque<Verbs.AsyncEvent> events = new ArrayDeque<>();
  int pds;
  int cqs;
  int channels;

  SoftContext(long handle, SoftDevice device) {
    this.handle = handle;
    this.device = device;
    this.record = new Verbs.Context(handle, device.name());
  }

  void event(int type, long element) {
    events.add(new Verbs.AsyncEvent(type, element));
  }

  boolean busy() {
    return pds > 0 || cqs > 0 || channels > 0;
  }
}
