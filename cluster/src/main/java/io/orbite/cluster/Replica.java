package io.orbite.cluster;

import io.orbite.cluster.EntryCodec.Listed;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's copy of the directory's inputs, as the directory actor last heard them: the
 * replicated map's values (parsed, each refused value logged once) and the status of every cluster
 * member. From them it makes the {@link DirectoryView} lookups read. Plain data confined to the
 * actor; no clock, no I/O besides the log.
 */
final class Replica {
  private static final Logger LOG = LoggerFactory.getLogger(Replica.class);

  /** Statuses of a member whose engines are listed. */
  static final Set<MemberStatus> LIVE =
      Set.of(
          MemberStatus.joining(),
          MemberStatus.weaklyUp(),
          MemberStatus.up(),
          MemberStatus.leaving(),
          MemberStatus.shuttingDown(),
          MemberStatus.shutDown());

  private final String owner;
  private Map<String, String> raw = Map.of();
  private final Map<String, Listed> parsed = new HashMap<>();
  private final Map<String, String> refusedLogged = new HashMap<>();
  private final Map<String, MemberStatus> members = new HashMap<>();

  /**
   * An empty replica.
   *
   * @param owner the engine whose directory keeps it, for the log
   */
  Replica(String owner) {
    this.owner = owner;
  }

  /** The member's address and uid, as entries name it ({@link Listed#memberKey()}). */
  static String key(Member member) {
    return Listed.memberKey(
        member.uniqueAddress().address().toString(), member.uniqueAddress().longUid());
  }

  /** The map changed: its values are parsed again (unchanged ones reused). */
  void mapChanged(Map<String, String> entries) {
    raw = Map.copyOf(entries);
    Map<String, Listed> previous = Map.copyOf(parsed);
    parsed.clear();
    raw.forEach(
        (k, v) -> {
          Listed before = previous.get(k);
          if (before != null && EntryCodec.write(before).equals(v)) {
            parsed.put(k, before);
            return;
          }
          EntryCodec.Read read = EntryCodec.read(k, v);
          if (read.listed() != null) {
            parsed.put(k, read.listed());
            refusedLogged.remove(k);
          } else if (!v.equals(refusedLogged.put(k, v))) {
            LOG.warn(
                "directory of {}: skipped the entry under '{}': {} (value {})",
                owner,
                k,
                read.refusal(),
                v.length() > 200 ? v.substring(0, 200) + "..." : v);
          }
        });
    refusedLogged.keySet().retainAll(raw.keySet());
  }

  /** A member's status changed. */
  void memberChanged(Member member) {
    members.put(key(member), member.status());
  }

  /** The value the map holds under {@code name}, as written (null when none). */
  String value(String name) {
    return raw.get(name);
  }

  /** The readable entry the map holds under {@code name}, whatever its member's status. */
  Optional<Listed> entry(String name) {
    return Optional.ofNullable(parsed.get(name));
  }

  /** Members that exited, were downed or removed, as {@code address#uid}. */
  Set<String> departed() {
    Set<String> departed = new HashSet<>();
    members.forEach(
        (k, status) -> {
          if (!LIVE.contains(status)) {
            departed.add(k);
          }
        });
    return departed;
  }

  /** Whether the map holds an entry of a departed member (one for any node to remove). */
  boolean listsDeparted() {
    Set<String> departed = departed();
    return parsed.values().stream().anyMatch(listed -> departed.contains(listed.memberKey()));
  }

  /** The entries whose member is live now. */
  DirectoryView view() {
    Set<String> live = new HashSet<>();
    members.forEach(
        (k, status) -> {
          if (LIVE.contains(status)) {
            live.add(k);
          }
        });
    return DirectoryView.of(parsed, live);
  }

  /** Why {@code entry}, listed before, is no longer: its member's status, or its withdrawal. */
  String removedReason(DirectoryEntry entry) {
    Listed listed = parsed.get(entry.name());
    if (listed != null && listed.entry().segment().equals(entry.segment())) {
      MemberStatus status = members.get(listed.memberKey());
      return "its cluster member "
          + entry.member()
          + (status == null ? " is not known here" : " is " + status.toString().toLowerCase());
    }
    for (Map.Entry<String, MemberStatus> m : members.entrySet()) {
      if (m.getKey().startsWith(entry.member() + "#") && !LIVE.contains(m.getValue())) {
        return "its cluster member "
            + entry.member()
            + " is "
            + m.getValue().toString().toLowerCase();
      }
    }
    // The map lost the entry before this node heard of its member's departure, if it did: the
    // engine's own withdrawal, or another node's clean-up of a departed member's entries.
    return "its entry was withdrawn from the directory (its engine or directory closed, or its"
        + " member departed)";
  }
}
