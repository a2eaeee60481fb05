package io.orbite.qualification.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What every bench shares: the human table and the JSON object ({@code figures}, {@code ceilings},
 * {@code ratios}, values rounded to 3 decimals, and a {@code label} where the bench has one), and
 * the byte check of a measured run.
 */
final class BenchReport {
  private BenchReport() {}

  /** Prints the table on {@code human} and, with {@code json}, one JSON object on stdout. */
  static void print(
      PrintStream human,
      boolean json,
      Map<String, Double> figures,
      Map<String, Double> ceilings,
      Map<String, Double> ratios)
      throws JsonProcessingException {
    print(human, json, null, figures, ceilings, ratios);
  }

  /**
   * {@link #print} with a {@code label} that qualifies every figure (null: none): it heads the
   * table and is the JSON object's first field, {@code "label"}.
   */
  static void print(
      PrintStream human,
      boolean json,
      String label,
      Map<String, Double> figures,
      Map<String, Double> ceilings,
      Map<String, Double> ratios)
      throws JsonProcessingException {
    human.println(label == null ? "figures:" : "figures (" + label + "):");
    figures.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
    human.println("ceilings (same run):");
    if (ceilings.isEmpty()) {
      human.println("  (none)");
    }
    ceilings.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
    human.println("ratios:");
    ratios.forEach((k, v) -> human.printf(Locale.ROOT, "  %-40s %14.3f%n", k, v));
    if (!json) {
      return;
    }
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    if (label != null) {
      root.put("label", label);
    }
    ObjectNode f = root.putObject("figures");
    figures.forEach((k, v) -> f.put(k, round(v)));
    ObjectNode c = root.putObject("ceilings");
    ceilings.forEach((k, v) -> c.put(k, round(v)));
    ObjectNode r = root.putObject("ratios");
    ratios.forEach((k, v) -> r.put(k, round(v)));
    System.out.println(mapper.writeValueAsString(root));
  }

  /**
   * Checks the bytes a run touched: after READs the requester's {@code [0, touched)} holds the
   * source's pattern; after WRITEs the source (asked over its harness) holds the written pattern.
   *
   * @return 1 if a byte is wrong (and says which on {@code human}), else 0
   */
  static int verify(
      PrintStream human,
      Op op,
      RegisteredMemory local,
      EngineProcess source,
      long remote,
      long touched,
      long sourceSeed,
      long writeSeed)
      throws IOException {
    if (op == Op.READ) {
      long bad = Pattern.verify(local.segment(), 0, touched, sourceSeed, 0);
      if (bad >= 0) {
        human.println("  MISMATCH: requester byte " + bad + " after READ");
        return 1;
      }
      return 0;
    }
    String answer =
        source.ask(
            "VERIFY " + remote + " " + sourceSeed + " 1",
            List.of("0 " + touched + " " + writeSeed + " 0"));
    if (!answer.equals("OK")) {
      human.println("  MISMATCH: source " + answer + " after WRITE");
      return 1;
    }
    return 0;
  }

  /** A clean run drops the child's log directory; after a failure it is kept, and said where. */
  static void settleLogs(
      PrintStream human,
      io.orbite.qualification.harness.ChildLogs logs,
      EngineProcess source,
      int failures) {
    if (failures == 0) {
      logs.passed();
    } else {
      human.println("source log kept: " + source.log());
    }
  }

  /**
   * Prints the engine's dashboard and metrics URLs ({@code dashboard: http://...}), if it serves
   * any.
   */
  static void printUrls(PrintStream human, io.orbite.engine.TransferEngine engine) {
    engine.observabilityUrls().forEach((what, url) -> human.println(what + ": " + url));
  }

  static double round(double v) {
    return Math.round(v * 1000.0) / 1000.0;
  }
}
