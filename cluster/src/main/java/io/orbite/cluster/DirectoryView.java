package io.orbite.cluster;

import io.orbite.cluster.EntryCodec.Listed;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * What one replica lists now: the entries of the replicated map whose cluster member is up (an
 * entry naming a member that left, was downed or is not known yet is not listed), by name.
 * Immutable; the directory actor publishes each new one, and lookups read it without a mailbox
 * round trip.
 */
final class DirectoryView {
  static final DirectoryView EMPTY = new DirectoryView(new TreeMap<>());

  private final TreeMap<String, Listed> byName;

  private DirectoryView(TreeMap<String, Listed> byName) {
    this.byName = byName;
  }

  /**
   * The entries of {@code parsed} whose member ({@link Listed#memberKey()}) is in {@code live}.
   *
   * @param parsed the map's entries that could be read, by name
   * @param live the members up now, as {@code address#uid}
   */
  static DirectoryView of(Map<String, Listed> parsed, Set<String> live) {
    TreeMap<String, Listed> byName = new TreeMap<>();
    parsed.forEach(
        (name, listed) -> {
          if (live.contains(listed.memberKey())) {
            byName.put(name, listed);
          }
        });
    return new DirectoryView(byName);
  }

  Optional<Listed> get(String name) {
    return Optional.ofNullable(byName.get(name));
  }

  /** The entries, in name order. */
  List<DirectoryEntry> entries() {
    return byName.values().stream().map(Listed::entry).toList();
  }

  /** The names listed, in order, for error messages. */
  String names() {
    return byName.isEmpty() ? "none" : String.join(", ", byName.keySet());
  }

  /**
   * What changed from {@code previous} to this view about engines other than {@code self}, in name
   * order.
   *
   * @param previous the view before
   * @param self this engine's name (its own entry makes no change)
   * @param at when this replica saw it
   * @param removedReason why an entry that is no longer listed went
   */
  List<DirectoryChange> changesSince(
      DirectoryView previous,
      String self,
      Instant at,
      Function<DirectoryEntry, String> removedReason) {
    Set<String> names = new TreeSet<>(previous.byName.keySet());
    names.addAll(byName.keySet());
    names.remove(self);
    List<DirectoryChange> changes = new ArrayList<>();
    for (String name : names) {
      Listed before = previous.byName.get(name);
      Listed now = byName.get(name);
      if (before == null) {
        changes.add(new DirectoryChange.Joined(name, at, now.entry()));
      } else if (now == null) {
        changes.add(
            new DirectoryChange.Removed(
                name, at, before.entry(), removedReason.apply(before.entry())));
      } else if (!before.entry().segment().equals(now.entry().segment())) {
        changes.add(new DirectoryChange.Restarted(name, at, before.entry(), now.entry()));
      } else if (!before.equals(now)) {
        changes.add(new DirectoryChange.Updated(name, at, before.entry(), now.entry()));
      }
    }
    return Collections.unmodifiableList(changes);
  }
}
