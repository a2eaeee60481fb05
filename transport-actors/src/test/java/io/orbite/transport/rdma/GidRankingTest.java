package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.orbite.nativebind.verbs.Verbs;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which GID a rail speaks from: pinned strictly, or the best valid entry by kind, then index. */
class GidRankingTest {
  private static final Verbs.Gid ZERO = Verbs.Gid.ZERO;
  private static final Verbs.Gid LINK_LOCAL = new Verbs.Gid(0xfe80_0000_0000_0000L, 0x1234);
  private static final Verbs.Gid MAPPED = new Verbs.Gid(0, 0x0000_ffff_0a01_0203L);
  private static final Verbs.Gid OTHER_MAPPED = new Verbs.Gid(0, 0x0000_ffff_0a01_0204L);
  private static final Verbs.Gid SOFT_A = new Verbs.Gid(0x1f40_0000_0000_0000L, 0xffff_7f00_0001L);
  private static final Verbs.Gid SOFT_B = new Verbs.Gid(0x1f40_0007_0000_0000L, 0xffff_7f00_0001L);

  @Test
  void automaticPrefersRoceV2Ipv4MappedThenRoceV2ThenUntypedMappedThenTheRest() {
    // An mlx5 RoCE port: v1 and v2 of the link-local GID, then v1 and v2 of the IPv4 address.
    List<Verbs.Gid> table = List.of(LINK_LOCAL, LINK_LOCAL, MAPPED, MAPPED);
    List<String> types = List.of("IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2");
    assertEquals(new GidRanking.Choice(3, MAPPED), GidRanking.choose(table, types, -1));
    assertEquals(
        new GidRanking.Choice(1, LINK_LOCAL),
        GidRanking.choose(Arrays.asList(LINK_LOCAL, LINK_LOCAL, ZERO, ZERO), types, -1),
        "RoCE v2 before v1 when no v2 entry is IPv4-mapped");
    assertEquals(
        new GidRanking.Choice(2, MAPPED),
        GidRanking.choose(List.of(LINK_LOCAL, LINK_LOCAL, MAPPED, OTHER_MAPPED), null, -1),
        "without types: IPv4-mapped first, lowest index");
  }

  @Test
  void withoutTypesTheLowestValidIndexWinsAndInvalidEntriesAreSkipped() {
    assertEquals(
        new GidRanking.Choice(1, SOFT_B),
        GidRanking.choose(Arrays.asList(ZERO, SOFT_B, SOFT_A, null), null, -1));
    assertNull(GidRanking.choose(Arrays.asList(ZERO, null, ZERO), null, -1), "none valid");
  }

  @Test
  void aPinnedIndexIsTakenOnlyWhileItIsValidAndNoOtherEver() {
    List<Verbs.Gid> table = Arrays.asList(ZERO, SOFT_B, SOFT_A);
    assertNull(GidRanking.choose(table, null, 0), "pinned 0 is invalid: nothing else is taken");
    assertEquals(new GidRanking.Choice(2, SOFT_A), GidRanking.choose(table, null, 2));
    assertNull(GidRanking.choose(table, null, 7), "pinned past the table");
  }
}
