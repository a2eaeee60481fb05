package io.orbite.qualification.qualify;

import static io.orbite.qualification.Shell.status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.ledger.Verdict;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every shipped profile (qualification/profiles/) run by the supervisor, with the local and the
 * netns launchers (link-down needs two hosts: netns only), each case's peers real processes, and
 * judged by the independent verifier from the files alone: the verdict must pass. Beside the
 * verdict, the test reads the files itself: every planned child spawned and reaped with its status,
 * every round's receipts there.
 */
class QualifyIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest(name = "{0} with the {1} launcher")
  @CsvSource({
    "healthy.json, local",
    "healthy.json, netns",
    "restart.json, local",
    "restart.json, netns",
    "link-down.json, netns",
    "lost-completion.json, local",
    "lost-completion.json, netns",
    "inflight-err.json, local",
    "inflight-err.json, netns",
    "interruption.json, local",
    "interruption.json, netns",
    "cleanup-failure.json, local",
    "cleanup-failure.json, netns"
  })
  void everyShippedProfileRunsAndTheIndependentVerifierPassesIt(
      String file, String launcher, @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path out)
      throws Exception {
    if (launcher.equals("netns")) {
      requireNetns();
    }
    Profile profile = Profile.read(Path.of("profiles", file));
    Verdict verdict = Supervisor.run(profile, launcher, out, System.err);
    assertTrue(verdict.passed(), () -> String.join("\n", verdict.failures()));
    assertEquals(profile.cases().size(), verdict.cases().size());
    JsonNode written = JSON.readTree(Files.readString(out.resolve("verdict.json")));
    assertTrue(written.path("pass").asBoolean(), written::toString);
    for (Profile.Case c : profile.cases()) {
      Verdict.CaseVerdict v =
          verdict.cases().stream().filter(x -> x.name().equals(c.name())).findFirst().orElseThrow();
      int rounds = c.rounds() * c.generations();
      assertEquals(rounds, v.roundsVerified(), c.name());
      if (c.mode().equals("healthy") || c.mode().equals("restart")) {
        assertEquals(rounds * c.roundBytes(), v.bytesVerified(), c.name());
      } else {
        // One faulted round: its failed tasks count no byte.
        assertTrue(v.bytesVerified() >= (rounds - 1) * c.roundBytes(), c.name());
        assertTrue(v.bytesVerified() < rounds * c.roundBytes(), c.name());
      }
      Path dir = out.resolve(c.name());
      List<JsonNode> ledger = lines(dir.resolve("supervisor.jsonl"));
      long spawned = ledger.stream().filter(n -> n.path("type").asText().equals("spawn")).count();
      long exited = ledger.stream().filter(n -> n.path("type").asText().equals("exit")).count();
      int children =
          c.mode().equals("cleanup-failure")
              ? 2 * c.generations()
              : c.generations() > 1 ? 1 + c.generations() : 2;
      assertEquals(children, spawned, c.name());
      assertEquals(spawned, exited, c.name() + ": every child reaped");
      for (JsonNode s : ledger) {
        if (s.path("type").asText().equals("spawn")) {
          assertFalse(
              ProcessHandle.of(s.path("pid").asLong()).map(ProcessHandle::isAlive).orElse(false),
              "pid " + s.path("pid") + " is gone");
          Path receipts =
              dir.resolve(s.path("role").asText() + "-g" + s.path("generation").asInt() + ".jsonl");
          assertTrue(Files.size(receipts) > 0, receipts.toString());
        }
      }
    }
  }

  @Test
  void everyShippedProfileIsRunWithBothLaunchersItCanRunWith() throws Exception {
    String[] rows =
        QualifyIT.class
            .getDeclaredMethod(
                "everyShippedProfileRunsAndTheIndependentVerifierPassesIt",
                String.class,
                String.class,
                Path.class)
            .getAnnotation(CsvSource.class)
            .value();
    java.util.Set<String> run = new java.util.TreeSet<>();
    for (String row : rows) {
      run.add(row.replace(" ", ""));
    }
    java.util.Set<String> due = new java.util.TreeSet<>();
    try (var files = Files.list(Path.of("profiles"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".json")).toList()) {
        String name = f.getFileName().toString();
        boolean twoHosts =
            Profile.read(f).cases().stream().anyMatch(c -> c.mode().equals("link-down"));
        if (!twoHosts) {
          due.add(name + ",local");
        }
        due.add(name + ",netns");
      }
    }
    assertEquals(due, run, "the matrix of shipped profiles and launchers");
  }

  @Test
  void theCommandExitsZeroOnAVerifiedPassAndRefusesBadUsage(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path dir) throws Exception {
    Path profile = dir.resolve("one.json");
    Files.writeString(
        profile,
        "{\"profile\":\"one\",\"cases\":[{\"name\":\"tcp-write\",\"transport\":\"tcp\","
            + "\"operation\":\"write\",\"mode\":\"healthy\",\"parents\":3,\"payload\":70001,"
            + "\"rounds\":1}]}");
    Path out = dir.resolve("run");
    assertEquals(
        ExitCodes.PASS,
        QualifyCommand.run(List.of("--profile", profile.toString(), "--output", out.toString())));
    assertTrue(Files.readString(out.resolve("verdict.json")).contains("\"pass\" : true"));
    // The same run, verified again from its files alone.
    assertEquals(ExitCodes.PASS, QualifyCommand.run(List.of("--verify", out.toString())));
    // A directory that already holds a run is refused, as is one inside the checkout.
    assertEquals(
        ExitCodes.USAGE,
        QualifyCommand.run(List.of("--profile", profile.toString(), "--output", out.toString())));
    assertEquals(
        ExitCodes.USAGE,
        QualifyCommand.run(
            List.of("--profile", profile.toString(), "--output", "target/qualify-run")));
    assertFalse(Files.exists(Path.of("target/qualify-run")));
    // A bad profile is a usage error, before anything runs.
    Files.writeString(profile, Files.readString(profile).replace("\"payload\"", "\"paylod\""));
    assertEquals(
        ExitCodes.USAGE,
        QualifyCommand.run(
            List.of("--profile", profile.toString(), "--output", dir.resolve("x").toString())));
    assertFalse(Files.exists(dir.resolve("x")), "nothing ran");
    assertEquals(ExitCodes.USAGE, QualifyCommand.run(List.of("--profile")));
    assertEquals(ExitCodes.USAGE, QualifyCommand.run(List.of("--output", out.toString())));
    // A run whose receipts lose a line is not verified.
    Path receipts = out.resolve("tcp-write").resolve("source-g1.jsonl");
    List<String> lines = Files.readAllLines(receipts);
    Files.write(receipts, lines.subList(0, lines.size() - 1));
    assertEquals(ExitCodes.FAILED, QualifyCommand.run(List.of("--verify", out.toString())));
  }

  static void requireNetns() {
    String probe = "orbqprobe" + ProcessHandle.current().pid();
    boolean ok = status("ip", "netns", "add", probe) == 0;
    if (ok) {
      status("ip", "netns", "del", probe);
    }
    Prerequisite.require(
        ok,
        "ip netns is unusable here (it needs root and iproute2: apt-get install iproute2;"
            + " .ci/run and ./orbite test install it as root)");
  }

  static List<JsonNode> lines(Path file) throws Exception {
    List<JsonNode> out = new java.util.ArrayList<>();
    for (String l : Files.readAllLines(file)) {
      out.add(JSON.readTree(l));
    }
    return out;
  }
}
