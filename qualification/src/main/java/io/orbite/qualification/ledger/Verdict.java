package io.orbite.qualification.ledger;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What the {@link LedgerVerifier} concluded about a run: one verdict per case, each with the
 * reasons it failed. The run passes only when it has a case and every case passes.
 *
 * @param cases the cases, in the order of their directories' names
 */
public record Verdict(List<CaseVerdict> cases) {
  /** Copies the list. */
  public Verdict {
    cases = List.copyOf(cases);
  }

  /**
   * One case's verdict.
   *
   * @param name the case (its directory's name)
   * @param roundsVerified rounds whose every check held
   * @param bytesVerified payload bytes of those rounds
   * @param failures why the case failed, one message per broken check; empty when it passed
   * @param notes what the case does not prove although it passed (one machine playing two hosts)
   */
  public record CaseVerdict(
      String name,
      int roundsVerified,
      long bytesVerified,
      List<String> failures,
      List<String> notes) {
    /** Copies the lists. */
    public CaseVerdict {
      failures = List.copyOf(failures);
      notes = List.copyOf(notes);
    }

    /** Whether every check of the case held. */
    public boolean passed() {
      return failures.isEmpty();
    }
  }

  /** Whether the run passed: at least one case, and every case passed. */
  public boolean passed() {
    return !cases.isEmpty() && cases.stream().allMatch(CaseVerdict::passed);
  }

  /** Every failure of every case, each prefixed with its case's name. */
  public List<String> failures() {
    if (cases.isEmpty()) {
      return List.of("no case directory with a supervisor.jsonl");
    }
    return cases.stream()
        .flatMap(c -> c.failures().stream().map(f -> c.name() + ": " + f))
        .toList();
  }

  /** The verdict as a JSON document. */
  public String toJson() {
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = json.createObjectNode();
    root.put("verifier", LedgerVerifier.class.getName());
    root.put("pass", passed());
    ArrayNode list = root.putArray("cases");
    for (CaseVerdict c : cases) {
      ObjectNode n = list.addObject();
      n.put("case", c.name());
      n.put("pass", c.passed());
      n.put("roundsVerified", c.roundsVerified());
      n.put("bytesVerified", c.bytesVerified());
      ArrayNode f = n.putArray("failures");
      c.failures().forEach(f::add);
      ArrayNode notes = n.putArray("notes");
      c.notes().forEach(notes::add);
    }
    try {
      return json.writeValueAsString(root) + "\n";
    } catch (IOException e) {
      throw new IllegalStateException("cannot write the verdict", e);
    }
  }

  /** Writes {@link #toJson()} to {@code file}. */
  public void write(Path file) throws IOException {
    Files.writeString(file, toJson());
  }
}
