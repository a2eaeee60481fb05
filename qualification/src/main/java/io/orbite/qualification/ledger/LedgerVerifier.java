package io.orbite.qualification.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The independent verifier of a {@code ./orbite qualify} run. It reads only files: each case's
 * supervisor ledger ({@code supervisor.jsonl}: the plan, every child spawned, killed and reaped,
 * every round with its workload, the stale-epoch checks and link faults it made) and every
 * process's own receipts ({@code <role>-g<generation>.jsonl}). It joins them and rejects what does
 * not agree: a missing, duplicated or partial round or task, bytes or byte counters that differ
 * from the workload by even one, a transport or rail that is not the one asked for, a whole region
 * not checked, a stale epoch that moved a byte, an owner not drained at close, a child not reaped
 * or reaped with the wrong status.
 *
 * <p>It imports nothing of the engine or of the supervisor (ArchUnit proves it: {@code
 * LedgerIndependenceArchTest}): what it knows of the run is what the files say, so a supervisor or
 * an engine that lies about its own results cannot also make the verifier agree. The file formats
 * are in docs/qualification.md, "Receipts and the ledger".
 *
 * <p>The rounds' checks are {@link RoundCheck}'s; the rest (children, receipts, stale epochs,
 * drain) are here.
 */
public final class LedgerVerifier {
  /**
   * The modes in which the fault role's process is killed and replaced by a next generation (the
   * verifier's own list: it shares no code with the supervisor).
   */
  private static final List<String> REPLACING =
      List.of("restart", "interruption", "lost-completion", "cleanup-failure");

  private LedgerVerifier() {}

  /**
   * Verifies every case directory under {@code runDir} (each holding a {@code supervisor.jsonl}).
   *
   * @param runDir the directory {@code ./orbite qualify --output} wrote
   * @return the verdict; it passes only when there is at least one case and every case passes
   * @throws IOException when the directory cannot be listed or a file cannot be read
   */
  public static Verdict verify(Path runDir) throws IOException {
    List<Verdict.CaseVerdict> cases = new ArrayList<>();
    try (Stream<Path> dirs = Files.list(runDir)) {
      for (Path dir : dirs.sorted().toList()) {
        if (Files.isRegularFile(dir.resolve("supervisor.jsonl"))) {
          cases.add(verifyCase(dir));
        }
      }
    }
    return new Verdict(cases);
  }

  /** Verifies one case directory. */
  public static Verdict.CaseVerdict verifyCase(Path dir) throws IOException {
    String name = dir.getFileName().toString();
    List<String> failures = new ArrayList<>();
    Ledger supervisor = Ledger.read(dir.resolve("supervisor.jsonl"));
    if (supervisor == null) {
      return new Verdict.CaseVerdict(name, 0, 0, List.of("no supervisor.jsonl"), List.of());
    }
    failures.addAll(supervisor.failures());
    List<JsonNode> plans = supervisor.ofType("plan");
    if (plans.size() != 1
        || supervisor.lines().isEmpty()
        || supervisor.lines().get(0) != plans.get(0)) {
      failures.add(
          "the supervisor's ledger must open with exactly one plan; it has " + plans.size());
      return new Verdict.CaseVerdict(name, 0, 0, failures, List.of());
    }
    Check check = new Check(dir, plans.get(0), supervisor, failures);
    check.run();
    return new Verdict.CaseVerdict(
        name, check.roundsVerified, check.bytesVerified, failures, check.notes);
  }

  /** The checks of one case, with what they learned on the way. */
  private static final class Check {
    private final Path dir;
    private final JsonNode plan;
    private final Ledger supervisor;
    private final List<String> failures;
    private final Map<String, Ledger> receipts = new HashMap<>();
    private final Map<String, String> epochs = new HashMap<>();
    private final List<String> notes = new ArrayList<>();
    private final Map<String, String> boots = new HashMap<>();
    private int roundsVerified;
    private long bytesVerified;

