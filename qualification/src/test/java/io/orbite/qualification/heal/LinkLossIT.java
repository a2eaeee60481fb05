package io.orbite.qualification.heal;

import static io.orbite.qualification.Shell.sh;
import static io.orbite.qualification.Shell.status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.security.TlsFiles;
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
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A real link loss between two hosts (issue 38): requester and source each in a network namespace
 * of their own, joined by a veth pair; the requester's end of the link is taken down with the
 * segment open and no task running. Its lanes miss their keepalives and are lost; with the link up
 * again they reconnect to the same incarnation, and READs and WRITEs through the segment opened
 * before the loss complete, both whole regions (payload and guards) checked. Run twice: with the
 * two engines sharing a secret, and with every connection under mutual TLS (issue 42), so that TLS
 * runs between two hosts and the lanes the healing reopens open TLS again.
 */
class LinkLossIT {
  /** How the two engines authenticate each other: a shared secret, or mutual TLS. */
  enum Credentials {
    SECRET,
    TLS
  }

  @TempDir static Path tlsDir;
  private static TlsFiles ca;

  private static final long TASK = 256 * 1024 + 3;
  private static final int TASKS = 8;
  private static final long REGION = TASK * TASKS + 8192;

  @ParameterizedTest
  @EnumSource(Credentials.class)
  void lanesLostWithTheLinkReconnectWhenItComesBackAndTheSameSegmentWorks(
      Credentials credentials, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs)
      throws Exception {
    long id = ProcessHandle.current().pid() % 100_000;
    String nsA = "orbhA" + id;
    String nsB = "orbhB" + id;
    String net = "10.84." + (20 + id % 200) + ".";
    String linkA = "hla" + id;
    Prerequisite.require(
        status("ip", "netns", "add", nsA) == 0,
        "ip netns is unusable here (it needs root and iproute2: apt-get install iproute2;"
            + " .ci/run and ./orbite test install it as root), so a link loss cannot be tested");
    List<EngineProcess> engines = new ArrayList<>();
    try {
      sh("ip", "netns", "add", nsB);
      sh("ip", "link", "add", linkA, "type", "veth", "peer", "name", "hlb" + id);
      sh("ip", "link", "set", linkA, "netns", nsA);
      sh("ip", "link", "set", "hlb" + id, "netns", nsB);
      sh("ip", "-n", nsA, "addr", "add", net + "1/24", "dev", linkA);
      sh("ip", "-n", nsB, "addr", "add", net + "2/24", "dev", "hlb" + id);
      sh("ip", "-n", nsA, "link", "set", linkA, "up");
      sh("ip", "-n", nsB, "link", "set", "hlb" + id, "up");
      for (String ns : List.of(nsA, nsB)) {
        sh("ip", "-n", ns, "link", "set", "lo", "up");
        String routes = sh("ip", "-n", ns, "route");
        assertFalse(routes.contains("default"), ns + " must have no default route: " + routes);
      }
      EngineProcess source =
          EngineProcess.startWrapped(
              "link-source",
              logs,
              conf(net + "2", "link-source", credentials),
              List.of("ip", "netns", "exec", nsB));
      engines.add(source);
      EngineProcess requester =
          EngineProcess.startWrapped(
              "link-requester",
              logs,
              conf(net + "1", "link-requester", credentials),
              List.of("ip", "netns", "exec", nsA));
      engines.add(requester);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      requester.call("OPEN " + source.endpoint());
      round(source, requester, remote, local, 1);

      sh("ip", "-n", nsA, "link", "set", linkA, "down");
      assertTrue(
          Await.until(Duration.ofSeconds(15), () -> counters(requester).get("lanesLost") >= 2),
          () -> "both lanes lost with the link: " + counters(requester));
      assertTrue(counters(requester).get("keepaliveMisses") >= 1, () -> "" + counters(requester));

      sh("ip", "-n", nsA, "link", "set", linkA, "up");
      assertTrue(
          Await.until(Duration.ofSeconds(30), () -> counters(requester).get("lanesRestored") >= 2),
          () -> "both lanes back with the link: " + counters(requester));
      round(source, requester, remote, local, 2);
      assertEquals(0, counters(requester).get("peersFenced"), "the same incarnation answered");
      assertEquals(0, counters(source).get("peersRefused"), "every connection authenticated");
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

  /** A READ round and a WRITE round through the segment opened first, both regions checked. */
  private static void round(
      EngineProcess source, EngineProcess requester, long remote, long local, long seed)
      throws IOException {
    long data = seed * 10;
    long guard = seed * 10 + 1;
    source.call("FILL " + remote + " " + data);
    requester.call("FILL " + local + " " + guard);
    assertEquals(
        Long.toString(TASKS * TASK),
        requester.call("READ " + local + " " + remote + " " + TASK + " " + TASKS + " " + data));
    assertEquals(
        "OK",
        requester.ask(
            "VERIFY " + local + " " + guard + " 1",
            List.of("0 " + TASKS * TASK + " " + data + " 0")),
        "requester after READ: payload and guard");
    assertEquals("OK", source.ask("VERIFY " + remote + " " + data + " 0", List.of()));

    long written = seed * 10 + 2;
    requester.call("FILL " + local + " " + written);
    source.call("FILL " + remote + " " + guard);
    assertEquals(
        Long.toString(TASKS * TASK),
        requester.call(
            "XFER WRITE TCP "
                + local
                + " "
                + TASKS
                + " "
                + TASK
                + " "
                + TASK
                + " 0 "
                + remote
                + " 0"));
    List<String> spans = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      spans.add(i * TASK + " " + TASK + " " + written + " " + i * TASK);
    }
    assertEquals(
        "OK",
        source.ask("VERIFY " + remote + " " + guard + " " + TASKS, spans),
        "source after WRITE: payload and guards");
  }

  /**
   * An engine named {@code name} listening on {@code host}, a routable address: the two engines
   * share a secret, or hold certificates from one authority, so every lane (and every lane the
   * healing reopens) opens with the authentication handshake, under TLS in the second case.
   */
  private static Map<String, String> conf(String host, String name, Credentials credentials)
      throws IOException {
    String base =
        "\"listen\":{\"host\":\""
            + host
            + "\"},\"tcp\":{\"keepaliveIntervalMillis\":200,\"livenessTimeoutMillis\":1000}";
    if (credentials == Credentials.SECRET) {
      return Map.of(
          "ORBITE_SECRET", "link-loss-shared-secret-0123456789", "ORBITE_CONF", "{" + base + "}");
    }
    synchronized (LinkLossIT.class) {
      if (ca == null) {
        ca = TlsFiles.authority(tlsDir, 2);
      }
      if (!java.nio.file.Files.exists(tlsDir.resolve(name + ".p12"))) {
        ca.issue(name, 0, 2);
      }
    }
    return Map.of(
        "ORBITE_CONF",
        "{"
            + base
            + ",\"security\":{\"tlsKeyStore\":\""
            + tlsDir.resolve(name + ".p12")
            + "\",\"tlsTrustStore\":\""
            + ca.trustStore()
            + "\",\"tlsPasswordFile\":\""
            + ca.passwordFile()
            + "\"}}");
  }

  private static Map<String, Long> counters(EngineProcess p) {
    Map<String, Long> out = new HashMap<>();
    String answer;
    try {
      answer = p.ask("COUNTERS", List.of());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    for (String kv : answer.substring(3).trim().split("\\s+")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }
}
