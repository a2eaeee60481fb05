package io.orbite.nativebind.verbs.soft;

import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Predicate;

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

  void put(long handle, Object object) {
    table.put(handle, object);
  }

  /** The live object of {@code type} at {@code handle}, or null. */
  <T> T get(long handle, Class<T> type) {
    Object o = table.get(handle);
    return type.isInstance(o) ? type.cast(o) : null;
  }

  /** How many live objects of {@code type} satisfy {@code filter}. */
  int count(Class<?> type, Predicate<Object> filter) {
    int n = 0;
    for (Object o : table.values()) {
      if (type.isInstance(o) && filter.test(o)) {
        n++;
      }
    }
    return n;
  }

  void remove(long handle) {
    table.remove(handle);
  }
}
