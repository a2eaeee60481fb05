package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The adversarial peers share no wire code with the engine: no source file of this package names
 * the engine's wire codecs ({@code io.orbite.engine.wire}) or a transport's internals ({@code
 * io.orbite.transport}). Their only description of the protocol is {@link Wire}, written from the
 * docs. A test that shared the engine's codec would share its mistakes.
 */
class AdversaryIndependenceTest {
  private static final Path SOURCES = Path.of("src/test/java/io/orbite/qualification/adversary");

  /** A class (or member) of the forbidden packages, imported or written out in full. */
  private static final Pattern USE =
      Pattern.compile("io\\.orbite\\.(engine\\.wire|transport)\\.[A-Za-z_*][\\w.*]*");

  @Test
  void noAdversarySourceUsesTheEnginesWireCodeOrATransportsInternals() throws IOException {
    assertTrue(
        Files.isDirectory(SOURCES),
        "run from the qualification module: " + SOURCES.toAbsolutePath());
    List<String> offending = new ArrayList<>();
    int files = 0;
    try (Stream<Path> all = Files.list(SOURCES)) {
      for (Path f : all.filter(p -> p.toString().endsWith(".java")).toList()) {
        files++;
        Matcher m = USE.matcher(Files.readString(f));
        while (m.find()) {
          offending.add(f.getFileName() + " uses " + m.group());
        }
      }
    }
    assertTrue(files >= 8, "found only " + files + " sources in " + SOURCES.toAbsolutePath());
    assertEquals(List.of(), offending);
  }
}