    Check(Path dir, JsonNode plan, Ledger supervisor, List<String> failures) {
      this.dir = dir;
      this.plan = plan;
      this.supervisor = supervisor;
      this.failures = failures;
    }

    private void fail(String message) {
      failures.add(message);
    }

    void run() throws IOException {
      String mode = plan.path("mode").asText();
      List<JsonNode> lines = supervisor.lines();
      if (!lines.get(lines.size() - 1).path("type").asText().equals("end")
          || supervisor.ofType("end").size() != 1) {
        fail(
            "the supervisor's ledger has no single end line after the rest: the run did not finish");
      }
      for (JsonNode failure : supervisor.ofType("failure")) {
        fail("the supervisor recorded a failure: " + failure.path("message").asText());
      }
      spawnsAndReaping(mode);
      hosts();
      boolean replaces = REPLACING.contains(mode);
      RoundCheck rounds = new RoundCheck(plan, supervisor, receipts, epochs, this::fail);
      rounds.run(plan.path("rounds").asInt() * (replaces ? plan.path("generations").asInt() : 1));
      roundsVerified = rounds.roundsVerified();
      bytesVerified = rounds.bytesVerified();
      staleChecks(mode);
      closes();
    }

    /**
     * Whether {@code role} runs several generations: the fault role of a replacing mode, and under
     * a cleanup failure both (the source is killed to make the requester drain its QP, and the
     * requester keeps that QP for life).
     */
    private static boolean replaced(String mode, String role, String faultRole) {
      return REPLACING.contains(mode) && (role.equals(faultRole) || mode.equals("cleanup-failure"));
    }

    /** Every child spawned once per (role, generation), as the plan asks; each reaped once. */
    private void spawnsAndReaping(String mode) throws IOException {
      String faultRole = plan.path("faultRole").asText("");
      int generations = plan.path("generations").asInt(1);
      Set<String> expected = new HashSet<>();
      for (String role : List.of("source", "requester")) {
        int n = replaced(mode, role, faultRole) ? generations : 1;
        for (int g = 1; g <= n; g++) {
          expected.add(role + "-g" + g);
        }
      }
      Map<String, JsonNode> spawns = new HashMap<>();
      for (JsonNode s : supervisor.ofType("spawn")) {
        String key = s.path("role").asText() + "-g" + s.path("generation").asInt();
        if (spawns.put(key, s) != null) {
          fail("spawn of " + key + " recorded twice");
        }
      }
      if (!spawns.keySet().equals(expected)) {
        fail(
            "the children spawned "
                + new java.util.TreeSet<>(spawns.keySet())
                + " are not the plan's "
                + new java.util.TreeSet<>(expected));
      }
      Map<String, JsonNode> kills = new HashMap<>();
      for (JsonNode k : supervisor.ofType("kill")) {
        String key = k.path("role").asText() + "-g" + k.path("generation").asInt();
        if (kills.put(key, k) != null) {
          fail("kill of " + key + " recorded twice");
        }
      }
      Set<String> expectedKills = new HashSet<>();
      for (String role : List.of("source", "requester")) {
        if (replaced(mode, role, faultRole)) {
          for (int g = 1; g < generations; g++) {
            expectedKills.add(role + "-g" + g);
          }
        }
      }
      if (!kills.keySet().equals(expectedKills)) {
        fail(
            "the children killed "
                + new java.util.TreeSet<>(kills.keySet())
                + " are not the plan's "
                + new java.util.TreeSet<>(expectedKills));
      }
      Map<String, Integer> exits = new HashMap<>();
      for (JsonNode e : supervisor.ofType("exit")) {
        String key = e.path("role").asText() + "-g" + e.path("generation").asInt();
        exits.merge(key, 1, Integer::sum);
        JsonNode spawn = spawns.get(key);
        if (spawn == null) {
          fail("exit of " + key + ", which was never spawned");
          continue;
        }
        if (e.path("pid").asLong() != spawn.path("pid").asLong()) {
          fail(
              "exit of "
                  + key
                  + " names pid "
                  + e.path("pid").asLong()
                  + ", spawned as "
                  + spawn.path("pid").asLong());
        }
        boolean killed = kills.containsKey(key);
        int status = e.path("status").asInt(-1);
        if (killed && status != 137) {
          fail(key + " was killed with SIGKILL but exited with status " + status + ", not 137");
        }
        if (!killed && status != 0) {
          fail(
              key
                  + " (pid "
                  + spawn.path("pid").asLong()
                  + ") exited with status "
                  + status
                  + " without being killed");
        }
      }
      for (Map.Entry<String, JsonNode> s : spawns.entrySet()) {
        int n = exits.getOrDefault(s.getKey(), 0);
        if (n == 0) {
          fail(
              "child "
                  + s.getKey()
                  + " (pid "
                  + s.getValue().path("pid").asLong()
                  + ") was never reaped");
        } else if (n > 1) {
          fail("child " + s.getKey() + " reaped " + n + " times");
        }
        Ledger r = receiptsOf(s.getKey(), s.getValue().path("pid").asLong());
        placed(s.getKey(), s.getValue(), r);
      }
    }

