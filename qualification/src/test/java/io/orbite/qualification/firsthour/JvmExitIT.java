package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.qualification.harness.EngineProcess;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM whose engines served metrics and a dashboard exits by itself once they are closed and its
 * actor systems terminated: nothing the engine started keeps it alive.
 */
class JvmExitIT {
  @TempDir Path dir;

  @Test
  void aJvmWithObservabilityExitsByItselfAfterCloseAndTerminate() throws Exception {
    List<String> cmd =
        EngineProcess.javaCommand(
            EngineProcess.classPath(), ObservedApp.class.getName(), List.of());
    Path log = dir.resolve("observed-app.log");
    Process child = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
    List<String> out = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        out.add(line);
        if (line.equals("CLOSED")) {
          break;
        }
      }
    }
    try {
      assertTrue(
          out.contains("CLOSED"),
          () -> "the child did not reach the end of main: " + out + "\n" + ChildLog.tail(log));
      assertTrue(out.stream().anyMatch(l -> l.startsWith("VERIFIED")), out::toString);
      boolean exited = child.waitFor(10, TimeUnit.SECONDS);
      // Threads still ending (a dispatcher finishing its system's termination) are listed too; they
      // only matter, as the likely culprits, when the JVM does not exit.
      assertTrue(
          exited,
          () ->
              "the JVM was still running 10 s after main returned; non-daemon threads when it "
                  + "returned: "
                  + out.stream().filter(l -> l.startsWith("NON-DAEMON")).toList()
                  + "\n"
                  + ChildLog.tail(log));
      assertEquals(0, child.exitValue(), () -> ChildLog.tail(log));
    } finally {
      child.destroyForcibly();
    }
  }
}
