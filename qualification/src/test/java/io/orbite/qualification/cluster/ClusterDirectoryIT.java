package io.orbite.qualification.cluster;

import static io.orbite.qualification.cluster.ClusterScenario.DECODE_1;
import static io.orbite.qualification.cluster.ClusterScenario.DECODE_2;
import static io.orbite.qualification.cluster.ClusterScenario.LATE;
import static io.orbite.qualification.cluster.ClusterScenario.PREFILL;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.qualification.harness.ChildLogs;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 40's acceptance, as processes: three JVMs (prefill, decode-1, decode-2), each a Pekko
 * Cluster member over loopback Artery TCP with an engine in it, find each other through the peer
 * directory. One run forms the cluster by seed nodes, the other by cluster bootstrap with the
 * {@code config} discovery method. Every READ checks every byte of the region and the guards around
 * it ({@link ClusterNode}); every refused READ moved 0 bytes and left its destination's guard
 * pattern whole. The nodes' logs are kept when a run fails (the failure names them).
 */
class ClusterDirectoryIT {
  private static final long POOL_BYTES = 4L * 1024 * 1024;

  /**
   * Seed nodes: the decode engines find the prefill by name and READ its pool; an unknown name and
   * an unknown region fail at once naming them; a published region unregistered on the source is
   * refused by the source, PERMISSION_DENIED (the segment still lists it) and then leaves the
   * directory; the prefill SIGKILLed and restarted with a new epoch at the same address and port is
   * seen on both decode engines' {@code directory.changes()}, their old segments are refused
   * EPOCH_MISMATCH and {@code directory.open("prefill")} reaches the new incarnation, whose pattern
   * the READ verifies; a fourth node that joins later lists every engine at its running epoch and
   * READs the prefill.
   */
  @Test
  @Timeout(170)
  void seedNodesFindByNameAndARestartedPrefillPropagatesToEveryDecodeEngine() throws Exception {
    try (ChildLogs logs = ChildLogs.create("cluster-seeds");
        ClusterScenario s =
            ClusterScenario.plan(NodeSpec.Join.SEEDS, POOL_BYTES, logs.dir(), System.out)) {
      s.form();
      for (String decode : List.of(DECODE_1, DECODE_2)) {
        ClusterScenario.Read r = s.read(decode, "old", PREFILL, 1);
        assertEquals(POOL_BYTES, r.bytes(), decode + " read the whole pool");
      }
      unknownNamesFailAtOnce(s);
      anUnregisteredRegionIsRefusedByTheSource(s);

      List<ClusterScenario.RestartSeen> seen = s.killAndRestartPrefill(List.of(DECODE_1, DECODE_2));
      for (ClusterScenario.RestartSeen r : seen) {
        System.out.println("CLUSTER-RESTART (seed nodes, 3 JVMs on loopback) " + r.line());
        assertTrue(Set.of("Removed", "Restarted").contains(r.change()), r.line());
        assertEquals("EPOCH_MISMATCH", r.refusedKind(), r.line());
        assertEquals(0, r.refusedBytes(), r.line());
      }

      s.startLate();
      ClusterScenario.Read late = s.read(LATE, "p", PREFILL, 1);
      assertEquals(s.node(PREFILL).epoch(), late.epoch(), "the late node reads the new prefill");
      String members = s.ok(LATE, "MEMBERS");
      for (String name : List.of(PREFILL, DECODE_1, DECODE_2, LATE)) {
        assertTrue(
            members.contains(name + ":" + s.node(name).epochHex() + ":"),
            () -> "the late node lists " + name + ": " + members);
      }
      logs.passed();
    }
  }

