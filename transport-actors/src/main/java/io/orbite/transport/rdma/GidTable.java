package io.orbite.transport.rdma;

import io.orbite.nativebind.verbs.NativeVerbs;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a port's GID table as a GID choice ({@link GidRanking}) looks at it: the entries, and each
 * entry's type as the kernel lists it in sysfs. Blocking: a rail's open and the monitor's scans
 * call it off the mailbox.
 */
final class GidTable {
  /** GID entries an automatic choice looks at, at most (the kernel's tables hold 128 or 256). */
  static final int MAX_GID_ENTRIES = 256;

  private GidTable() {}

  /**
   * The entries of the port's GID table a choice looks at: only the pinned one (the others as
   * null), or the first {@code gidTblLen} (at most 256). An entry whose query failed is null.
   */
  static List<Verbs.Gid> read(Verbs verbs, Verbs.Context ctx, Verbs.PortAttr port, int pinned) {
    int n = Math.min(Math.max(port.gidTblLen(), pinned + 1), MAX_GID_ENTRIES);
    List<Verbs.Gid> table = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      if (pinned >= 0 && i != pinned) {
        table.add(null);
        continue;
      }
      VerbsResult<Verbs.Gid> g = verbs.queryGid(ctx, Rail.PORT, i);
      table.add(g.ok() ? g.value() : null);
    }
    return table;
  }

  /**
   * Each entry's type as the kernel lists it in sysfs, for a native device; null for the software
   * provider (it has no GID types) or where sysfs does not say.
   */
  static List<String> types(Verbs verbs, String device, Verbs.PortAttr port) {
    if (!(verbs instanceof NativeVerbs)) {
      return null;
    }
    Path dir =
        Path.of(
            "/sys/class/infiniband",
            device,
            "ports",
            String.valueOf(Rail.PORT),
            "gid_attrs",
            "types");
    int n = Math.min(port.gidTblLen(), MAX_GID_ENTRIES);
    List<String> types = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String type;
      try {
        type = Files.readString(dir.resolve(String.valueOf(i))).trim();
      } catch (IOException | RuntimeException e) {
        type = null; // no such entry, or an entry the kernel does not type (invalid)
      }
      types.add(type);
    }
    return types;
  }
}
