package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.Verbs;
import java.util.List;

/**
 * Which GID of a port a rail speaks from ({@code rdma.gidIndex}). Pinned: that index, and only
 * while its entry is valid (not all zero); no other index is ever taken. Automatic: the best valid
 * entry, by kind, the lowest index within a kind:
 *
 * <ol>
 *   <li>RoCE v2 with an IPv4-mapped address ({@code ::ffff:a.b.c.d}),
 *   <li>other RoCE v2,
 *   <li>type unknown with an IPv4-mapped address,
 *   <li>every other valid entry (RoCE v1, InfiniBand, type unknown).
 * </ol>
 *
 * <p>The verbs table has no {@code ibv_query_gid_type}; a native rail reads each entry's type from
 * sysfs ({@code /sys/class/infiniband/<device>/ports/<port>/gid_attrs/types/<index>}, where the
 * kernel lists it), and the software provider has no GID types at all: its entries are all of the
 * last kind, so the lowest valid index wins. Pure: the caller queries the table.
 */
final class GidRanking {
  /** The sysfs spelling of a RoCE v2 entry's type. */
  static final String ROCE_V2 = "RoCE v2";

  private GidRanking() {}

  /** The chosen entry: its index and GID. */
  record Choice(int index, Verbs.Gid gid) {}

  /**
   * The entry to use.
   *
   * @param table the port's GID table, entry {@code i} at index {@code i} (null or all zero:
   *     invalid)
   * @param types each entry's type as sysfs spells it ({@code "RoCE v2"}, {@code "IB/RoCE v1"}), or
   *     null where unknown; null for no types at all
   * @param pinned {@code -1} for automatic, else the only index that may be chosen
   * @return the choice, or null when no entry may be used
   */
  static Choice choose(List<Verbs.Gid> table, List<String> types, int pinned) {
    if (pinned >= 0) {
      Verbs.Gid g = pinned < table.size() ? table.get(pinned) : null;
      return valid(g) ? new Choice(pinned, g) : null;
    }
    Choice best = null;
    int bestKind = Integer.MAX_VALUE;
    for (int i = 0; i < table.size(); i++) {
      Verbs.Gid g = table.get(i);
      if (!valid(g)) {
        continue;
      }
      int kind = kind(g, types == null || i >= types.size() ? null : types.get(i));
      if (kind < bestKind) {
        bestKind = kind;
        best = new Choice(i, g);
      }
    }
    return best;
  }

  /** Whether an entry may carry a route: present and not all zero. */
  static boolean valid(Verbs.Gid g) {
    return g != null && !g.equals(Verbs.Gid.ZERO);
  }

  /** 0 (best) to 3, as the class comment lists them. */
  static int kind(Verbs.Gid g, String type) {
    boolean v2 = ROCE_V2.equals(type);
    boolean mapped = ipv4Mapped(g);
    if (v2) {
      return mapped ? 0 : 1;
    }
    return type == null && mapped ? 2 : 3;
  }

  /** Bytes 0..9 zero, 10..11 {@code ff ff}: an IPv4-mapped IPv6 address. */
  static boolean ipv4Mapped(Verbs.Gid g) {
    return g.hi() == 0 && (g.lo() >>> 32) == 0xffffL;
  }
}
