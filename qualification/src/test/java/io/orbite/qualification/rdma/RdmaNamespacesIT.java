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
 * open the circuit): its pair opens after three errors, and traffic carries on over the first rail.
 * With the link up again and the cooldown passed, one trial on a repaired QP reopens the pair and
 * the second rail carries payload again.
 *
 * <p>Every round of UNSPEC READs starts from a fresh source pattern (a seed of its own) and the
 * stale pattern in the requester, and every READ's answer is asserted, also while the circuit is
 * closing and reopening: completed with its bytes (over RDMA, or failed over to TCP and saying so),
 * or failed {@code PEER_LOST}/{@code UNAVAILABLE}, 0 bytes, {@code NONE}, drained; the requester's
 * whole region is checked byte for byte (completed ranges fresh, failed ones stale or fresh, guards
 * stale) and the source's unchanged. TCP's dispatch counter grows only by the READs whose answer
 * says they failed over; with the circuit open, the surviving rail's engine count and the
 * provider's own count grow by exactly the payload, the dead rail's by nothing.
 */
class RdmaNamespacesIT {
  private static final long TASK = 1L << 20;
  private static final int TASKS = 8;

  /** Each READ's range starts at an odd offset and has guard bytes on both sides. */
  private static final long BASE = 4099;

  private static final long STRIDE = TASK + 4099;
  private static final long REGION = BASE + STRIDE * TASKS + 8192;

  /**
   * The open pair's cooldown: long enough that the rounds with the circuit open end before its one
   * trial is admitted (a trial on the dead link fails, and its READ fails over to TCP).
   */
  private static final long COOLDOWN_MILLIS = 12_000;

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
      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      requester.call("OPEN " + source.endpoint());
      Rounds rounds = new Rounds(source, requester, remote, local);

      Tally healthy = rounds.strict("healthy");
      assertTrue(
          healthy.soft0() > 0 && healthy.soft1() > 0, "both rails carry payload: " + healthy);
      assertEquals(TASKS * TASK, healthy.soft0() + healthy.soft1(), "the rails are the payload");

      sh("ip", "-n", nsA, "link", "set", linkA2, "down");
      Tally failing = new Tally();
      assertTrue(
          Await.until(
              Duration.ofSeconds(60),
              () -> {
                // Some READs fail while the rail's errors accumulate: each answer is checked.
                failing.add(rounds.any("link down, circuit closing"));
                return charge(requester, "RdmaTransport", "railPairsOpen") >= 1;
              }),
          () -> "the dead link's pair opened: " + charges(requester));
      long openedNanos = System.nanoTime();
      assertEquals(
          failing.failedOver(),
          failing.tcpDispatched(),
          () -> "TCP carried only the READs whose answer says they failed over: " + failing);
      assertEquals(failing.failedOver(), failing.failovers(), failing::toString);
      assertTrue(charge(requester, "RdmaTransport", "qpsFailed") >= 1, "by errors on the wire");
      for (int round = 0; round < 3; round++) {
        long openMillis = (System.nanoTime() - openedNanos) / 1_000_000;
        assertTrue(
            openMillis < COOLDOWN_MILLIS - 3_000,
            () ->
                "the rounds with the circuit open must end before its trial; open for "
                    + openMillis
                    + " ms");
        Tally open = rounds.strict("circuit open");
        assertEquals(0, open.soft1(), () -> "nothing over the dead link: " + open);
        assertEquals(
            TASKS * TASK, open.soft0(), () -> "every byte over the surviving rail: " + open);
      }

