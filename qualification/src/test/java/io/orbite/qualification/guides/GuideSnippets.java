package io.orbite.qualification.guides;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Extracts the {@code ```java} blocks of a guide and compiles them, following the convention each
 * guide states in its opening HTML comment:
 *
 * <ul>
 *   <li>A snippet that declares a top-level type (a line starting with {@code class}, {@code
 *       record}, {@code interface} or {@code enum}, optionally after {@code public}/{@code final}/
 *       {@code abstract}) is a whole compilation unit, named after its first such type.
 *   <li>Any other snippet is a method body. It is wrapped as {@code final class Snippet<N> { void
 *       run(ActorSystem<?> system, TransferEngine engine, RemoteSegment remote, long regionId,
 *       RegisteredMemory local) throws Exception { ... } }}.
 *   <li>Every snippet gets {@link #STANDARD_IMPORTS}; {@code import} lines at its top are kept
 *       (hoisted above the wrapper for method bodies). No {@code package} line.
 * </ul>
 */
final class GuideSnippets {
  static final List<String> STANDARD_IMPORTS =
      List.of(
          "io.orbite.config.*",
          "io.orbite.engine.*",
          "io.orbite.engine.streams.*",
          "java.lang.foreign.*",
          "java.time.Duration",
          "java.util.ArrayList",
          "java.util.List",
          "java.util.concurrent.CompletableFuture",
          "java.util.concurrent.CompletionStage",
          "java.util.concurrent.TimeUnit",
          "com.typesafe.config.Config",
          "com.typesafe.config.ConfigFactory",
          "org.apache.pekko.Done",
          "org.apache.pekko.NotUsed",
          "org.apache.pekko.japi.Pair",
          "org.apache.pekko.actor.CoordinatedShutdown",
          "org.apache.pekko.actor.typed.ActorSystem",
          "org.apache.pekko.actor.typed.javadsl.Adapter",
          "org.apache.pekko.actor.typed.javadsl.Behaviors",
          "org.apache.pekko.stream.KillSwitches",
          "org.apache.pekko.stream.UniqueKillSwitch",
          "org.apache.pekko.stream.javadsl.*");

  static final String RUN_SIGNATURE =
      "void run(ActorSystem<?> system, TransferEngine engine, RemoteSegment remote, "
          + "long regionId, RegisteredMemory local) throws Exception";

  private static final Pattern BLOCK =
      Pattern.compile("(?m)^```java[ \\t]*\\n(.*?)^```[ \\t]*$", Pattern.DOTALL);
  private static final Pattern TOP_LEVEL_TYPE =
      Pattern.compile(
          "(?m)^(?:(?:public|final|abstract|sealed)\\s+)*(?:class|record|interface|enum)\\s+([A-Za-z_$][A-Za-z0-9_$]*)");

  /**
   * One {@code ```java} block: where it starts in the guide (1-based line of its first code line)
   * and its text.
   */
  record Snippet(String guide, int index, int line, String code) {
    boolean wholeUnit() {
      return TOP_LEVEL_TYPE.matcher(code).find();
    }

    String className() {
      Matcher m = TOP_LEVEL_TYPE.matcher(code);
      return m.find() ? m.group(1) : wrapperName();
    }

    String wrapperName() {
      return "Snippet_" + guide.replaceAll("[^A-Za-z0-9]", "_") + "_" + index;
    }

    /** The compilation unit, and how many lines precede the snippet's first line in it. */
    Unit unit() {
      List<String> lines = new ArrayList<>(List.of(code.split("\n", -1)));
      List<String> imports = new ArrayList<>();
      if (!wholeUnit()) {
        while (!lines.isEmpty() && (lines.get(0).startsWith("import ") || lines.get(0).isBlank())) {
          imports.add(lines.remove(0));
        }
      }
      StringBuilder b = new StringBuilder();
      int prefix = 0;
      for (String i : STANDARD_IMPORTS) {
        b.append("import ").append(i).append(";\n");
        prefix++;
      }
      for (String i : imports) {
        b.append(i).append('\n');
        prefix++;
      }
      if (wholeUnit()) {
        b.append(String.join("\n", lines)).append('\n');
        return new Unit(className(), b.toString(), prefix, 0);
      }
      b.append("@SuppressWarnings(\"unused\")\nfinal class ")
          .append(wrapperName())
          .append(" {\n  ")
          .append(RUN_SIGNATURE)
          .append(" {\n");
      prefix += 3;
      b.append(String.join("\n", lines)).append("\n  }\n}\n");
      return new Unit(wrapperName(), b.toString(), prefix, imports.size());
    }
  }

  /**
   * @param prefixLines lines of the unit before the snippet's body starts
   * @param hoisted import lines taken from the snippet's top (they count as snippet lines too)
   */
  record Unit(String className, String source, int prefixLines, int hoisted) {}

  private GuideSnippets() {}

  /**
   * The guides directory: {@code docs/guides} in the first ancestor of the working directory that
   * has it.
   */
  static Path guidesDir() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null) {
      Path candidate = dir.resolve("docs").resolve("guides");
      if (Files.isDirectory(candidate)) {
        return candidate;
      }
      dir = dir.getParent();
    }
    throw new IllegalStateException("no docs/guides above " + Path.of("").toAbsolutePath());
  }

  static List<Snippet> extract(Path guide) throws IOException {
    String text = Files.readString(guide, StandardCharsets.UTF_8).replace("\r\n", "\n");
    List<Snippet> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      int line = 1 + (int) text.substring(0, m.start(1)).chars().filter(c -> c == '\n').count();
      out.add(new Snippet(guide.getFileName().toString(), out.size() + 1, line, m.group(1)));
    }
    return out;
  }

  /** The class path to compile against: the test JVM's (surefire sets java.class.path to it). */
  static String classPath() {
    String cp = System.getProperty("java.class.path", "");
    String surefire = System.getProperty("surefire.test.class.path");
    if (surefire != null && !surefire.isBlank() && !cp.contains("orbite")) {
      return surefire;
    }
    return cp;
  }

  /**
   * Compiles every snippet of {@code snippets} together into {@code out}.
   *
   * @return an empty string on success, else every diagnostic with the guide line it points at
   */
  static String compile(List<Snippet> snippets, Path out) throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      throw new IllegalStateException("no system Java compiler: run the tests on a JDK, not a JRE");
    }
    List<JavaFileObject> units = new ArrayList<>();
    List<Unit> built = new ArrayList<>();
    for (Snippet s : snippets) {
      Unit u = s.unit();
      built.add(u);
      units.add(
          new SimpleJavaFileObject(
              URI.create("string:///" + u.className() + ".java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
              return u.source();
            }
          });
    }
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    List<String> options =
        List.of(
            "-classpath",
            classPath(),
            "-d",
            out.toString(),
            "-proc:none",
            "-Xlint:none",
            "--release",
            String.valueOf(Math.min(Runtime.version().feature(), 22)));
    boolean ok;
    try (StandardJavaFileManager files =
        javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
      ok = javac.getTask(null, files, diagnostics, options, null, units).call();
    }
    if (ok) {
      return "";
    }
    return diagnostics.getDiagnostics().stream()
        .filter(d -> d.getKind() == Diagnostic.Kind.ERROR)
        .map(d -> describe(d, snippets, built))
        .collect(Collectors.joining("\n\n"));
  }

  private static String describe(
      Diagnostic<? extends JavaFileObject> d, List<Snippet> snippets, List<Unit> built) {
    String where = "(unknown snippet)";
    String unitText = "";
    if (d.getSource() != null) {
      String name = d.getSource().getName();
      for (int i = 0; i < built.size(); i++) {
        Unit u = built.get(i);
        if (name.endsWith("/" + u.className() + ".java")) {
          Snippet s = snippets.get(i);
          long inUnit = d.getLineNumber();
          long guideLine = inUnit - u.prefixLines() + u.hoisted() + s.line() - 1;
          where =
              s.guide()
                  + " line "
                  + guideLine
                  + " (snippet "
                  + s.index()
                  + ", starting at line "
                  + s.line()
                  + ")";
          unitText = numbered(u.source());
        }
      }
    }
    return where + ": " + d.getMessage(Locale.ROOT) + "\n--- compiled as:\n" + unitText;
  }

  private static String numbered(String source) {
    String[] lines = source.split("\n", -1);
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < lines.length; i++) {
      b.append(String.format("%4d  %s%n", i + 1, lines[i]));
    }
    return b.toString();
  }
}
