package io.orbite.qualification.arch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.module.ModuleFinder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The module boundary as an application on the module path meets it: a consumer module that {@code
 * requires io.orbite.engine} is compiled with javac against the built modules. Written against the
 * API only, it compiles (so the API is usable, its types all reachable: {@code requires transitive}
 * does its job). Each consumer that names one internal type (an owner actor, the SPI, the wire
 * codec, the native bindings, a transport) fails, and javac says the package is not visible. A test
 * that could not fail would let both pass: the first consumer is the control.
 */
class ModuleBoundaryTest {
  private static String modulePath;

  /**
   * The product's modules and the libraries they require, picked from this JVM's class path. Only
   * these: every automatic module on a module path is resolved once one is, so unrelated test jars
   * (some with split packages) must stay off it.
   */
  @BeforeAll
  static void findModules() {
    List<String> picked = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      String name = Path.of(entry).getFileName().toString();
      boolean product =
          entry.matches(".*/(config|native-bindings|engine-actors|transport-actors)/target/classes")
              || name.matches(
                  "orbite-(config|native-bindings|engine-actors|transport-actors)-[0-9][^-]*(-SNAPSHOT)?\\.jar");
      boolean library =
          name.matches(
              "(pekko-(actor|actor-typed|stream|protobuf-v3|slf4j)_2\\.13|scala-library|config"
                  + "|slf4j-api|reactive-streams|jackson-(core|databind|annotations)|agrona)-[0-9].*\\.jar");
      if (product || library) {
        picked.add(entry);
      }
    }
    modulePath = String.join(java.io.File.pathSeparator, picked);
    var names =
        ModuleFinder.of(picked.stream().map(Path::of).toArray(Path[]::new)).findAll().stream()
            .map(m -> m.descriptor().name())
            .collect(Collectors.toSet());
    for (String needed :
        List.of(
            "io.orbite.config",
            "io.orbite.nativebind",
            "io.orbite.engine",
            "io.orbite.transport",
            "pekko.actor.typed",
            "pekko.stream")) {
      assertTrue(names.contains(needed), needed + " is not on the module path: " + names);
    }
  }

  /** Compiles {@code module consumer} with one class of {@code body}; javac's output, or "". */
  private static String compile(Path dir, String imports, String body) throws IOException {
    Path src = Files.createDirectories(dir.resolve("src/consumer/app"));
    Files.writeString(
        dir.resolve("src/module-info.java"),
        "module consumer { requires io.orbite.engine; requires io.orbite.transport; }\n");
    Files.writeString(
        src.resolve("App.java"),
        "package consumer.app;\n" + imports + "\npublic class App {\n" + body + "\n}\n");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int rc =
        javac.run(
            null,
            out,
            out,
            "--module-path",
            modulePath,
            "-d",
            dir.resolve("out").toString(),
            dir.resolve("src/module-info.java").toString(),
            src.resolve("App.java").toString());
    return rc == 0 ? "" : out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aConsumerOfTheApiCompilesOnTheModulePath(@TempDir Path dir) throws IOException {
    String errors =
        compile(
            dir,
            """
            import io.orbite.config.EngineConfig;
            import io.orbite.engine.*;
            import io.orbite.engine.streams.TransferStreams;
            import java.time.Duration;
            """,
            """
            static long run() {
              try (Engine e = TransferEngine.start(EngineConfig.defaults())) {
                RegisteredMemory m = e.allocate(4096, Access.READ_WRITE);
                RemoteSegment peer = e.openSegment(e.localSegment(), Duration.ofSeconds(5));
                Batch b = e.allocateBatch(1);
                b.submit(java.util.List.of(
                    TransferRequest.read(m, 0, peer, m.regionId(), 0, 16)));
                BatchStatus s = b.await(Duration.ofSeconds(5));
                EngineCounters c = e.counters();
                OwnerView v = e.ownerView();
                OwnerState state = v.owners().isEmpty() ? null : v.owners().get(0).state();
                EngineOwed owed = e.owed();
                Object stage = TransferStreams.class;
                return s.tasks().get(0).bytes() + c.tasksCompleted() + owed.loans()
                    + (state == null ? 0 : 1) + stage.hashCode();
              }
            }
            """);
    assertEquals("", errors, "the API alone must compile on the module path");
  }

  @Test
  void noInternalPackageIsVisibleToAConsumer(@TempDir Path dir) throws IOException {
    List<String> internal =
        Arrays.asList(
            "io.orbite.engine.registry.Registry",
            "io.orbite.engine.batch.BatchCore",
            "io.orbite.engine.guardian.EngineGuardian",
            "io.orbite.engine.segment.SegmentTable",
            "io.orbite.engine.admission.AdmissionGate",
            "io.orbite.engine.spi.Registration",
            "io.orbite.engine.spi.PeerChannel",
            "io.orbite.engine.wire.FrameCodec",
            "io.orbite.engine.view.OwnerBoard",
            "io.orbite.nativebind.libc.Libc",
            "io.orbite.transport.tcp.TcpTransport");
    int i = 0;
    for (String type : internal) {
      String pkg = type.substring(0, type.lastIndexOf('.'));
      String errors =
          compile(
              dir.resolve("c" + i++), "import " + type + ";", "static Object t() { return null; }");
      assertFalse(errors.isEmpty(), type + " must not be reachable from a consumer module");
      assertTrue(
          errors.contains("package " + pkg + " is not visible")
              || errors.contains("package " + pkg + " does not exist"),
          type + ": " + errors);
    }
  }
}
