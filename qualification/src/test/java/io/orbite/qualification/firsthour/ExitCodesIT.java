package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.engine.BuildInfo;
import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.cli.OrbiteCli;
import io.orbite.qualification.harness.EngineProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every exit code of the README's table, from the command that gives it: the CLI's own JVM where
 * the code is {@code System.exit}'s (a child JVM), the launcher script for a missing JDK, and
 * {@code OrbiteCli.run} in this JVM for the usage errors and {@code version}.
 */
class ExitCodesIT {
  @TempDir Path dir;

  /** A CLI JVM's outcome: its exit code and what it printed (stdout and stderr together). */
  private record Ran(int code, String output) {}

  @Test
  void versionPrintsTheBuildIdentityAndExitsZero() throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream saved = System.out;
    int code;
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      code = OrbiteCli.run(new String[] {"version", "--json"});
    } finally {
      System.setOut(saved);
    }
    assertEquals(ExitCodes.PASS, code);
    JsonNode v = new ObjectMapper().readTree(captured.toString(StandardCharsets.UTF_8));
    assertTrue(v.get("version").asText().matches("\\d+\\.\\d+\\.\\d+.*"), v::toString);
    // The tests run from a git checkout: the build knew its commit.
    assertTrue(v.get("commit").asText().matches("[0-9a-f]{40}"), v::toString);
    assertTrue(v.get("dirty").isBoolean(), v::toString);
    assertTrue(
        v.get("build_time").asText().matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d.*"),
        v::toString);
    assertTrue(v.get("commit_time").asText().matches("\\d{4}-\\d\\d-\\d\\dT.*"), v::toString);
    assertFalse(v.get("build_jdk").asText().equals("unknown"), v::toString);
    assertTrue(v.get("runtime_jdk").asText().startsWith(Runtime.version().toString()), v::toString);
    assertEquals(BuildInfo.current().commit(), v.get("commit").asText());
  }

  @Test
  void usageErrorsExitTwo() {
    for (String[] args :
        List.of(
            new String[] {"frobnicate"},
            new String[] {"bench"},
            new String[] {"bench", "sideways"},
            new String[] {"bench", "rdma", "--sizes", "3MiB"},
            new String[] {"bench", "heal", "--trials", "0"},
            new String[] {"bench", "heal", "--seconds", "3"},
            new String[] {"example", "nothing"},
            new String[] {"version", "--yaml"},
            new String[] {"example", "kv-handoff", "--requests", "0"},
            new String[] {"example", "cluster", "--join", "sideways"},
            new String[] {"example", "cluster", "--pool-mib", "0"},
            new String[] {"demo", "--serve", "-5"},
            new String[] {"keygen", "only-a-name"},
            new String[] {"tlsgen", dir.resolve("tls-usage").toString()},
            new String[] {"tlsgen", dir.resolve("tls-usage").toString(), "not a name"},
            new String[] {"tlsgen", "--days", "3"})) {
      assertEquals(ExitCodes.USAGE, quietly(args), () -> "exit code of " + String.join(" ", args));
    }
    assertEquals(ExitCodes.PASS, quietly(new String[] {"help"}));
  }

  @Test
  @Timeout(120)
  void tlsgenWritesStoresWithWhichTwoEnginesReadOverMutualTls() throws Exception {
    Path tls = dir.resolve("tls");
    assertEquals(ExitCodes.PASS, quietly(new String[] {"tlsgen", tls.toString(), "gen-a"}));
    // A second run adds an engine under the same authority, and refuses to replace a store.
    assertEquals(ExitCodes.PASS, quietly(new String[] {"tlsgen", tls.toString(), "gen-b"}));
    assertEquals(ExitCodes.USAGE, quietly(new String[] {"tlsgen", tls.toString(), "gen-a"}));
    assertEquals(
        java.util.Set.of(
            java.nio.file.attribute.PosixFilePermission.OWNER_READ,
            java.nio.file.attribute.PosixFilePermission.OWNER_WRITE),
        Files.getPosixFilePermissions(tls.resolve("gen-a.p12")),
        "a key store is its owner's alone");
    java.util.function.Function<String, io.orbite.config.SecurityConfig> security =
        name ->
            io.orbite.config.SecurityConfig.defaults()
                .withTls(
                    tls.resolve(name + ".p12").toString(),
                    tls.resolve("trust.p12").toString(),
                    tls.resolve("password").toString());
    try (io.orbite.engine.TransferEngine a =
            io.orbite.engine.TransferEngine.start(
                io.orbite.config.EngineConfig.defaults()
                    .withName("gen-a")
                    .withSecurity(security.apply("gen-a")));
        io.orbite.engine.TransferEngine b =
            io.orbite.engine.TransferEngine.start(
                io.orbite.config.EngineConfig.defaults()
                    .withName("gen-b")
                    .withSecurity(security.apply("gen-b")))) {
      io.orbite.engine.RegisteredMemory source =
          a.allocate(1 << 20, io.orbite.engine.Access.READ_WRITE);
      io.orbite.qualification.verify.Pattern.fill(source.segment(), 0, 1 << 20, 17, 0);
      io.orbite.engine.RegisteredMemory local =
          b.allocate(1 << 20, io.orbite.engine.Access.READ_WRITE);
      io.orbite.qualification.verify.Pattern.fill(local.segment(), 0, 1 << 20, 3, 0);
      io.orbite.engine.RemoteSegment peer =
          b.openSegment(a.localSegment().endpoint(), java.time.Duration.ofSeconds(10));
      assertEquals("gen-a", peer.engineName());
      io.orbite.engine.Batch batch = b.allocateBatch(1);
      batch.submit(
          List.of(
              io.orbite.engine.TransferRequest.read(
                  local, 100, peer, source.regionId(), 4099, 500_000)));
      io.orbite.engine.BatchStatus st = batch.await(java.time.Duration.ofSeconds(30));
      batch.free();
      assertTrue(st.allCompleted(), st::toString);
      assertEquals(
          -1,
          io.orbite.qualification.verify.RegionCheck.check(
              local.segment(),
              List.of(new io.orbite.qualification.verify.Span(100, 500_000, 17, 4099)),
              3));
    }
  }

  @Test
  @Timeout(120)
  void aBadConfigurationExitsTwoNamingTheKey() throws Exception {
    Ran r = cli(Map.of("ORBITE_CONF", "{\"tcp\":{\"lanse\":2}}"), "demo");
    assertEquals(ExitCodes.USAGE, r.code(), r::output);
    assertTrue(
        r.output().contains("configuration error") && r.output().contains("lanse"), r::output);
  }

  @Test
  @Timeout(300)
  void aWrongByteExitsOne() throws Exception {
    Ran r =
        cli(
            Map.of(),
            "example",
            "kv-handoff",
            "--requests",
            "3",
            "--blocks",
            "2",
            "--page-kib",
            "64",
            "--pool-mib",
            "16",
            "--no-warmup",
            "--corrupt-one-block");
    assertEquals(ExitCodes.FAILED, r.code(), r::output);
    assertTrue(r.output().contains("RESULT: FAIL") && r.output().contains("MISMATCH"), r::output);
  }

  @Test
  @Timeout(120)
  void theLauncherWithoutAJdkExitsThree() throws Exception {
    Path launcher = Path.of("..", "orbite").toAbsolutePath().normalize();
    assertTrue(Files.isExecutable(launcher), launcher::toString);
    Path noJdks = Files.createDirectories(dir.resolve("no-jdks"));
    ProcessBuilder pb =
        new ProcessBuilder("bash", launcher.toString(), "version").redirectErrorStream(true);
    pb.environment().remove("JAVA_HOME");
    pb.environment().put("ORBITE_JVM_DIR", noJdks.toString());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the launcher did not end");
    assertEquals(ExitCodes.ENVIRONMENT, p.exitValue(), out);
    assertTrue(out.contains("no JDK >= 22 found"), out);
  }

  private static int quietly(String[] args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    PrintStream sink = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    System.setOut(sink);
    System.setErr(sink);
    try {
      return OrbiteCli.run(args);
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  /**
   * Runs the CLI in a JVM of its own, as {@code ./orbite} does, so its System.exit code is seen.
   */
  private Ran cli(Map<String, String> env, String... args) throws Exception {
    List<String> cmd =
        EngineProcess.javaCommand(
            EngineProcess.classPath(), OrbiteCli.class.getName(), List.of(args));
    Path log = dir.resolve("cli-" + System.nanoTime() + ".log");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().remove("ORBITE_CONF");
    pb.environment().putAll(env);
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the CLI JVM did not exit");
      return new Ran(p.exitValue(), Files.readString(log));
    } finally {
      p.destroyForcibly();
    }
  }
}
