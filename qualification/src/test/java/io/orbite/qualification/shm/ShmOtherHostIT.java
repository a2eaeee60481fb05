package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.qualification.harness.EngineProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transport selection for UNSPEC across emulated hosts (../shared/notes/network-namespaces.md).
 * Every engine runs in a network namespace of its own, joined by a veth pair; none in the root
 * namespace. A source that also has its own UTS and PID namespaces is another host (other host
 * name, its own /proc): the requester must reach it over TCP, its exports unprovable. A source that
 * is only in another network namespace shares the kernel, the host name and the PID space: it is
 * the same host, and the requester must use SHM. Bytes are checked in full on both sides, and the
 * choice is proven by the per-transport counters. Skipped, saying why, where {@code ip netns} is
 * unusable (not root).
 */
class ShmOtherHostIT {
  private static final String SECRET = "shm-other-host-shared-secret-0123";

  private static final long REGION = 16L << 20;
  private static final long TASK = 1L << 20;
  private static final int TASKS = 8;

  @Test
  void unspecUsesTcpToAnEmulatedOtherHostAndShmToASameHostPeerInAnotherNetworkNamespace(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    long id = ProcessHandle.current().pid() % 100_000;
    String nsA = "orbA" + id;
    String nsB = "orbB" + id;
    String subnet = "10.77." + (20 + id % 200) + ".";
    Prerequisite.require(
        netnsUsable(nsA),
        "ip netns is unusable here (it needs root and iproute2: apt-get install "
            + "iproute2; .ci/run and ./orbite test install it as root), so SHM/TCP selection against an emulated other host "
            + "cannot be tested");
    List<EngineProcess> engines = new ArrayList<>();
    try {
      sh("ip", "netns", "add", nsB);
      sh("ip", "link", "add", "va" + id, "type", "veth", "peer", "name", "vb" + id);
      sh("ip", "link", "set", "va" + id, "netns", nsA);
      sh("ip", "link", "set", "vb" + id, "netns", nsB);
      sh("ip", "-n", nsA, "addr", "add", subnet + "1/24", "dev", "va" + id);
      sh("ip", "-n", nsB, "addr", "add", subnet + "2/24", "dev", "vb" + id);
      for (String[] l :
          new String[][] {{nsA, "va" + id}, {nsB, "vb" + id}, {nsA, "lo"}, {nsB, "lo"}}) {
        sh("ip", "-n", l[0], "link", "set", l[1], "up");
      }
      for (String ns : List.of(nsA, nsB)) {
        String routes = sh("ip", "-n", ns, "route");
        assertFalse(routes.contains("default"), ns + " must have no default route: " + routes);
      }

      // Routable listeners: the engines share a secret (the fail-safe bind refuses them without).
      String sourceConf = "{\"listen\":{\"host\":\"" + subnet + "2\"},\"shm\":{\"enabled\":true}}";
      EngineProcess otherHost =
          EngineProcess.startWrapped(
              "other-host-source",
              logs,
              Map.of("ORBITE_SECRET", SECRET, "ORBITE_CONF", sourceConf),
              List.of(
                  "ip",
                  "netns",
                  "exec",
                  nsB,
                  "unshare",
                  "--uts",
                  "--pid",
                  "--fork",
                  "--kill-child",
                  "--mount-proc",
                  "sh",
                  "-c",
                  "hostname orbite-host-b && exec \"$0\" \"$@\""));
      engines.add(otherHost);
      EngineProcess sameHost =
          EngineProcess.startWrapped(
              "same-host-source",
              logs,
              Map.of("ORBITE_SECRET", SECRET, "ORBITE_CONF", sourceConf),
              List.of("ip", "netns", "exec", nsB));
      engines.add(sameHost);
      EngineProcess requester =
          EngineProcess.startWrapped(
              "requester",
              logs,
              Map.of(
                  "ORBITE_SECRET",
                  SECRET,
                  "ORBITE_CONF",
                  "{\"listen\":{\"host\":\"" + subnet + "1\"}}"),
              List.of("ip", "netns", "exec", nsA));
      engines.add(requester);

      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      long otherRegion = Long.parseLong(otherHost.call("ALLOC " + REGION + " READ_WRITE"));
      long sameRegion = Long.parseLong(sameHost.call("ALLOC " + REGION + " READ_WRITE"));
      otherHost.call("FILL " + otherRegion + " 31");
      sameHost.call("FILL " + sameRegion + " 32");

      Map<String, Long> c0 = ShmPeer.counters(requester);
      readAndCheck(requester, local, otherHost, otherRegion, 31, 33);
      Map<String, Long> c1 = ShmPeer.counters(requester);
      assertEquals(
          TASKS,
          c1.get("tcpTasksDispatched") - c0.get("tcpTasksDispatched"),
          "the other host: over TCP");
      assertEquals(
          0, c1.get("shmTasksDispatched") - c0.get("shmTasksDispatched"), "and not over SHM");
      assertEquals(
          1, c1.get("shmOpensRefused") - c0.get("shmOpensRefused"), "its exports were refused");
      assertEquals(
          TASKS * TASK,
          ShmPeer.counters(otherHost).get("sourceBytesRead"),
          "its TCP lanes served the READs");

      readAndCheck(requester, local, sameHost, sameRegion, 32, 34);
      Map<String, Long> c2 = ShmPeer.counters(requester);
      assertEquals(
          TASKS,
          c2.get("shmTasksDispatched") - c1.get("shmTasksDispatched"),
          "the same host: over SHM");
      assertEquals(
          0, c2.get("tcpTasksDispatched") - c1.get("tcpTasksDispatched"), "and not over TCP");
      assertEquals(TASKS * TASK, c2.get("shmBytesRead") - c1.get("shmBytesRead"));
      assertEquals(
          0, ShmPeer.counters(sameHost).get("sourceBytesRead"), "its TCP lanes served nothing");
    } catch (IOException | AssertionError e) {
      // Seen twice in full-suite runs: an OPEN with no answer in 30 s. Say what the engines logged
      // (on a TIMEOUT the requester logs its owners), since the CI machine keeps no files.
      engines.forEach(EngineProcess::close);
      StringBuilder logged = new StringBuilder(String.valueOf(e.getMessage()));
      try (var files = java.nio.file.Files.list(logs)) {
        for (Path f : files.sorted().toList()) {
          logged.append("\n--- ").append(f.getFileName()).append(":\n");
          logged.append(java.nio.file.Files.readString(f));
        }
      }
      throw new AssertionError(logged.toString(), e);
    } finally {
      engines.forEach(EngineProcess::close);
      run("ip", "netns", "del", nsA);
      run("ip", "netns", "del", nsB);
    }
  }

