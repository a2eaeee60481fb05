package io.orbite.qualification.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.OrbiteCli;
import io.orbite.qualification.harness.EngineProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./orbite bench heal --json --trials 1}, in a CLI JVM of its own as the launcher runs it:
 * every trial ran once (a lane cut, both lanes cut, a SIGSTOP and a restart of the source), each
 * figure and its goal is in the JSON, READs were verified byte for byte (payload and guard bytes)
 * and the run passed. No figure's value is judged: the host's load decides those.
 */
class HealBenchIT {
  @TempDir Path dir;

  @Test
  @Timeout(90)
  void oneTrialOfEachHealPrintsEveryFigureWithVerifiedBytes() throws Exception {
    List<String> cmd =
        EngineProcess.javaCommand(
            EngineProcess.classPath(),
            OrbiteCli.class.getName(),
            List.of("bench", "heal", "--json", "--trials", "1"));
    Path out = dir.resolve("stdout");
    Path err = dir.resolve("stderr");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().remove("ORBITE_CONF");
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(80, TimeUnit.SECONDS), "the bench did not end");
    } finally {
      p.destroyForcibly();
    }
    String human = Files.readString(err);
    assertEquals(ExitCodes.PASS, p.exitValue(), human);
    JsonNode report = new ObjectMapper().readTree(jsonObject(Files.readAllLines(out)));
    JsonNode f = report.get("figures");
    for (String key : HealBench.FIGURES) {
      for (String k : List.of(key, key + "_min", key + "_max")) {
        assertTrue(f.has(k) && f.get(k).isNumber(), () -> k + " in " + f);
      }
    }
    assertEquals(1, f.get("trials").asInt());
    long reads = f.get("reads_verified").asLong();
    // At least a round before each SIGSTOP and restart, one after each, and the loops' rounds.
    assertTrue(reads >= 4 * HealReads.PER_BATCH, () -> "reads_verified " + reads);
    assertEquals(reads * HealReads.TASK, f.get("bytes_verified").asLong());
    JsonNode goals = report.get("goals");
    for (String key :
        List.of("lane_cut_stall_ms", "all_lanes_cut_resume_ms", "restart_detect_ms")) {
      JsonNode g = goals.get(key);
      assertTrue(
          g != null && g.has("goal_max") && g.has("median") && g.has("met"), goals::toString);
      assertEquals(f.get(key).asDouble(), g.get("median").asDouble(), 0.0);
    }
    JsonNode config = report.get("config");
    assertEquals(2, config.get("tcp.lanes").asInt());
    assertEquals(
        config.get("tcp.livenessTimeoutMillis").asDouble(),
        goals.get("restart_detect_ms").get("goal_max").asDouble(),
        0.0);
    assertTrue(report.get("passed").asBoolean(), report::toString);
    assertTrue(human.contains("RESULT: PASS"), human);
    assertTrue(human.contains("restart, trial 1: "), human);
  }

  /**
   * The pretty-printed object on stdout: from its "{" line to its "}" line (logs may surround it).
   */
  private static String jsonObject(List<String> lines) {
    int from = lines.indexOf("{");
    int to = lines.lastIndexOf("}");
    assertTrue(from >= 0 && to > from, () -> "no JSON object on stdout: " + lines);
    return String.join("\n", lines.subList(from, to + 1));
  }
}