  /**
   * Cluster bootstrap with the {@code config} discovery method (each node on its own loopback
   * address, Pekko Management on each): the decode engines find the prefill by name and READ its
   * pool; decode-2 leaves gracefully: its entry leaves every directory, decode-1 sees it Removed,
   * and decode-1's segment on it is refused (EPOCH_MISMATCH, fenced on the directory's hint, or
   * PEER_LOST, if its lanes saw the engine go first) with no byte moved.
   */
  @Test
  @Timeout(120)
  void clusterBootstrapFindsByNameAndAGracefulLeaveRemovesTheEntry() throws Exception {
    try (ChildLogs logs = ChildLogs.create("cluster-bootstrap");
        ClusterScenario s =
            ClusterScenario.plan(NodeSpec.Join.BOOTSTRAP, POOL_BYTES, logs.dir(), System.out)) {
      s.form();
      for (String decode : List.of(DECODE_1, DECODE_2)) {
        ClusterScenario.Read r = s.read(decode, "p", PREFILL, 1);
        assertEquals(POOL_BYTES, r.bytes(), decode + " read the whole pool");
      }
      s.read(DECODE_1, "d2", DECODE_2, 1);

      long since = System.currentTimeMillis();
      s.ok(DECODE_2, "LEAVE");
      for (String other : List.of(DECODE_1, PREFILL)) {
        s.ok(other, "GONE " + DECODE_2 + " 60000");
      }
      String removed = s.ok(DECODE_1, "CHANGE " + DECODE_2 + " Removed " + since + " 30000");
      System.out.println(
          "CLUSTER-LEAVE (bootstrap) decode-1 saw decode-2 Removed "
              + (Long.parseLong(removed.split(" ")[1]) - since)
              + " ms after LEAVE was sent");
      String refused = s.ask(DECODE_1, "READ d2 0 30000 1");
      System.out.println("CLUSTER-LEAVE READ of the departed engine's segment: " + refused);
      String[] r = refused.split(" ", 5);
      assertEquals("FAILED", r[0], refused);
      // Fenced by the directory's hint (checkPeer: nothing answers there any more), or lost first
      // by the lanes, whose connections the closing engine ended: both refuse before any byte.
      assertTrue(Set.of("EPOCH_MISMATCH", "PEER_LOST").contains(r[1]), refused);
      assertEquals("0", r[2], refused);
      assertEquals("untouched", r[3], refused);
      // The others are not affected: decode-1 still reads the prefill through the same segment.
      s.ok(DECODE_1, "READ p " + s.node(PREFILL).epochHex() + " 30000 1");
      logs.passed();
    }
  }

  /** An unknown engine or region: INVALID_ARGUMENT at once, naming it. */
  private static void unknownNamesFailAtOnce(ClusterScenario s) throws Exception {
    for (String command :
        List.of(
            "OPEN ghost g " + ClusterNode.POOL,
            "REGION ghost " + ClusterNode.POOL,
            "REGION " + PREFILL + " no-such-region",
            "OPEN " + PREFILL + " g no-such-region")) {
      long start = System.nanoTime();
      String answer = s.ask(DECODE_1, command);
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertTrue(answer.startsWith("ERR INVALID_ARGUMENT "), command + " -> " + answer);
      String named = command.contains("ghost") ? "ghost" : "no-such-region";
      assertTrue(answer.contains("'" + named + "'"), command + " -> " + answer);
      assertTrue(ms < 2_000, command + " took " + ms + " ms: " + answer);
    }
  }

  /**
   * The prefill unregisters its published {@code scratch} region: a READ through the segment that
   * still lists it is refused by the source (PERMISSION_DENIED, 0 bytes, destination untouched; the
   * source's {@code sourceRefusals} counts it), then the directory drops it.
   */
  private static void anUnregisteredRegionIsRefusedByTheSource(ClusterScenario s) throws Exception {
    String scratchSeed = Long.toHexString(~s.node(PREFILL).epoch());
    s.ok(DECODE_1, "OPEN " + PREFILL + " sc " + ClusterNode.SCRATCH);
    s.ok(DECODE_1, "READ sc " + scratchSeed + " 30000 1");
    long since = System.currentTimeMillis();
    long refusalsBefore = Long.parseLong(s.ok(PREFILL, "REFUSALS"));
    s.ok(PREFILL, "UNREGISTER " + ClusterNode.SCRATCH);
    String refused = s.ask(DECODE_1, "READ sc " + scratchSeed + " 30000 1");
    long refusalsAfter = Long.parseLong(s.ok(PREFILL, "REFUSALS"));
    System.out.println("CLUSTER-UNREGISTERED READ of the unregistered region: " + refused);
    String[] r = refused.split(" ", 5);
    assertEquals("FAILED", r[0], refused);
    // The source's answer for a region it no longer registers (C1, C2; AuthorityIT).
    assertEquals("PERMISSION_DENIED", r[1], refused);
    assertEquals("0", r[2], refused);
    assertEquals("untouched", r[3], refused);
    assertTrue(r[4].contains("refused by the source"), refused);
    assertTrue(
        refusalsAfter > refusalsBefore,
        "the source counted the refusal: " + refusalsBefore + " -> " + refusalsAfter);
    s.ok(DECODE_1, "CHANGE " + PREFILL + " Updated " + since + " 30000");
    String gone = s.ask(DECODE_1, "REGION " + PREFILL + " " + ClusterNode.SCRATCH);
    assertTrue(gone.startsWith("ERR INVALID_ARGUMENT "), gone);
    // The pool is still served through the same segment.
    s.ok(DECODE_1, "READ old " + s.node(PREFILL).epochHex() + " 30000 1");
  }
}
