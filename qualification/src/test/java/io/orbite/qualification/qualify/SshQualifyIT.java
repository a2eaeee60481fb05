package io.orbite.qualification.qualify;

import static io.orbite.qualification.Shell.sh;
import static io.orbite.qualification.Shell.status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.qualification.Await;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.EngineProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ssh launcher against real {@code sshd}s: two network namespaces joined by a veth pair, each
 * running an sshd of this test's own (its own host key, config and authorized key, port 2222), and
 * {@code ./orbite qualify --launcher ssh} itself run inside the first namespace, so that nothing of
 * the test has an address in the machine's root namespace. The profile pins each host by address,
 * host key (a known-hosts file, strict checking), hostname and boot id; the peers start over ssh,
 * their environment and the run's secret travel as documented, a source is SIGKILLed over ssh and
 * its wrapper reports 137, and the independent verifier passes the run. A host whose boot id is not
 * the profile's is refused before anything runs there, and so is a host whose key is not in the
 * known-hosts file.
 *
 * <p>Both namespaces are the same machine (same hostname, same boot id): this proves the launcher
 * and its identity checks, not two physical hosts (docs/qualification.md labels that unqualified).
 */
class SshQualifyIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int PORT = 2222;

  @TempDir static Path dir;
  private static final List<Process> sshds = new ArrayList<>();
  private static String nsA;
  private static String nsB;
  private static String net;
  private static String hostname;
  private static String bootId;

  @BeforeAll
  static void twoHostsWithSshd() throws Exception {
    QualifyIT.requireNetns();
    Prerequisite.require(
        Files.isExecutable(Path.of("/usr/sbin/sshd")) && status("ssh", "-V") == 0,
        "sshd or ssh not found (apt-get install openssh-server openssh-client; .ci/run and"
            + " ./orbite test install them as root)");
    long id = ProcessHandle.current().pid() % 100_000;
    nsA = "orbsA" + id;
    nsB = "orbsB" + id;
    net = "10.87." + (id % 250) + ".";
    String va = "osa" + id;
    String vb = "osb" + id;
    sh("ip", "netns", "add", nsA);
    sh("ip", "netns", "add", nsB);
    sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb);
    sh("ip", "link", "set", va, "netns", nsA);
    sh("ip", "link", "set", vb, "netns", nsB);
    sh("ip", "-n", nsA, "addr", "add", net + "1/24", "dev", va);
    sh("ip", "-n", nsB, "addr", "add", net + "2/24", "dev", vb);
    for (String[] h : List.of(new String[] {nsA, va}, new String[] {nsB, vb})) {
      sh("ip", "-n", h[0], "link", "set", h[1], "up");
      sh("ip", "-n", h[0], "link", "set", "lo", "up");
      assertFalse(
          sh("ip", "-n", h[0], "route").contains("default"), h[0] + " has no default route");
    }
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", dir.resolve("hostkey").toString());
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", dir.resolve("id").toString());
    Files.copy(dir.resolve("id.pub"), dir.resolve("authorized_keys"));
    // sshd's privilege separation directory (the package's service would make it).
    Files.createDirectories(Path.of("/run/sshd"));
    String hostKey = Files.readString(dir.resolve("hostkey.pub")).trim().split("\\s+", 3)[1];
    StringBuilder known = new StringBuilder();
    for (int i = 1; i <= 2; i++) {
      String ns = i == 1 ? nsA : nsB;
      Path config = dir.resolve("sshd-" + i + ".conf");
      Files.writeString(
          config,
          String.join(
              "\n",
              "Port " + PORT,
              "ListenAddress " + net + i,
              "HostKey " + dir.resolve("hostkey"),
              "PidFile " + dir.resolve("sshd-" + i + ".pid"),
              "AuthorizedKeysFile " + dir.resolve("authorized_keys"),
              "PermitRootLogin prohibit-password",
              "PasswordAuthentication no",
              "KbdInteractiveAuthentication no",
              "UsePAM no",
              "StrictModes no",
              ""));
      sshds.add(
          new ProcessBuilder(
                  "ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f", config.toString())
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("sshd-" + i + ".log").toFile())
              .start());
      known
          .append("[")
          .append(net)
          .append(i)
          .append("]:")
          .append(PORT)
          .append(" ssh-ed25519 ")
          .append(hostKey)
          .append("\n");
      int host = i;
      assertTrue(
          Await.until(
              Duration.ofSeconds(15),
              () -> {
                try {
                  return sh("ip", "netns", "exec", ns, "ss", "-ltn")
                      .contains(net + host + ":" + PORT);
                } catch (Exception e) {
                  return false;
                }
              }),
          "sshd " + i + " listens");
    }
    Files.writeString(dir.resolve("known_hosts"), known.toString());
    hostname = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
    bootId = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
  }

  @AfterAll
  static void tearDown() {
    for (Process p : sshds) {
      p.destroyForcibly();
    }
    if (nsA != null) {
      status("ip", "netns", "del", nsA);
      status("ip", "netns", "del", nsB);
    }
  }

  /** A profile of two ssh hosts, a (the requester's) and b (the source's). */
  private static ObjectNode profile(String bBootId, Path knownHosts) {
    ObjectNode root = JSON.createObjectNode();
    root.put("profile", "ssh");
    root.put("launcher", "ssh");
    ObjectNode hosts = root.putObject("hosts");
    for (int i = 1; i <= 2; i++) {
      ObjectNode ssh = hosts.putObject(i == 1 ? "a" : "b").putObject("ssh");
      ssh.put("address", net + i);
      ssh.put("port", PORT);
      ssh.put("user", "root");
      ssh.put("identityFile", dir.resolve("id").toString());
      ssh.put("knownHosts", knownHosts.toString());
      ssh.put("hostname", hostname);
      ssh.put("bootId", i == 2 ? bBootId : bootId);
      ssh.put("remoteJava", EngineProcess.javaBinary());
      ssh.put("remoteClassPath", EngineProcess.classPath());
    }
    ArrayNode cases = root.putArray("cases");
    cases
        .addObject()
        .put("name", "tcp-read")
        .put("transport", "tcp")
        .put("operation", "read")
        .put("mode", "healthy")
        .put("parents", 4)
        .put("payload", 1048579);
    cases
        .addObject()
        .put("name", "tcp-source-restart")
        .put("transport", "tcp")
        .put("operation", "write")
        .put("mode", "restart")
        .put("faultRole", "source")
        .put("generations", 2)
        .put("rounds", 2)
        .put("parents", 3)
        .put("payload", 300007);
    return root;
  }

  /** Runs {@code ./orbite qualify} (the CLI's main) inside namespace A; returns its exit status. */
  private static int qualify(ObjectNode profile, Path out) throws Exception {
    Path file = Files.createTempFile(dir, "profile", ".json");
    Files.writeString(file, profile.toString());
    List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", nsA));
    cmd.addAll(
        EngineProcess.javaCommand(
            EngineProcess.classPath(),
            "io.orbite.qualification.cli.OrbiteCli",
            List.of("qualify", "--profile", file.toString(), "--output", out.toString())));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "qualify ended");
    System.err.println(output);
    return p.exitValue();
  }

  @Test
  void aProfileRunsOverSshAndTheVerifierPassesIt() throws Exception {
    Path out = dir.resolve("run");
    assertEquals(ExitCodes.PASS, qualify(profile(bootId, dir.resolve("known_hosts")), out));
    JsonNode verdict = JSON.readTree(Files.readString(out.resolve("verdict.json")));
    assertTrue(verdict.path("pass").asBoolean(), verdict::toString);
    List<JsonNode> ledger = QualifyIT.lines(out.resolve("tcp-source-restart/supervisor.jsonl"));
    JsonNode killed =
        ledger.stream()
            .filter(
                n ->
                    n.path("type").asText().equals("exit")
                        && n.path("generation").asInt() == 1
                        && n.path("role").asText().equals("source"))
            .findFirst()
            .orElseThrow();
    assertEquals(137, killed.path("status").asInt(), "the wrapper on the host saw the SIGKILL");
    for (JsonNode n : ledger) {
      if (n.path("type").asText().equals("spawn")) {
        assertFalse(ProcessHandle.of(n.path("pid").asLong()).isPresent(), n + " is gone");
        String key = n.path("role").asText() + "-g" + n.path("generation").asInt();
        JsonNode start =
            QualifyIT.lines(out.resolve("tcp-source-restart/" + key + ".jsonl")).get(0);
        assertEquals(bootId, start.path("bootId").asText());
        // The peer listened on its host's address: it ran in that host's namespace.
        String host = n.path("host").asText().equals("a") ? net + "1" : net + "2";
        assertTrue(start.path("endpoint").asText().startsWith(host + ":"), start::toString);
      }
    }
  }

  @Test
  void aHostWhoseBootIdOrKeyIsNotThePinnedOneIsRefusedBeforeAnythingRuns() throws Exception {
    Path out = dir.resolve("wrong-boot");
    String other = "00000000-0000-4000-8000-000000000000";
    assertEquals(ExitCodes.FAILED, qualify(profile(other, dir.resolve("known_hosts")), out));
    String verdict = Files.readString(out.resolve("verdict.json"));
    assertTrue(verdict.contains("has boot id " + bootId + ", not the profile's " + other), verdict);
    assertTrue(verdict.contains("nothing was run there"), verdict);
    assertFalse(
        Files.readString(out.resolve("tcp-read/supervisor.jsonl")).contains("\"spawn\""),
        "no peer started");

    Path empty = Files.writeString(dir.resolve("known_hosts_empty"), "");
    Path unknown = dir.resolve("unknown-key");
    assertEquals(ExitCodes.FAILED, qualify(profile(bootId, empty), unknown));
    String refused = Files.readString(unknown.resolve("verdict.json"));
    assertTrue(refused.contains("Host key verification failed"), refused);
    assertFalse(
        Files.readString(unknown.resolve("tcp-read/supervisor.jsonl")).contains("\"spawn\""),
        "no peer started");
  }
}
