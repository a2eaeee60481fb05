package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;

/**
 * A protection domain: MRs, MWs and QPs of one PD only ever meet each other. {@code deallocPd}
 * refuses {@code EBUSY} while any live on it. Guarded by the provider's lock.
 */
final class SoftPd {
  final long handle;
  final SoftContext context;
  final Verbs.Pd record;
  int mrs;
  int mws;
  int qps;

  SoftPd(long handle, SoftContext context) {
    this.handle = handle;
    this.context = context;
    this.record = new Verbs.Pd(handle, context.record);
  }

  boolean busy() {
    return mrs > 0 || mws > 0 || qps > 0;
  }
}