  /**
   * UNSPEC READs of the whole first 8 MiB; the requester checks payload and guards, the source its
   * region.
   */
  private static void readAndCheck(
      EngineProcess requester, long local, EngineProcess source, long remote, long seed, long guard)
      throws IOException {
    requester.call("FILL " + local + " " + guard);
    requester.call("OPEN " + source.endpoint());
    String read =
        requester.call("READ " + local + " " + remote + " " + TASK + " " + TASKS + " " + seed);
    assertEquals(Long.toString(TASKS * TASK), read, "every READ completed with its bytes");
    ShmPeer.assertRemoteRegion(
        requester,
        local,
        guard,
        List.of(new io.orbite.qualification.verify.Span(0, TASKS * TASK, seed, 0)),
        "requester: payload and guards");
    ShmPeer.assertRemoteRegion(source, remote, seed, List.of(), "source region untouched");
  }

  /**
   * Whether network namespaces can be created here (probed by adding {@code ns}, kept for the
   * test).
   */
  private static boolean netnsUsable(String ns) {
    try {
      return runStatus("ip", "netns", "add", ns) == 0;
    } catch (IOException | InterruptedException e) {
      return false;
    }
  }

  private static String sh(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "timed out: " + String.join(" ", cmd));
    assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
    return out;
  }

  private static void run(String... cmd) {
    try {
      runStatus(cmd);
    } catch (IOException | InterruptedException e) {
      // Cleanup: nothing else to do.
    }
  }

  private static int runStatus(String... cmd) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }
}
