package io.orbite.qualification.rdma;

import static io.orbite.qualification.Shell.sh;
import static io.orbite.qualification.Shell.status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The rail circuit (C13) on a real link loss: a requester and a source, each an engine process in a
 * network namespace of its own (neither in the root one), joined by two veth pairs, one per rail
 * (each software device listens on its own link's address). Taking the second link down breaks that
 * rail's wire (its WRs fail retry-exceeded; its port still shows ACTIVE, so only the errors can
 * open the circuit): its pair opens after three errors, and traffic carries on over the first rail,
 * every READ verified in the requester. With the link up again and the cooldown passed, one trial
 * on a repaired QP reopens the pair and the second rail carries payload again.
 */
class RdmaNamespacesIT {
  private static final long REGION = 16L << 20;
  private static final long TASK = 1L << 20;
  private static final int TASKS = 8;

  @Test
  void aRailWhoseLinkGoesDownOpensItsCircuitAfterErrorsAndOneTrialReopensIt(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    long id = ProcessHandle.current().pid() % 100_000;
    String nsA = "orbrA" + id;
    String nsB = "orbrB" + id;
    String one = "10.81." + (20 + id % 200) + ".";
    String two = "10.82." + (20 + id % 200) + ".";
    String linkA2 = "rwa" + id;
    Prerequisite.require(
        status("ip", "netns", "add", nsA) == 0,
        "ip netns is unusable here (it needs root and iproute2: apt-get install iproute2;"
            + " .ci/run and ./orbite test install it as root), so an RDMA rail's link loss cannot"
            + " be tested");
    List<EngineProcess> engines = new ArrayList<>();
    try {
      sh("ip", "netns", "add", nsB);
      String[][] pairs = {{"rva" + id, "rvb" + id, one}, {linkA2, "rwb" + id, two}};
      for (String[] p : pairs) {
        sh("ip", "link", "add", p[0], "type", "veth", "peer", "name", p[1]);
        sh("ip", "link", "set", p[0], "netns", nsA);
        sh("ip", "link", "set", p[1], "netns", nsB);
        sh("ip", "-n", nsA, "addr", "add", p[2] + "1/24", "dev", p[0]);
        sh("ip", "-n", nsB, "addr", "add", p[2] + "2/24", "dev", p[1]);
        sh("ip", "-n", nsA, "link", "set", p[0], "up");
        sh("ip", "-n", nsB, "link", "set", p[1], "up");
      }
      for (String ns : List.of(nsA, nsB)) {
        sh("ip", "-n", ns, "link", "set", "lo", "up");
        String routes = sh("ip", "-n", ns, "route");
        assertFalse(routes.contains("default"), ns + " must have no default route: " + routes);
      }
      EngineProcess source =
          EngineProcess.startWrapped(
              "rail-source", logs, conf(one + "2", two + "2"), List.of("ip", "netns", "exec", nsB));
      engines.add(source);
      EngineProcess requester =
          EngineProcess.startWrapped(
              "rail-requester",
              logs,
              conf(one + "1", two + "1"),
              List.of("ip", "netns", "exec", nsA));
      engines.add(requester);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      long seed = 51;
      source.call("FILL " + remote + " " + seed);
      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      requester.call("OPEN " + source.endpoint());
      String read = "READ " + local + " " + remote + " " + TASK + " " + TASKS + " " + seed;

      assertEquals(Long.toString(TASKS * TASK), requester.call(read), "healthy: every READ");
      Map<String, Long> c0 = counters(requester);
      assertTrue(c0.get("rdmaSoft0Bytes") > 0 && c0.get("rdmaSoft1Bytes") > 0, c0::toString);
      assertEquals(0, c0.get("tcpTasksDispatched"), "UNSPEC chose RDMA");

      sh("ip", "-n", nsA, "link", "set", linkA2, "down");
      assertTrue(
          Await.until(
              Duration.ofSeconds(60),
              () -> {
                ask(requester, read); // some READs fail while the rail's errors accumulate
                return charge(requester, "railPairsOpen") >= 1;
              }),
          () -> "the dead link's pair opened: " + charges(requester));
      assertTrue(charge(requester, "qpsFailed") >= 1, "by errors on the wire");
      long soft1 = counters(requester).get("rdmaSoft1Bytes");
      for (int round = 0; round < 3; round++) {
        assertEquals(
            Long.toString(TASKS * TASK),
            requester.call(read),
            "with the circuit open every READ completes over the other rail, verified");
      }
      assertEquals(soft1, counters(requester).get("rdmaSoft1Bytes"), "nothing over the dead link");

      sh("ip", "-n", nsA, "link", "set", linkA2, "up");
      assertTrue(
          Await.until(
              Duration.ofSeconds(60),
              () -> {
                ask(requester, read);
                return counters(requester).get("rdmaSoft1Bytes") > soft1
                    && charge(requester, "railPairsOpen") == 0;
              }),
          () -> "a trial reopened the pair: " + charges(requester));
      assertTrue(charge(requester, "qpsRepaired") >= 1, "on a repaired QP");
      assertEquals(Long.toString(TASKS * TASK), requester.call(read), "and every READ completes");
    } catch (IOException | AssertionError e) {
      engines.forEach(EngineProcess::close);
      StringBuilder logged = new StringBuilder(String.valueOf(e.getMessage()));
      try (var files = java.nio.file.Files.list(logs)) {
        for (Path f : files.sorted().toList()) {
          logged.append("\n--- ").append(f.getFileName()).append(":\n");
          String text = java.nio.file.Files.readString(f);
          logged.append(text, Math.max(0, text.length() - 4000), text.length());
        }
      }
      throw new AssertionError(logged.toString(), e);
    } finally {
      engines.forEach(EngineProcess::close);
      status("ip", "netns", "del", nsA);
      status("ip", "netns", "del", nsB);
    }
  }

  /**
   * An engine listening on {@code first}, its two soft devices on {@code first} and {@code second}.
   */
  private static Map<String, String> conf(String first, String second) {
    return Map.of(
        "ORBITE_CONF",
        "{\"listen\":{\"host\":\""
            + first
            + "\"},\"rdma\":{\"enabled\":true,\"softwareDevices\":2,\"lanes\":2,"
            + "\"softwareAddresses\":[\""
            + first
            + "\",\""
            + second
            + "\"],\"railCooldownMillis\":2000,\"railProbeIntervalMillis\":0}}");
  }

  private static String ask(EngineProcess p, String command) {
    try {
      return p.ask(command, List.of());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static long charge(EngineProcess p, String name) {
    String answer = ask(p, "CHARGE RdmaTransport " + name);
    assertTrue(answer.startsWith("OK "), answer);
    return Long.parseLong(answer.substring(3).trim());
  }

  private static String charges(EngineProcess p) {
    return "railPairsOpen="
        + charge(p, "railPairsOpen")
        + " qpsFailed="
        + charge(p, "qpsFailed")
        + " qpsRepaired="
        + charge(p, "qpsRepaired")
        + " "
        + counters(p);
  }

  private static Map<String, Long> counters(EngineProcess p) {
    Map<String, Long> out = new HashMap<>();
    String answer = ask(p, "COUNTERS");
    for (String kv : answer.substring(3).trim().split("\\s+")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }
}
