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
 * {@code ./orbite bench rdma --quick --json} at two sizes, in a CLI JVM of its own as the launcher
 * runs it: it passes, every figure it promises is there and labelled, the TCP reference went over
 * TCP, and the null-wire requester completed its slices.
 */
class RdmaBenchIT {
  @TempDir Path dir;

  @Test
  @Timeout(120)
  void aQuickRunPrintsEveryLabelledFigureAndPasses() throws Exception {
    List<String> cmd =
        EngineProcess.javaCommand(
            EngineProcess.classPath(),
            OrbiteCli.class.getName(),
            List.of(
                "bench", "rdma", "--quick", "--json", "--sizes", "64KiB,1MiB", "--seconds", "0.3"));
    Path out = dir.resolve("stdout");
    Path err = dir.resolve("stderr");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().remove("ORBITE_CONF");
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(110, TimeUnit.SECONDS), "the bench did not end");
    } finally {
      p.destroyForcibly();
    }
    String human = Files.readString(err);
    assertEquals(ExitCodes.PASS, p.exitValue(), human);
    JsonNode report = new ObjectMapper().readTree(jsonObject(Files.readAllLines(out)));
    assertEquals(RdmaBench.LABEL, report.get("label").asText());
    JsonNode f = report.get("figures");
    for (String key :
        List.of(
            "rdma_read_64KiB_GBps",
            "rdma_read_1MiB_GBps",
            "rdma_write_64KiB_GBps",
            "rdma_write_1MiB_GBps",
            "rdma_slices_per_s",
            "tcp_read_1MiB_GBps",
            "rdma_nullwire_slices_per_s",
            "tasks_over_rdma",
            "tasks_over_tcp",
            "rdma_rail_soft0_GB",
            "rdma_rail_soft1_GB")) {
      assertTrue(f.has(key) && f.get(key).asDouble() > 0, () -> key + " in " + f);
    }
    assertTrue(report.get("ratios").has("rdma_read_1MiB_vs_tcp"), report::toString);
    assertTrue(human.contains("figures (" + RdmaBench.LABEL + "):"), human);
    assertTrue(human.contains("no byte is verified"), human);
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
