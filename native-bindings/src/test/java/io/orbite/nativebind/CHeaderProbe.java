package io.orbite.nativebind;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.testkit.Prerequisite;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Test helper: compiles a tiny C program with gcc that prints {@code name=value} lines for C
 * integer expressions (sizeof, offsetof, constants), runs it, and returns the values. Used to check
 * layout classes and constants against the system headers.
 */
public final class CHeaderProbe {
  private CHeaderProbe() {}

  /** gcc on the PATH, if any. */
  public static Optional<Path> gcc() {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, "gcc");
      if (Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** What a test that needs gcc says when it is absent (see {@link Prerequisite}). */
  public static String gccAbsentMessage(String what) {
    return "gcc not found on PATH, so "
        + what
        + " cannot be checked against the system headers"
        + " (apt-get install gcc libc6-dev; .ci/run and ./orbite test install them as root)";
  }

  /**
   * Compiles and runs a program that {@code #include}s {@code headers} (after {@code #define
   * _GNU_SOURCE}) and prints each expression as a {@code long long}.
   */
  public static Map<String, Long> probe(
      Path gcc, Path workDir, List<String> headers, Map<String, String> expressions)
      throws IOException, InterruptedException {
    StringBuilder c =
        new StringBuilder("#define _GNU_SOURCE\n#include <stdio.h>\n#include <stddef.h>\n");
    for (String h : headers) {
      c.append("#include <").append(h).append(">\n");
    }
    c.append("int main(void) {\n");
    for (Map.Entry<String, String> e : expressions.entrySet()) {
      c.append("  printf(\"%s=%lld\\n\", \"")
          .append(e.getKey())
          .append("\", (long long)(")
          .append(e.getValue())
          .append("));\n");
    }
    c.append("  return 0;\n}\n");
    Path source = workDir.resolve("probe.c");
    Path binary = workDir.resolve("probe");
    Files.writeString(source, c.toString(), StandardCharsets.US_ASCII);

    String compileOut =
        run(List.of(gcc.toString(), "-O0", "-o", binary.toString(), source.toString()), workDir);
    if (!Files.isExecutable(binary)) {
      throw new AssertionError(
          "gcc failed to compile the probe:\n" + compileOut + "\n--- source ---\n" + c);
    }
    String out = run(List.of(binary.toString()), workDir);
    Map<String, Long> values = new LinkedHashMap<>();
    for (String line : out.split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        values.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1).trim()));
      }
    }
    assertEquals(expressions.keySet(), values.keySet(), "probe output:\n" + out);
    return values;
  }

  private static String run(List<String> command, Path dir)
      throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("timed out: " + command);
    }
    String text = new String(out, StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new AssertionError(command + " exited " + p.exitValue() + ":\n" + text);
    }
    return text;
  }
}
