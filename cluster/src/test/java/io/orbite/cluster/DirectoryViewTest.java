package io.orbite.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.orbite.engine.Access;
import io.orbite.engine.SegmentDescriptor;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DirectoryViewTest {
  private static final Instant AT = Instant.parse("2026-12-06T22:00:00Z");
  private static final String A = "pekko://s@127.0.0.1:1";
  private static final String B = "pekko://s@127.0.0.1:2";

  private static EntryCodec.Listed listed(
      String name, int port, long epoch, String member, long uid, String... regions) {
    List<DirectoryRegion> rs =
        java.util.Arrays.stream(regions)
            .map(r -> new DirectoryRegion(r, r.length(), 4096, Access.READ))
            .toList();
    return new EntryCodec.Listed(
        new DirectoryEntry(
            name, new SegmentDescriptor("127.0.0.1", port, epoch), List.of("TCP"), rs, member),
        uid);
  }

  @Test
  void onlyEntriesOfLiveMembersAreListedInNameOrder() {
    DirectoryView view =
        DirectoryView.of(
            Map.of(
                "b", listed("b", 7001, 1, A, 1),
                "a", listed("a", 7000, 1, A, 1),
                "gone", listed("gone", 7002, 1, B, 9),
                "old-uid", listed("old-uid", 7003, 1, A, 0)),
            Set.of(A + "#1"));
    assertEquals(List.of("a", "b"), view.entries().stream().map(DirectoryEntry::name).toList());
    assertEquals("a, b", view.names());
    assertEquals("none", DirectoryView.EMPTY.names());
  }

  @Test
  void eachKindOfChangeAboutOthersIsSeenOnceAndSelfNever() {
    Set<String> live = Set.of(A + "#1", B + "#2");
    DirectoryView before =
        DirectoryView.of(
            Map.of(
                "self", listed("self", 7000, 1, A, 1),
                "updated", listed("updated", 7001, 1, B, 2, "x"),
                "restarted", listed("restarted", 7002, 1, B, 2),
                "removed", listed("removed", 7003, 1, B, 2),
                "same", listed("same", 7004, 1, B, 2)),
            live);
    DirectoryView after =
        DirectoryView.of(
            Map.of(
                "self", listed("self", 7000, 2, A, 1),
                "updated", listed("updated", 7001, 1, B, 2, "x", "y"),
                "restarted", listed("restarted", 7002, 2, B, 2),
                "joined", listed("joined", 7005, 1, B, 2),
                "same", listed("same", 7004, 1, B, 2)),
            live);
    List<DirectoryChange> changes =
        after.changesSince(before, "self", AT, e -> "gone: " + e.name());
    assertEquals(
        List.of("joined", "removed", "restarted", "updated"),
        changes.stream().map(DirectoryChange::name).toList());
    assertInstanceOf(DirectoryChange.Joined.class, changes.get(0));
    DirectoryChange.Removed removed =
        assertInstanceOf(DirectoryChange.Removed.class, changes.get(1));
    assertEquals("gone: removed", removed.reason());
    assertEquals(7003, removed.previous().segment().port());
    DirectoryChange.Restarted restarted =
        assertInstanceOf(DirectoryChange.Restarted.class, changes.get(2));
    assertEquals(1, restarted.previous().segment().epoch());
    assertEquals(2, restarted.entry().segment().epoch());
    DirectoryChange.Updated updated =
        assertInstanceOf(DirectoryChange.Updated.class, changes.get(3));
    assertEquals(2, updated.entry().regions().size());
    changes.forEach(c -> assertEquals(AT, c.at()));
    assertEquals(List.of(), after.changesSince(after, "self", AT, e -> ""));
  }

  @Test
  void aMemberThatIsNoLongerLiveTakesItsEntriesOut() {
    Map<String, EntryCodec.Listed> map = Map.of("p", listed("p", 7000, 1, B, 2));
    DirectoryView up = DirectoryView.of(map, Set.of(B + "#2"));
    DirectoryView down = DirectoryView.of(map, Set.of());
    List<DirectoryChange> changes = down.changesSince(up, "self", AT, e -> "member left");
    assertEquals(1, changes.size());
    assertEquals("member left", ((DirectoryChange.Removed) changes.get(0)).reason());
  }
}
