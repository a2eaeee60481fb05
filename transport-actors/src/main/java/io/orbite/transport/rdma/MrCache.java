package io.orbite.transport.rdma;

import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * One rail's persistent memory registrations: an MR per engine registration, made on its first use
 * by a lane and kept until the registration is released (the Context's monitor then deregisters it,
 * {@link #sweep}) or the rail closes. An MR is made with local write and bind rights only: no
 * remote access goes through it, every remote access goes through a window bound to one exact range
 * ({@link Grant}). Thread-safe: lanes of the rail share it.
 */
final class MrCache {
  private record Entry(Registration registration, Verbs.Mr mr) {}

  private final Verbs verbs;
  private final Verbs.Pd pd;
  private final RegistryView registry;
  private final ConcurrentHashMap<Long, Entry> byAddress = new ConcurrentHashMap<>();
  final LongAdder registered = new LongAdder();
  final LongAdder deregistered = new LongAdder();

  /**
   * MRs whose deregistration failed: kept for good, never deregistered again (spec 001). The device
   * may still reach their pages, so each keeps the loan on its registration it took when it was
   * made (a device pin), which keeps the engine from ever freeing that memory.
   */
  private final java.util.List<Entry> kept = new java.util.ArrayList<>();

  MrCache(Verbs verbs, Verbs.Pd pd, RegistryView registry) {
    this.verbs = verbs;
    this.pd = pd;
    this.registry = registry;
  }

  /** The MR of the live registration that is exactly {@code whole}, made now if it has none. */
  VerbsResult<Verbs.Mr> mrFor(MemorySegment whole) {
    Entry e = byAddress.get(whole.address());
    if (e != null && !e.registration().released() && sameRange(e.registration(), whole)) {
      return VerbsResult.ok(e.mr());
    }
    Registration r = find(whole);
    if (r == null) {
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EINVAL.number(),
          "the local range at 0x"
              + Long.toHexString(whole.address())
              + " ("
              + whole.byteSize()
              + " B) is not a registration of this engine");
    }
    return mrFor(r);
  }

  /**
   * The MR of {@code r} (a live registration), made now if it has none. A new MR takes a device pin
   * on its registration for as long as it exists, so the registry cannot free the memory under it:
   * an unregister hides the range, {@link #sweep} then deregisters the MR once no work holds the
   * range and gives the pin back, and only then is the memory freed.
   */
  synchronized VerbsResult<Verbs.Mr> mrFor(Registration r) {
    Entry e = byAddress.get(r.segment().address());
    if (e != null && e.registration() == r) {
      return VerbsResult.ok(e.mr());
    }
    if (e != null) {
      if (sameRange(e.registration(), r.segment()) && !e.registration().released()) {
        // The same pages registered twice: the MR made for the other registration names them.
        return VerbsResult.ok(e.mr());
      }
      retire(e);
    }
    if (!r.tryPin()) {
      return VerbsResult.failed(
          io.orbite.nativebind.Errno.EINVAL.number(),
          r + " is being unregistered: no MR is made for it");
    }
    VerbsResult<Verbs.Mr> made =
        verbs.regMr(pd, r.segment(), Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_MW_BIND);
    if (made.ok()) {
      byAddress.put(r.segment().address(), new Entry(r, made.value()));
      registered.increment();
    } else {
      r.unpin();
    }
    return made;
  }

  private Registration find(MemorySegment whole) {
    for (Registration r : registry.snapshot().values()) {
      if (sameRange(r, whole) && !r.released()) {
        return r;
      }
    }
    return null;
  }

  private static boolean sameRange(Registration r, MemorySegment whole) {
    return r.segment().address() == whole.address() && r.segment().byteSize() == whole.byteSize();
  }

  /**
   * Deregisters the MRs of hidden registrations that no work holds any more (only device pins are
   * left). Once a range is hidden no new loan is granted, so the count only falls and a range found
   * idle stays idle.
   */
  synchronized int sweep() {
    int failures = 0;
    for (Entry e : byAddress.values()) {
      Registration r = e.registration();
      if (!r.visible() && r.loans() == r.pins() && !retire(e)) {
        failures++;
      }
    }
    return failures;
  }

  /** Whether some MR's registration is hidden, so a {@link #sweep} may have work. */
  boolean anyHidden() {
    for (Entry e : byAddress.values()) {
      if (!e.registration().visible()) {
        return true;
      }
    }
    return false;
  }

  /** How many MRs are held. */
  int size() {
    return byAddress.size();
  }

  /**
   * Deregisters every MR; an MR whose deregistration fails is kept (never retried).
   *
   * @return how many could not be deregistered
   */
  synchronized int closeAll() {
    int failures = 0;
    for (Entry e : byAddress.values()) {
      if (!retire(e)) {
        failures++;
      }
    }
    return failures;
  }

  private boolean retire(Entry e) {
    byAddress.remove(e.registration().segment().address(), e);
    int rc = verbs.deregMr(e.mr());
    if (rc == 0) {
      deregistered.increment();
      e.registration().unpin();
      return true;
    }
    // Kept with its pin: the registry never frees memory the device may still reach.
    kept.add(e);
    return false;
  }

  /** MRs kept after a failed deregistration. */
  synchronized int kept() {
    return kept.size();
  }
}