      sh("ip", "-n", nsA, "link", "set", linkA2, "up");
      Tally recovering = new Tally();
      assertTrue(
          Await.until(
              Duration.ofSeconds(60),
              () -> {
                recovering.add(rounds.any("link up, circuit reopening"));
                return recovering.soft1() > 0
                    && charge(requester, "RdmaTransport", "railPairsOpen") == 0;
              }),
          () -> "a trial reopened the pair: " + charges(requester) + " " + recovering);
      assertEquals(recovering.failedOver(), recovering.tcpDispatched(), recovering::toString);
      assertTrue(charge(requester, "RdmaTransport", "qpsRepaired") >= 1, "on a repaired QP");
      Tally healed = rounds.strict("healed");
      assertEquals(TASKS * TASK, healed.soft0() + healed.soft1(), healed::toString);
    } catch (IOException | AssertionError | IllegalStateException e) {
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
   * An engine listening on {@code first}, its two soft devices on {@code first} and {@code second};
   * a routable listener, so the engines share a secret and the RDMA control connection opens with
   * the authentication handshake.
   */
  private static Map<String, String> conf(String first, String second) {
    return Map.of(
        "ORBITE_SECRET",
        "rdma-namespaces-shared-secret-0123",
        "ORBITE_CONF",
        "{\"listen\":{\"host\":\""
            + first
            + "\"},\"rdma\":{\"enabled\":true,\"softwareDevices\":2,\"lanes\":2,"
            + "\"softwareAddresses\":[\""
            + first
            + "\",\""
            + second
            + "\"],\"railCooldownMillis\":"
            + COOLDOWN_MILLIS
            + ",\"railProbeIntervalMillis\":0}}");
  }

  private static String ask(EngineProcess p, String command) {
    try {
      return p.ask(command, List.of());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static long charge(EngineProcess p, String kind, String name) {
    String answer = ask(p, "CHARGE " + kind + " " + name);
    assertTrue(answer.startsWith("OK "), answer);
    return Long.parseLong(answer.substring(3).trim());
  }

  private static String charges(EngineProcess p) {
    return "railPairsOpen="
        + charge(p, "RdmaTransport", "railPairsOpen")
        + " qpsFailed="
        + charge(p, "RdmaTransport", "qpsFailed")
        + " qpsRepaired="
        + charge(p, "RdmaTransport", "qpsRepaired")
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

  private static long payload(EngineProcess p, String device) {
    try {
      return Long.parseLong(p.call("PAYLOAD " + device));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** One task's answer from the child's {@code XFERALL}. */
  private record Answer(
      String state,
      String kind,
      long bytes,
      String transport,
      String route,
      String effect,
      boolean drained,
      int attempts) {
    static Answer parse(String word) {
      String[] f = word.split("/");
      assertEquals(8, f.length, word);
      return new Answer(
          f[0],
          f[1],
          Long.parseLong(f[2]),
          f[3],
          f[4],
          f[5],
          Boolean.parseBoolean(f[6]),
          Integer.parseInt(f[7]));
    }

    boolean completed() {
      return state.equals("COMPLETED");
    }

    boolean failedOver() {
      return transport.equals("TCP") && route.equals("FAILED_OVER") && attempts == 2;
    }

    /**
     * What any READ of this test may answer: COMPLETED with all its bytes, over RDMA or failed over
     * to TCP (then saying so); or FAILED as the wire's loss fails a slice (PEER_LOST, or
     * UNAVAILABLE for a slice its retired QP held), 0 bytes, NONE, drained. Every answer is drained
     * and a READ never changes the source.
     */
    void assertSound(String where) {
      assertEquals("NONE", effect, where);
      assertTrue(drained, where);
      assertTrue(transport.equals("RDMA") && attempts == 1 || failedOver(), where);
      if (completed()) {
        assertEquals("-", kind, where);
        assertEquals(TASK, bytes, where);
      } else {
        assertEquals("FAILED", state, where);
        assertTrue(kind.equals("PEER_LOST") || kind.equals("UNAVAILABLE"), where);
        assertEquals(0, bytes, where);
      }
    }
  }

  /** What rounds moved, from both engines' answers and the requester's counters. */
  private static final class Tally {
    private long soft0;
    private long soft1;
    private long provider0;
    private long provider1;
    private long tcpDispatched;
    private long rdmaDispatched;
    private long failovers;
    private long failedOver;
    private long completedOverRdma;
    private long failed;

    long soft0() {
      return soft0;
    }

    long soft1() {
      return soft1;
    }

    long tcpDispatched() {
      return tcpDispatched;
    }

    long failovers() {
      return failovers;
    }

    long failedOver() {
      return failedOver;
    }

    void add(Tally t) {
      soft0 += t.soft0;
      soft1 += t.soft1;
      provider0 += t.provider0;
      provider1 += t.provider1;
      tcpDispatched += t.tcpDispatched;
      rdmaDispatched += t.rdmaDispatched;
      failovers += t.failovers;
      failedOver += t.failedOver;
      completedOverRdma += t.completedOverRdma;
      failed += t.failed;
    }

    @Override
    public String toString() {
      return "rails "
          + soft0
          + "/"
          + soft1
          + " B, provider "
          + provider0
          + "/"
          + provider1
          + " B, dispatched TCP "
          + tcpDispatched
          + " RDMA "
          + rdmaDispatched
          + ", failovers "
          + failovers
          + ", answers: "
          + completedOverRdma
          + " completed over RDMA, "
          + failedOver
          + " failed over to TCP, "
          + failed
          + " failed";
    }
  }

  /**
   * Rounds of {@link #TASKS} UNSPEC READs of {@link #TASK} bytes from the requester process, each
   * after a fresh pattern (its own seed) was put in the source region and a stale one in the
   * requester's: every task's answer is checked, the requester's whole region byte for byte
   * (completed ranges fresh, failed ones stale or fresh, guards stale), the source's unchanged, and
   * the requester's counters (engine and provider) read before and after: each rail's engine count
   * equal to the provider's own, TCP's dispatch count grown by exactly the READs that say they
   * failed over.
   */
  private static final class Rounds {
    private final EngineProcess source;
    private final EngineProcess requester;
    private final long remote;
    private final long local;
    private int round;

    Rounds(EngineProcess source, EngineProcess requester, long remote, long local) {
      this.source = source;
      this.requester = requester;
      this.remote = remote;
      this.local = local;
    }

    /**
     * A round every READ of which must complete over RDMA on its first attempt, with nothing
     * dispatched to TCP and the rails' counts adding up to the payload.
     */
    Tally strict(String phase) {
      Tally t = run(phase, true);
      assertEquals(0, t.tcpDispatched, () -> phase + ": nothing over TCP: " + t);
      assertEquals(TASKS * TASK, t.soft0 + t.soft1, () -> phase + ": the rails moved it: " + t);
      return t;
    }

    /** A round whose READs may fail or fail over, each answer sound and the bytes as it says. */
    Tally any(String phase) {
      return run(phase, false);
    }

    private Tally run(String phase, boolean strict) {
      round++;
      long fresh = 0x5eed_0000L + 2L * round;
      long stale = fresh + 1;
      try {
        source.call("FILL " + remote + " " + fresh);
        requester.call("FILL " + local + " " + stale);
        Map<String, Long> before = counters(requester);
        long p0 = payload(requester, "soft0");
        long p1 = payload(requester, "soft1");
        String answer =
            requester.call(
                "XFERALL READ UNSPEC "
                    + local
                    + " "
                    + TASKS
                    + " "
                    + TASK
                    + " "
                    + STRIDE
                    + " "
                    + BASE
                    + " "
                    + remote
                    + " "
                    + BASE);
        Map<String, Long> after = counters(requester);
        Tally t = new Tally();
        t.soft0 = after.get("rdmaSoft0Bytes") - before.get("rdmaSoft0Bytes");
        t.soft1 = after.get("rdmaSoft1Bytes") - before.get("rdmaSoft1Bytes");
        t.provider0 = payload(requester, "soft0") - p0;
        t.provider1 = payload(requester, "soft1") - p1;
        t.tcpDispatched = after.get("tcpTasksDispatched") - before.get("tcpTasksDispatched");
        t.rdmaDispatched = after.get("rdmaTasksDispatched") - before.get("rdmaTasksDispatched");
        t.failovers = after.get("transportFailovers") - before.get("transportFailovers");
        String[] words = answer.split(" ");
        assertEquals(TASKS, words.length, () -> phase + ": one answer per READ: " + answer);
        List<String> ranges = new ArrayList<>();
        for (int i = 0; i < TASKS; i++) {
          Answer a = Answer.parse(words[i]);
          String where = phase + ", round " + round + ", READ " + i + ": " + words[i];
          a.assertSound(where);
          if (strict) {
            assertTrue(a.completed() && a.transport().equals("RDMA"), where);
            assertEquals("RDMA_HEALTHY_RAIL", a.route(), where);
          }
          if (a.failedOver()) {
            t.failedOver++;
          } else if (a.completed()) {
            t.completedOverRdma++;
          } else {
            t.failed++;
          }
          ranges.add((BASE + i * STRIDE) + " " + TASK + " " + (a.completed() ? 1 : 0));
        }
        String where = phase + ", round " + round + " (" + answer + ")";
        assertEquals(
            "OK",
            requester.ask("READS " + local + " " + stale + " " + fresh + " " + TASKS, ranges),
            () -> where + ": the requester's whole region, READs and guards");
        assertEquals(
            "OK",
            source.ask("VERIFY " + remote + " " + fresh + " 0", List.of()),
            () -> where + ": the source's region unchanged");
        assertEquals(TASKS, t.rdmaDispatched, () -> where + ": UNSPEC chose RDMA for each: " + t);
        assertEquals(t.failedOver, t.tcpDispatched, () -> where + ": TCP only on failover: " + t);
        assertEquals(t.failedOver, t.failovers, () -> where + ": " + t);
        // The engine counts a slice's bytes on its rail once confirmed; the provider counts what
        // its
        // wire moved. The links change only between rounds, so the two agree in every round.
        assertEquals(t.soft0, t.provider0, () -> where + ": soft0, engine and provider: " + t);
        assertEquals(t.soft1, t.provider1, () -> where + ": soft1, engine and provider: " + t);
        assertTrue(
            t.soft0 + t.soft1 >= t.completedOverRdma * TASK,
            () -> where + ": the rails carried every READ that completed over RDMA: " + t);
        return t;
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
