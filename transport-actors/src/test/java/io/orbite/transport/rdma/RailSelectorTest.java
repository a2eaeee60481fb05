package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.RdmaPriorityMatrix;
import io.orbite.config.RdmaSelectionConfig;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class RailSelectorTest {
  private static final long BLOCK = 64 * 1024;
  private static final boolean[] BOTH = {true, true};

  private static int[] counts(int[] rails, int n) {
    int[] c = new int[n];
    for (int r : rails) {
      c[r]++;
    }
    return c;
  }

  @Test
  void aSingleSliceTakesTheLowestScoreAndEqualRailsTakeTurns() {
    RailSelector s = new RailSelector(new double[] {100, 100});
    int first = s.assign(1, BLOCK, BOTH)[0];
    int second = s.assign(1, BLOCK, BOTH)[0];
    assertTrue(first != second, "ties rotate: " + first + ", " + second);
    s.charge(0, 10L << 20);
    for (int i = 0; i < 4; i++) {
      assertEquals(1, s.assign(1, BLOCK, BOTH)[0], "the rail with bytes in flight scores worse");
    }
  }

  @Test
  void aFasterRailScoresBetterAndAMultiSliceParentSplitsByWeightWithLeftoversToTheBest() {
    RailSelector s = new RailSelector(new double[] {100, 300});
    assertEquals(1, s.assign(1, BLOCK, BOTH)[0]);
    int[] c = counts(s.assign(64, BLOCK, BOTH), 2);
    // Weights 1:3 of 64 slices: floor 16 and 48, nothing left over.
    assertArrayEquals(new int[] {16, 48}, c);
    int[] odd = counts(s.assign(7, BLOCK, BOTH), 2);
    // floor(7/4) = 1, floor(21/4) = 5, the leftover to the best (rail 1).
    assertArrayEquals(new int[] {1, 6}, odd);
  }

  @Test
  void everyHundredthMultiSliceParentProbesRoundRobinAndNeverAnIneligibleRail() {
    RailSelector s = new RailSelector(new double[] {100, 100, 400});
    boolean[] notRail0 = {false, true, true};
    for (int parent = 1; parent <= 300; parent++) {
      int[] rails = s.assign(6, BLOCK, notRail0);
      int[] c = counts(rails, 3);
      assertEquals(0, c[0], "parent " + parent + ": " + Arrays.toString(rails));
      if (parent % RailSelector.PROBE_EVERY == 0) {
        assertArrayEquals(new int[] {0, 3, 3}, c, "a probe deals round-robin");
      } else {
        assertTrue(c[2] > c[1], "otherwise by weight: " + Arrays.toString(c));
      }
    }
    assertNull(s.assign(1, BLOCK, new boolean[] {false, false, false}), "no eligible rail");
  }

  @Test
  void estimatesFollowTheirSamplesWithinTheirClampsAndChargesAreReturned() {
    RailSelector s = new RailSelector(new double[] {0}); // unknown rate: 400 Gb/s
    long seed = (long) (400e9 / 8);
    assertEquals(seed, s.load(0).linkBytesPerSecond());
    s.charge(0, 1000);
    s.posted(0, 1000, 0);
    // 1000 B in 1 s: far below a tenth of the seed, so clamped there.
    s.finished(0, 1000, true, true, 0, 1_000_000_000L);
    RailSelector.Load l = s.load(0);
    assertEquals(seed / 10, l.selectionBytesPerSecond(), seed / 1000.0);
    assertEquals(0, l.chargedBytes());
    assertEquals(1000, l.postedBytes());
    assertEquals(1000, l.completedBytes());
    assertEquals(1000, l.allocatedBytes());
    // 40 GB in 1 s, inside the clamps: the EWMA moves 99% of the way (old weight 0.01).
    s.charge(0, 40_000_000_000L);
    s.posted(0, 40_000_000_000L, 0);
    s.finished(0, 40_000_000_000L, true, true, 0, 1_000_000_000L);
    double expected = 0.01 * (seed / 10.0) + 0.99 * 40e9;
    assertEquals(expected, s.load(0).selectionBytesPerSecond(), expected * 1e-6);
    // A failed slice returns its charge and feeds no estimate.
    long before = s.load(0).selectionBytesPerSecond();
    s.charge(0, 5000);
    s.finished(0, 5000, false, true, 0, 10);
    assertEquals(before, s.load(0).selectionBytesPerSecond());
    assertEquals(0, s.load(0).chargedBytes());
  }

  @Test
  void aPeersSlowerRailCapsItsPairsBandwidthInTheScore() {
    RailSelector s = new RailSelector(new double[] {100, 100});
    double[] peer = {25e9 / 8, 400e9 / 8}; // the peer's rail 0 is a quarter of ours
    assertEquals(1, s.assign(1, BLOCK, BOTH, peer)[0], "one slice takes the uncapped pair");
    // Weights 1:4: floor(64/5) = 12, floor(256/5) = 51, the leftover to the best (rail 1).
    assertArrayEquals(new int[] {12, 52}, counts(s.assign(64, BLOCK, BOTH, peer), 2));
    // A cap above the rail's own estimate changes nothing: equal rails split evenly.
    assertArrayEquals(
        new int[] {32, 32}, counts(s.assign(64, BLOCK, BOTH, new double[] {1e12, 1e12}), 2));
    assertArrayEquals(new int[] {32, 32}, counts(s.assign(64, BLOCK, BOTH), 2), "no cap");
  }

  @Test
  void aNewLinkRateIsTheSeedAndScalesBothEstimatesWithinTheNewClamps() {
    RailSelector s = new RailSelector(new double[] {100}); // 12.5 GB/s
    s.charge(0, 40_000_000_000L);
    s.posted(0, 40_000_000_000L, 0);
    // 40 GB in 5 s = 8 GB/s measured, inside 0.1..10 times 12.5 GB/s.
    s.finished(0, 40_000_000_000L, true, true, 0, 5_000_000_000L);
    double measured = s.load(0).selectionBytesPerSecond();
    double transmit = s.load(0).transmitBytesPerSecond();
    s.linkRate(0, 25); // a quarter
    RailSelector.Load l = s.load(0);
    assertEquals(25e9 / 8, l.linkBytesPerSecond(), 1);
    assertEquals(measured / 4, l.selectionBytesPerSecond(), measured * 1e-6);
    assertEquals(transmit / 4, l.transmitBytesPerSecond(), transmit * 1e-6);
    // Unknown (0): 400 Gb/s, the estimates scaled by 16 and still within their clamps.
    s.linkRate(0, 0);
    l = s.load(0);
    assertEquals(400e9 / 8, l.linkBytesPerSecond(), 1);
    assertEquals(measured * 4, l.selectionBytesPerSecond(), measured * 1e-6);
    // From 400 down to 1 Gb/s: the estimate keeps its ratio to the seed (so its clamps hold).
    s.linkRate(0, 1);
    l = s.load(0);
    assertEquals(1e9 / 8, l.linkBytesPerSecond(), 1);
    assertEquals(measured / 100, l.selectionBytesPerSecond(), measured * 1e-6);
  }

  private static final List<String> SOFT = List.of("soft0", "soft1");
  private static final double[] EQUAL = {100, 100};

  private static RailPolicy policy(RdmaSelectionConfig c, int[] numa, RdmaPriorityMatrix m) {
    return RailPolicy.of(c, SOFT, numa, m);
  }

  private static RdmaSelectionConfig numa(int preferred, boolean strict) {
    return RdmaSelectionConfig.defaults().withNuma(preferred, strict);
  }

  @Test
  void numaLocalityGivesTiersSameUnknownOtherAndEveryRailTierZeroWhenTheNodeIsUnknown() {
    List<String> three = List.of("a", "b", "c");
    int[] nodes = {0, -1, 1};
    RailPolicy p = RailPolicy.of(numa(0, false), three, nodes, RdmaPriorityMatrix.NONE);
    assertArrayEquals(new int[] {0, 1, 2}, p.tiers());
    assertTrue(p.allowed(0) && p.allowed(1) && p.allowed(2), "not strict: nothing refused");
    RailPolicy unknown = RailPolicy.of(numa(-1, true), three, nodes, RdmaPriorityMatrix.NONE);
    assertArrayEquals(new int[] {0, 0, 0}, unknown.tiers());
    assertTrue(unknown.allowed(0) && unknown.allowed(1) && unknown.allowed(2));
  }

  @Test
  void aRailInALowerTierScoresWorseByItsTierWeightAndGetsItsShareByWeight() {
    RailSelector s =
        new RailSelector(EQUAL, policy(numa(0, false), new int[] {0, -1}, RdmaPriorityMatrix.NONE));
    assertEquals(0, s.load(0).tier());
    assertEquals(1, s.load(1).tier());
    // Tier 1 weighs 5: the local rail is chosen until its charge makes (c + B) > 5 B.
    for (int i = 0; i < 4; i++) {
      assertEquals(0, s.assign(1, BLOCK, BOTH)[0], "slice " + i);
      s.charge(0, BLOCK);
    }
    s.charge(0, BLOCK); // 5 B charged: (5B + B) / bw > 5 B / bw
    assertEquals(1, s.assign(1, BLOCK, BOTH)[0]);
    RailSelector fresh =
        new RailSelector(EQUAL, policy(numa(0, false), new int[] {0, 3}, RdmaPriorityMatrix.NONE));
    // Weights 1 : 1/10 of 64 slices: floor(58.18) = 58 and floor(5.81) = 5, the leftover to rail 0.
    assertArrayEquals(new int[] {59, 5}, counts(fresh.assign(64, BLOCK, BOTH), 2));
  }

  @Test
  void theDeviceMaskIsAHardLimitThatNoChargeOrProbeWidens() {
    RailPolicy p =
        policy(
            RdmaSelectionConfig.defaults().withDeviceMask(List.of("soft1")),
            new int[] {-1, -1},
            RdmaPriorityMatrix.NONE);
    assertFalse(p.allowed(0));
    assertEquals("rdma.selection.deviceMask", p.excludedBy(0));
    assertTrue(p.allowed(1));
    RailSelector s = new RailSelector(EQUAL, p);
    s.charge(1, 1L << 40); // rail 1 heavily loaded, rail 0 idle
    for (int parent = 1; parent <= 200; parent++) {
      assertArrayEquals(new int[] {0, 7}, counts(s.assign(7, BLOCK, BOTH), 2), "parent " + parent);
      assertEquals(1, s.assign(1, BLOCK, BOTH)[0]);
    }
    assertNull(s.assign(1, BLOCK, new boolean[] {true, false}), "the mask leaves only rail 1");
  }

  @Test
  void aMaskNameThatIsNotAnOpenedDeviceRefusesTheStartNamingItsIndex() {
    RailPolicy.Refused e =
        assertThrows(
            RailPolicy.Refused.class,
            () ->
                policy(
                    RdmaSelectionConfig.defaults().withDeviceMask(List.of("soft1", "mlx5_9")),
                    new int[] {-1, -1},
                    RdmaPriorityMatrix.NONE));
    assertEquals(
        "rdma.selection.deviceMask[1]: \"mlx5_9\" is not an opened device (opened: soft0, soft1)",
        e.getMessage());
  }

  @Test
  void strictNumaRefusesOnlyRailsKnownToSitOnAnotherNode() {
    RailPolicy p = policy(numa(0, true), new int[] {1, -1}, RdmaPriorityMatrix.NONE);
    assertFalse(p.allowed(0));
    assertEquals("rdma.selection.strictLocalNuma (on NUMA node 1, preferred 0)", p.excludedBy(0));
    assertTrue(p.allowed(1), "unknown locality stays eligible");
    assertEquals(1, p.tier(1));
    assertNull(p.noneAllowed());
    RailSelector s = new RailSelector(EQUAL, p);
    for (int i = 0; i < 10; i++) {
      assertEquals(1, s.assign(1, BLOCK, BOTH)[0]);
    }
    RailPolicy both = policy(numa(0, true), new int[] {1, 2}, RdmaPriorityMatrix.NONE);
    assertEquals(
        "the RDMA selection policy allows no rail (soft0 by rdma.selection.strictLocalNuma (on"
            + " NUMA node 1, preferred 0); soft1 by rdma.selection.strictLocalNuma (on NUMA node 2,"
            + " preferred 0))",
        both.noneAllowed());
    assertNull(new RailSelector(EQUAL, both).assign(4, BLOCK, BOTH));
  }

  @Test
  void aMatrixRowGivesTiersByRankAndExcludesWhatItDoesNotList() {
    RdmaPriorityMatrix m =
        RdmaPriorityMatrix.parse(
            "{\"cpu:0\": [[\"soft1\"], [\"soft0\"]], \"*\": [[\"soft0\"], []]}");
    RailPolicy local = policy(numa(0, false), new int[] {-1, -1}, m);
    assertEquals("cpu:0", local.location());
    assertArrayEquals(new int[] {1, 0}, local.tiers());
    assertTrue(local.allowed(0) && local.allowed(1));
    RailPolicy any = policy(numa(-1, false), new int[] {-1, -1}, m);
    assertEquals("*", any.location());
    assertTrue(any.allowed(0));
    assertFalse(any.allowed(1));
    assertEquals("the priority matrix row *, which does not list it", any.excludedBy(1));
    RailSelector s = new RailSelector(EQUAL, any);
    assertArrayEquals(new int[] {9, 0}, counts(s.assign(9, BLOCK, BOTH), 2));
    // Without a * row one is synthesized from every named device, all in rank 0.
    RdmaPriorityMatrix noStar = RdmaPriorityMatrix.parse("{\"cpu:1\": [[\"soft1\"], []]}");
    RailPolicy synthesized = policy(numa(0, false), new int[] {-1, -1}, noStar);
    assertFalse(synthesized.allowed(0));
    assertEquals(
        "the priority matrix row * (synthesized from every named device), which does not list it",
        synthesized.excludedBy(0));
    assertTrue(synthesized.allowed(1));
    assertEquals(0, synthesized.tier(1));
  }

  @Test
  void masksAndStrictNumaOnlyNarrowWhatTheMatrixAllows() {
    RdmaPriorityMatrix m = RdmaPriorityMatrix.parse("{\"*\": [[\"soft0\", \"soft1\"], []]}");
    RailPolicy masked =
        policy(
            RdmaSelectionConfig.defaults().withDeviceMask(List.of("soft0")), new int[] {-1, -1}, m);
    assertTrue(masked.allowed(0));
    assertFalse(masked.allowed(1));
    RailPolicy strict = policy(numa(0, true), new int[] {-1, 1}, m);
    assertTrue(strict.allowed(0));
    assertFalse(strict.allowed(1));
    RdmaPriorityMatrix empty = RdmaPriorityMatrix.parse("{\"*\": [[], []]}");
    RailPolicy none = policy(RdmaSelectionConfig.defaults(), new int[] {-1, -1}, empty);
    assertFalse(
        none.allowed(0) || none.allowed(1), "a row whose ranks are all empty allows nothing");
    assertTrue(
        none.noneAllowed().contains("soft0 by the priority matrix row *"), none.noneAllowed());
  }

  @Test
  void aMatrixNameThatIsNotAnOpenedDeviceRefusesTheStartNamingItsJsonPath() {
    RdmaPriorityMatrix m =
        RdmaPriorityMatrix.parse("{\"cpu:0\": [[\"soft0\"], [\"mlx5_9\"]], \"*\": [[], []]}");
    RailPolicy.Refused e =
        assertThrows(RailPolicy.Refused.class, () -> policy(numa(0, false), new int[] {-1, -1}, m));
    assertEquals(
        "rdma.selection.priorityMatrix[\"cpu:0\"][1][0]: \"mlx5_9\" is not an opened device"
            + " (opened: soft0, soft1)",
        e.getMessage());
  }

  @Test
  void theTransmitEstimateSamplesAWindowOfAtMostFiftyMilliseconds() {
    RailSelector s =
        new RailSelector(new double[] {100}); // seed 12.5e9 B/s, clamps 1.25e9..1.25e11
    double tx = 12.5e9;
    long ms = 1_000_000L;
    s.posted(0, 4_000_000_000L, 0); // payload stays outstanding throughout
    // One 100 ms segment of 1 GB: the window is that segment alone (10 GB/s).
    s.finished(0, 1_000_000_000L, true, true, 0, 100 * ms);
    tx = 0.9 * tx + 0.1 * 1e10;
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
    // 10 ms more of 20 MB: with the 100 ms segment the window would pass 50 ms: 20 MB / 10 ms.
    s.finished(0, 20_000_000L, true, true, 100 * ms, 110 * ms);
    tx = 0.9 * tx + 0.1 * 2e9;
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
    // 10 ms of 40 MB: the window holds the last two segments, 60 MB over 20 ms.
    s.finished(0, 40_000_000L, true, true, 110 * ms, 120 * ms);
    tx = 0.9 * tx + 0.1 * 3e9;
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
    // Three 10 ms segments of 10 MB: the window reaches five segments, 90 MB over 50 ms.
    for (int k = 0; k < 3; k++) {
      s.finished(0, 10_000_000L, true, true, (120 + 10 * k) * ms, (130 + 10 * k) * ms);
    }
    tx = 0.9 * tx + 0.1 * (70e6 / 0.03);
    tx = 0.9 * tx + 0.1 * (80e6 / 0.04);
    tx = 0.9 * tx + 0.1 * (90e6 / 0.05);
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
    // One more: the oldest (20 MB) leaves the window, 80 MB over 50 ms.
    s.finished(0, 10_000_000L, true, true, 150 * ms, 160 * ms);
    tx = 0.9 * tx + 0.1 * (80e6 / 0.05);
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
    // A completion 5 ms later updates nothing (updates are at least 10 ms apart).
    s.finished(0, 10_000_000L, true, true, 160 * ms, 165 * ms);
    assertEquals(tx, s.load(0).transmitBytesPerSecond(), 2);
  }
}
