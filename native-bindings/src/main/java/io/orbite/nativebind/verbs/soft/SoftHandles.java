package io.orbite.nativebind.verbs.soft;

import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;

/**
 * The handle table of one provider: handle numbers are never reused, and each table starts at its
 * own random base so that a handle from another table is (almost surely) unknown here. A destroyed
 * object's handle is removed, so using it again is refused. Guarded by the provider's lock.
 */
final class SoftHandles {
  private final Map<Long, Object> table = new HashMap<>();
  private long next;

  SoftHandles() {
    next = (new SecureRandom().nextLong(1, 1L << 20)) << 32;
  }

  long reserve() {
    return ++next;
  }

  /**
   * Live objects per (exact class, owning device), kept as objects come and go: a limit check
   * counts in constant time, not by a walk over every handle (one per memory window).
   */
  private final Map<Class<?>, Map<SoftDevice, Integer>> owned = new HashMap<>();

  void put(long handle, Object object) {
    Object before = table.put(handle, object);
    if (before != null) {
      tally(before, -1);
    }
    tally(object, 1);
  }

  private void tally(Object o, int by) {
    SoftDevice d = ownerOf(o);
    if (d != null) {
      owned.computeIfAbsent(o.getClass(), k -> new HashMap<>()).merge(d, by, Integer::sum);
    }
  }

  /** How many live objects of exactly {@code type} belong to device {@code d}. */
  int countOwned(Class<?> type, SoftDevice d) {
    Map<SoftDevice, Integer> m = owned.get(type);
    return m == null ? 0 : m.getOrDefault(d, 0);
  }

  /** The device an object of the table belongs to, or null for one no limit counts. */
  static SoftDevice ownerOf(Object o) {
    return switch (o) {
      case SoftPd p -> p.context.device;
      case SoftCq q -> q.context.device;
      case SoftMemory.Region r -> r.pd.context.device;
      case SoftMemory.Window w -> w.pd.context.device;
      default -> null;
    };
  }

  /** The live object of {@code type} at {@code handle}, or null. */
  <T> T get(long handle, Class<T> type) {
    Object o = table.get(handle);
    return type.isInstance(o) ? type.cast(o) : null;
  }

  void remove(long handle) {
    Object o = table.remove(handle);
    if (o != null) {
      tally(o, -1);
    }
  }
}
