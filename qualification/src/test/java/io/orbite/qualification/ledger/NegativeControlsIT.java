package io.orbite.qualification.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.qualification.qualify.Profile;
import io.orbite.qualification.qualify.Supervisor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Negative controls of the independent verifier: a real run (a TCP source SIGKILLed and replaced
 * twice, three generations, the survivor's stale segments refused) passes, and each corruption of a
 * copy of its ledger is rejected for its own reason: a missing round, a duplicated task, a byte
 * count off by one, a stale epoch that moved bytes, an unreaped child, a partially drained owner, a
 * receipt from another process or from another host than its place, a child that exited badly, a
 * WRITE with withheld completions reported without effect, a fault never injected, a run that did
 * not finish, and a round whose whole region was not checked. Each corruption edits one file of a
 * fresh copy, so each rejection is shown to come from that edit.
 */
class NegativeControlsIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CASE = "tcp-source-restart";
  private static final String LOST = "rdma-write-lost-completion";

  @TempDir static Path run;
  @TempDir Path copy;

  @BeforeAll
  static void aRealRunPasses() throws Exception {
    Profile shipped = Profile.read(Path.of("profiles", "restart.json"));
    List<Profile.Case> cases = new ArrayList<>();
    cases.addAll(shipped.cases().stream().filter(c -> c.name().equals(CASE)).toList());
    cases.addAll(
        Profile.read(Path.of("profiles", "lost-completion.json")).cases().stream()
            .filter(c -> c.name().equals(LOST))
            .toList());
    assertEquals(2, cases.size());
    Profile two = new Profile("negative-controls", "local", shipped.hosts(), cases);
    Verdict v = Supervisor.run(two, "local", run, System.err);
    assertTrue(v.passed(), () -> String.join("\n", v.failures()));
  }

  /** A copy of the passing TCP restart case, for one corruption. */
  private Path fresh() throws IOException {
    return fresh(CASE);
  }

  /** A copy of the passing case {@code name}, for one corruption. */
  private Path fresh(String name) throws IOException {
    Path dir = copy.resolve(name);
    Files.createDirectories(dir);
    try (Stream<Path> files = Files.list(run.resolve(name))) {
      for (Path f : files.toList()) {
        Files.copy(f, dir.resolve(f.getFileName()));
      }
    }
    return dir;
  }

  private static List<ObjectNode> read(Path file) throws IOException {
    List<ObjectNode> out = new ArrayList<>();
    for (String l : Files.readAllLines(file)) {
      out.add((ObjectNode) JSON.readTree(l));
    }
    return out;
  }

  private static void write(Path file, List<ObjectNode> lines) throws IOException {
    List<String> text = new ArrayList<>();
    for (JsonNode n : lines) {
      text.add(JSON.writeValueAsString(n));
    }
    Files.write(file, text);
  }

  private static ObjectNode first(List<ObjectNode> lines, Predicate<ObjectNode> p) {
    return lines.stream().filter(p).findFirst().orElseThrow();
  }

  private static Predicate<ObjectNode> type(String type) {
    return n -> n.path("type").asText().equals(type);
  }

  private static Predicate<ObjectNode> round(String type, int k) {
    return n -> n.path("type").asText().equals(type) && n.path("round").asInt() == k;
  }

  /** Verifies {@code dir}'s run and requires it rejected with a failure containing {@code why}. */
  private void assertRejected(String why) throws IOException {
    Verdict v = LedgerVerifier.verify(copy);
    assertFalse(v.passed(), "a corrupted ledger passed");
    assertTrue(
        v.failures().stream().anyMatch(f -> f.contains(why)),
        () -> "expected a failure naming '" + why + "'; got:\n" + String.join("\n", v.failures()));
  }

  @Test
  void theUncorruptedCopyPasses() throws IOException {
    fresh();
    Verdict v = LedgerVerifier.verify(copy);
    assertTrue(v.passed(), () -> String.join("\n", v.failures()));
    assertEquals(1, v.cases().size());
    assertEquals(6, v.cases().get(0).roundsVerified());
    // Honest about what it proves: one machine played both hosts.
    assertTrue(
        v.cases().get(0).notes().get(0).contains("does not qualify two physical hosts"),
        v.cases().toString());
  }

  @Test
  void aMissingRoundIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    lines.remove(first(lines, round("round", 2)));
    write(f, lines);
    assertRejected("round 2: no round receipt from requester-g1");
  }

  @Test
  void aDuplicatedTaskIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ArrayNode tasks = (ArrayNode) first(lines, round("round", 1)).get("tasks");
    tasks.set(1, tasks.get(0).deepCopy());
    write(f, lines);
    assertRejected("round 1: task 0 reported twice");
    assertRejected("round 1: task 1 has no result");
  }

  @Test
  void aByteCountOffByOneIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode task = (ObjectNode) first(lines, round("round", 3)).get("tasks").get(2);
    task.put("bytes", task.get("bytes").asLong() - 1);
    write(f, lines);
    assertRejected("round 3 task 2: 524290 bytes, the workload says 524291");
  }

  @Test
  void aCounterOffByOneIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode after = (ObjectNode) first(lines, round("round", 4)).get("countersAfter");
    after.put("bytesCompleted", after.get("bytesCompleted").asLong() + 1);
    write(f, lines);
    assertRejected("round 4: bytesCompleted moved by 2097165, the completed tasks hold 2097164");
  }

  @Test
  void aStaleEpochThatMovedBytesIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode stale = first(lines, type("stale"));
    stale.put("admitted", 1);
    stale.put("bytes", 4096);
    write(f, lines);
    assertRejected("admitted 1 tasks and moved 4096 bytes");
  }

  @Test
  void aStaleEpochAnsweredWithAnotherErrorIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    first(lines, type("stale")).put("errorKind", "PEER_LOST");
    write(f, lines);
    assertRejected("was answered PEER_LOST, not EPOCH_MISMATCH");
  }

  @Test
  void anUnreapedChildIsRejected() throws IOException {
    Path f = fresh().resolve("supervisor.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode exit =
        first(lines, n -> type("exit").test(n) && n.path("role").asText().equals("source"));
    lines.remove(exit);
    write(f, lines);
    assertRejected("child source-g1 (pid " + exit.path("pid").asLong() + ") was never reaped");
  }

  @Test
  void aKilledChildThatExitedCleanlyAndASurvivorThatDidNotAreRejected() throws IOException {
    Path f = fresh().resolve("supervisor.jsonl");
    List<ObjectNode> lines = read(f);
    first(lines, n -> type("exit").test(n) && n.path("role").asText().equals("source"))
        .put("status", 0);
    first(lines, n -> type("exit").test(n) && n.path("role").asText().equals("requester"))
        .put("status", 1);
    write(f, lines);
    assertRejected("source-g1 was killed with SIGKILL but exited with status 0, not 137");
    assertRejected("exited with status 1 without being killed");
  }

  @Test
  void aPartiallyDrainedOwnerIsRejected() throws IOException {
    Path f = fresh().resolve("source-g3.jsonl");
    List<ObjectNode> lines = read(f);
    first(lines, type("owners")).put("loans", 1);
    write(f, lines);
    assertRejected("source-g3: loans 1 at its end, not drained");
  }

  @Test
  void aReceiptFromAnotherProcessIsRejected() throws IOException {
    Path f = fresh().resolve("source-g2.jsonl");
    List<ObjectNode> lines = read(f);
    lines.get(1).put("pid", 1);
    write(f, lines);
    assertRejected("source-g2: receipt 2 written by pid 1");
  }

  @Test
  void aPeerThatRanOnAnotherHostThanItsPlaceIsRejected() throws IOException {
    Path f = fresh().resolve("source-g2.jsonl");
    List<ObjectNode> lines = read(f);
    first(lines, type("start")).put("bootId", "00000000-0000-4000-8000-000000000000");
    write(f, lines);
    assertRejected("source-g2 ran where bootId is '00000000-0000-4000-8000-000000000000'");
  }

  @Test
  void aDuplicatedReceiptIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode round = first(lines, round("round", 5));
    lines.add(lines.indexOf(round) + 1, round.deepCopy());
    write(f, lines);
    assertRejected("round 5: requester-g1 reported the round 2 times");
    assertRejected("where");
  }

  @Test
  void theLostCompletionCasePassesAndAWriteReportedWithoutEffectIsRejected() throws IOException {
    Path f = fresh(LOST).resolve("requester-g1.jsonl");
    Verdict v = LedgerVerifier.verify(copy);
    assertTrue(v.passed(), () -> String.join("\n", v.failures()));
    List<ObjectNode> lines = read(f);
    ((ObjectNode) first(lines, round("round", 2)).get("tasks").get(1)).put("effect", "NONE");
    write(f, lines);
    assertRejected(
        "round 2 task 1: effect NONE; a WRITE whose payload landed unconfirmed is UNKNOWN");
  }

  @Test
  void aFaultRoundWhoseFaultWasNeverInjectedIsRejected() throws IOException {
    Path f = fresh(LOST).resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ((ObjectNode) first(lines, round("round", 2)).get("fault")).put("injected", 0);
    write(f, lines);
    assertRejected("round 2: the provider's fault withhold was injected 0 times");
  }

  @Test
  void aRunThatDidNotFinishIsRejected() throws IOException {
    Path f = fresh().resolve("supervisor.jsonl");
    List<ObjectNode> lines = read(f);
    lines.remove(lines.size() - 1);
    write(f, lines);
    assertRejected("the run did not finish");
  }

  @Test
  void aRegionNotCheckedWholeIsRejected() throws IOException {
    Path f = fresh().resolve("requester-g1.jsonl");
    List<ObjectNode> lines = read(f);
    ObjectNode check = first(lines, round("verify", 6));
    check.put("bytes", check.get("bytes").asLong() - 4096);
    write(f, lines);
    assertRejected("round 6: requester-g1 checked");
    assertRejected("bytes, not the whole region of");
  }
}