    /**
     * Reads and checks one process's receipts: numbered 1, 2, 3..., all its own, opened by start.
     */
    private Ledger receiptsOf(String key, long pid) throws IOException {
      if (receipts.containsKey(key)) {
        return receipts.get(key);
      }
      Ledger r = Ledger.read(dir.resolve(key + ".jsonl"));
      receipts.put(key, r);
      if (r == null) {
        fail("no receipts from " + key);
        return null;
      }
      failures.addAll(r.failures());
      long seq = 0;
      for (JsonNode line : r.lines()) {
        seq++;
        if (line.path("seq").asLong() != seq) {
          fail(
              key
                  + ": receipt "
                  + line.path("seq").asLong()
                  + " where "
                  + seq
                  + " was due (a receipt missing, duplicated or out of order)");
          seq = line.path("seq").asLong();
        }
        if (line.path("pid").asLong() != pid) {
          fail(
              key
                  + ": receipt "
                  + line.path("seq").asLong()
                  + " written by pid "
                  + line.path("pid").asLong()
                  + ", not the spawned "
                  + pid);
        }
        if (!(line.path("role").asText() + "-g" + line.path("generation").asInt()).equals(key)) {
          fail(
              key
                  + ": receipt "
                  + line.path("seq").asLong()
                  + " says it is "
                  + line.path("role").asText()
                  + "-g"
                  + line.path("generation").asInt());
        }
      }
      List<JsonNode> starts = r.ofType("start");
      if (starts.size() != 1 || r.lines().get(0) != starts.get(0)) {
        fail(key + ": the receipts must open with exactly one start");
      } else {
        epochs.put(key, starts.get(0).path("epoch").asText());
      }
      return r;
    }

    /** The process ran on the host the supervisor placed it on: its hostname and boot id. */
    private void placed(String key, JsonNode spawn, Ledger r) {
      if (r == null || r.ofType("start").isEmpty()) {
        return;
      }
      JsonNode start = r.ofType("start").get(0);
      for (String f : List.of("hostname", "bootId")) {
        if (!start.path(f).asText().equals(spawn.path(f).asText())) {
          fail(
              key
                  + " ran where "
                  + f
                  + " is '"
                  + start.path(f).asText()
                  + "', not on the host the supervisor placed it on ('"
                  + spawn.path(f).asText()
                  + "')");
        }
      }
      boots.put(spawn.path("role").asText(), start.path("bootId").asText());
    }

    /** Notes what a passing case does not prove: one machine played both hosts. */
    private void hosts() {
      String s = boots.get("source");
      if (s != null && s.equals(boots.get("requester"))) {
        notes.add(
            "source and requester ran on one machine (boot id "
                + s
                + "): this run does not qualify two physical hosts");
      }
    }

