package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.soft.SoftFaults.Kind;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The destroy faults of one {@link SoftFaults} table: which destroys fail (an object of a kind by
 * its handle, the next of a kind, or an MR by the first address of its range) with which errno,
 * once or sticky; and how many destroys of each kind named a live object. Not thread-safe: the
 * table calls it only under its own monitor.
 */
final class SoftDestroyFaults {
  /** The handle of a rule that hits the next destroy of its kind, whatever the object. */
  static final long ANY = -1;

  private static final class Rule {
    final Kind kind;
    long handle;
    final int errno;
    final boolean sticky;

    Rule(Kind kind, long handle, int errno, boolean sticky) {
      this.kind = kind;
      this.handle = handle;
      this.errno = errno;
      this.sticky = sticky;
    }
  }

  private final List<Rule> destroyRules = new ArrayList<>();

  /** {@link #failDeregAt} rules: {@code handle} holds the range's first address. */
  private final List<Rule> deregRules = new ArrayList<>();

  private final Map<Kind, Integer> destroyCalls = new EnumMap<>(Kind.class);

  void failDestroy(Kind kind, long handle, int errno, boolean sticky) {
    destroyRules.add(new Rule(kind, handle, errno, sticky));
  }

  void failDeregAt(long address, int errno, boolean sticky) {
    deregRules.add(new Rule(Kind.MR, address, errno, sticky));
  }

  void clear() {
    destroyRules.clear();
    deregRules.clear();
  }

  /** Counts one destroy of {@code kind} that named a live object. */
  void count(Kind kind) {
    destroyCalls.merge(kind, 1, Integer::sum);
  }

  int calls(Kind kind) {
    return destroyCalls.getOrDefault(kind, 0);
  }

  /**
   * The errno a destroy of that object must fail with, or 0; a sticky rule that matched by kind
   * alone stays bound to the object it hit.
   */
  int failure(Kind kind, long handle) {
    Iterator<Rule> it = destroyRules.iterator();
    while (it.hasNext()) {
      Rule r = it.next();
      if (r.kind == kind && (r.handle == handle || r.handle == ANY)) {
        if (r.sticky) {
          r.handle = handle;
        } else {
          it.remove();
        }
        return r.errno;
      }
    }
    return 0;
  }

  /** The errno a deregistration of an MR starting at {@code address} must fail with, or 0. */
  int deregFailureAt(long address) {
    Iterator<Rule> it = deregRules.iterator();
    while (it.hasNext()) {
      Rule r = it.next();
      if (r.handle == address) {
        if (!r.sticky) {
          it.remove();
        }
        return r.errno;
      }
    }
    return 0;
  }
}