    /** Each stale epoch the supervisor tried was refused, admitting nothing and moving no byte. */
    private void staleChecks(String mode) {
      List<JsonNode> stale = supervisor.ofType("stale");
      if (REPLACING.contains(mode) && plan.path("faultRole").asText().equals("source")) {
        int due = plan.path("generations").asInt() - 1;
        if (stale.size() != due) {
          fail(
              "the plan replaces the source "
                  + due
                  + " times; the ledger has "
                  + stale.size()
                  + " stale-epoch checks");
        }
      }
      for (JsonNode s : stale) {
        String req = "requester-g" + s.path("requesterGeneration").asInt();
        String old = "source-g" + s.path("staleSourceGeneration").asInt();
        Ledger r = receipts.get(req);
        if (r == null) {
          fail("stale check against " + old + ": no receipts from " + req);
          continue;
        }
        List<JsonNode> refusals =
            r.ofType("stale").stream()
                .filter(n -> n.path("peerEpoch").asText().equals(epochs.get(old)))
                .toList();
        if (refusals.size() != 1) {
          fail(
              "stale epoch "
                  + epochs.get(old)
                  + " of "
                  + old
                  + ": "
                  + refusals.size()
                  + " stale receipts from "
                  + req
                  + ", not 1");
          continue;
        }
        JsonNode refusal = refusals.get(0);
        if (!refusal.path("errorKind").asText().equals("EPOCH_MISMATCH")) {
          fail(
              "stale epoch "
                  + epochs.get(old)
                  + " was answered "
                  + refusal.path("errorKind").asText()
                  + ", not EPOCH_MISMATCH");
        }
        long moved =
            refusal.path("bytes").asLong()
                + refusal.path("countersAfter").path("bytesCompleted").asLong()
                - refusal.path("countersBefore").path("bytesCompleted").asLong();
        if (moved != 0 || refusal.path("admitted").asInt() != 0) {
          fail(
              "stale epoch "
                  + epochs.get(old)
                  + " of "
                  + old
                  + " admitted "
                  + refusal.path("admitted").asInt()
                  + " tasks and moved "
                  + moved
                  + " bytes");
        }
        long opened =
            refusal.path("countersAfter").path("connectionsOpened").asLong()
                - refusal.path("countersBefore").path("connectionsOpened").asLong();
        if (opened != 0) {
          fail(
              "stale epoch " + epochs.get(old) + ": " + opened + " data connections opened for it");
        }
      }
    }

    /** Every process that was not killed drained before its close, and its close was clear. */
    private void closes() {
      Set<String> killed = new HashSet<>();
      supervisor
          .ofType("kill")
          .forEach(k -> killed.add(k.path("role").asText() + "-g" + k.path("generation").asInt()));
      for (Map.Entry<String, Ledger> e : receipts.entrySet()) {
        if (e.getValue() == null || killed.contains(e.getKey())) {
          continue;
        }
        List<JsonNode> drained = e.getValue().ofType("owners");
        if (drained.isEmpty()) {
          fail(e.getKey() + ": no owners receipt before its close");
        }
        for (JsonNode o : drained) {
          for (String f :
              List.of("batches", "tasksInFlight", "bytesInFlight", "loans", "quarantined")) {
            if (o.path(f).asLong(-1) != 0) {
              fail(e.getKey() + ": " + f + " " + o.path(f).asLong(-1) + " at its end, not drained");
            }
          }
        }
        List<JsonNode> closed = e.getValue().ofType("closed");
        if (closed.size() != 1) {
          fail(e.getKey() + ": " + closed.size() + " close receipts, not 1");
        } else if (!closed.get(0).path("clear").asBoolean(false)
            || !closed.get(0).path("phase").asText().equals("CLOSED")) {
          fail(e.getKey() + ": its close was not clear: " + closed.get(0));
        }
      }
    }
  }
}
