package io.orbite.qualification.harness;

import io.orbite.qualification.verify.Span;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM running {@link EngineMain}, started from this JVM's own java and class path, and
 * driven over its standard streams. Its stderr (logs) goes to a file, so a failing run can be
 * diagnosed.
 */
public final class EngineProcess implements AutoCloseable {
  private final Process process;
  private final BufferedReader out;
  private final PrintWriter in;
  private final String endpoint;
  private final long epoch;
  private final Path log;
  private final String name;
  private final Path logDir;
  private final java.util.Map<String, String> env;
  private final int generation;

  private EngineProcess(
      Process process,
      Path log,
      String name,
      Path logDir,
      java.util.Map<String, String> env,
      int generation)
      throws IOException {
    this.process = process;
    this.log = log;
    this.name = name;
    this.logDir = logDir;
    this.env = java.util.Map.copyOf(env);
    this.generation = generation;
    this.out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    this.in =
        new PrintWriter(
            new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), true);
    String ready = out.readLine();
    if (ready == null || !ready.startsWith("READY ")) {
      process.destroyForcibly();
      throw new IOException("engine process did not start (first line: " + ready + "); see " + log);
    }
    String[] t = ready.split(" ");
    this.endpoint = t[1];
    this.epoch = Long.parseUnsignedLong(t[2], 16);
  }

  /**
   * Starts an engine process named {@code name}.
   *
   * @param env extra environment, e.g. {@code ORBITE_CONF}
   */
  public static EngineProcess start(String name, Path logDir, java.util.Map<String, String> env)
      throws IOException {
    return launch(name, logDir, env, 1);
  }

  /**
   * Starts an engine process that listens on {@code port} (so a replacement can take the same
   * endpoint).
   */
  public static EngineProcess startAt(
      String name, Path logDir, int port, java.util.Map<String, String> env) throws IOException {
    java.util.Map<String, String> withPort = new java.util.HashMap<>(env);
    withPort.put("ORBITE_CONF", withListenPort(env.get("ORBITE_CONF"), port));
    return launch(name, logDir, withPort, 1);
  }

  /**
   * Starts an engine process under a launcher command, e.g. {@code ip netns exec <ns>} to put it in
   * a network namespace of its own; the engine's java command line follows {@code wrapper}.
   */
  public static EngineProcess startWrapped(
      String name, Path logDir, java.util.Map<String, String> env, List<String> wrapper)
      throws IOException {
    return launch(name, logDir, env, 1, wrapper);
  }

  private static EngineProcess launch(
      String name, Path logDir, java.util.Map<String, String> env, int generation)
      throws IOException {
    return launch(name, logDir, env, generation, List.of());
  }

  private static EngineProcess launch(
      String name,
      Path logDir,
      java.util.Map<String, String> env,
      int generation,
      List<String> wrapper)
      throws IOException {
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.addAll(javaCommand(classPath(), EngineMain.class.getName(), List.of(name)));
    java.nio.file.Files.createDirectories(logDir);
    Path log = logDir.resolve(name + (generation > 1 ? "-gen" + generation : "") + ".log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
    pb.environment().putAll(env);
    return new EngineProcess(pb.start(), log, name, logDir, env, generation);
  }

  /** {@code conf} (a JSON document or null) with {@code listen.port} set to {@code port}. */
  private static String withListenPort(String conf, int port) throws IOException {
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    var root =
        conf == null || conf.isBlank()
            ? mapper.createObjectNode()
            : (com.fasterxml.jackson.databind.node.ObjectNode) mapper.readTree(conf);
    var listen =
        root.has("listen")
            ? (com.fasterxml.jackson.databind.node.ObjectNode) root.get("listen")
            : root.putObject("listen");
    listen.put("port", port);
    return mapper.writeValueAsString(root);
  }

  /**
   * Starts the next generation of this engine at the same endpoint, after this one has died: a
   * fresh process with a fresh epoch, the same name, environment and port.
   */
  public EngineProcess restart() throws IOException {
    if (process.isAlive()) {
      throw new IllegalStateException("engine process " + pid() + " is still alive; kill it first");
    }
    return launch(name, logDir, env, generation + 1);
  }

  /** SIGSTOP: the process freezes with its sockets open (a stalled peer). */
  public void stop() {
    io.orbite.nativebind.libc.Libc.kill(
        (int) process.pid(), io.orbite.nativebind.libc.Libc.SIGSTOP);
    // The signal is delivered asynchronously: return only once every thread has stopped, so that
    // nothing the caller does next can still be served by the process.
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (!allThreadsStopped()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "engine process " + pid() + " did not stop within 10 s of SIGSTOP");
      }
      Thread.onSpinWait();
    }
  }

  /** Whether every thread of the process is in state T (stopped) per /proc/PID/task/TID/stat. */
  private boolean allThreadsStopped() {
    java.nio.file.Path tasks = java.nio.file.Path.of("/proc", Long.toString(process.pid()), "task");
    try (var dirs = java.nio.file.Files.list(tasks)) {
      for (java.nio.file.Path t : (Iterable<java.nio.file.Path>) dirs::iterator) {
        String stat;
        try {
          stat = java.nio.file.Files.readString(t.resolve("stat"));
        } catch (java.nio.file.NoSuchFileException gone) {
          continue;
        }
        // The state follows the command name, which is in parentheses and may hold spaces.
        char state = stat.charAt(stat.lastIndexOf(')') + 2);
        if (state != 'T' && state != 't') {
          return false;
        }
      }
      return true;
    } catch (IOException e) {
      return !process.isAlive();
    }
  }

  /** SIGCONT: a stopped process runs again. */
  public void resume() {
    io.orbite.nativebind.libc.Libc.kill(
        (int) process.pid(), io.orbite.nativebind.libc.Libc.SIGCONT);
  }

  /** Which incarnation this is: 1 for the first start, then one more per {@link #restart()}. */
  public int generation() {
    return generation;
  }

  public boolean alive() {
    return process.isAlive();
  }

  /** The java to start child engines with: the launcher's, else this JVM's. */
  public static String javaBinary() {
    String fromLauncher = System.getenv("ORBITE_JAVA");
    if (fromLauncher != null && !fromLauncher.isBlank()) {
      return fromLauncher;
    }
    return ProcessHandle.current()
        .info()
        .command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
  }

  /**
   * The command that runs {@code mainClass} with {@code args} in a child JVM: {@link #javaBinary},
   * {@link #jvmFlags} and {@code classPath}.
   */
  public static List<String> javaCommand(String classPath, String mainClass, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(javaBinary());
    cmd.addAll(jvmFlags());
    cmd.addAll(List.of("-cp", classPath, mainClass));
    cmd.addAll(args);
    return cmd;
  }

  /** The class path for child engines: the launcher's, else this JVM's. */
  public static String classPath() {
    String fromLauncher = System.getenv("ORBITE_CLASSPATH");
    return fromLauncher != null && !fromLauncher.isBlank()
        ? fromLauncher
        : System.getProperty("java.class.path");
  }

  /**
   * JVM flags for child engines: the launcher's, else native access, jdk.internal.misc for Artery's
   * Agrona queues (cluster nodes) and Unsafe on 23+.
   */
  public static List<String> jvmFlags() {
    String flags = System.getenv("ORBITE_JVM_FLAGS");
    if (flags != null && !flags.isBlank()) {
      return Arrays.asList(flags.trim().split("\\s+"));
    }
    List<String> out =
        new ArrayList<>(
            List.of(
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED"));
    if (Runtime.version().feature() >= 23) {
      out.add("--sun-misc-unsafe-memory-access=allow");
    }
    return out;
  }

  public String endpoint() {
    return endpoint;
  }

  public long epoch() {
    return epoch;
  }

  public long pid() {
    return process.pid();
  }

  public Path log() {
    return log;
  }

  /** Sends one command and returns the words after {@code OK}; throws on anything else. */
  public synchronized String call(String command, String... moreLines) throws IOException {
    in.println(command);
    for (String l : moreLines) {
      in.println(l);
    }
    String answer = out.readLine();
    if (answer == null) {
      throw new IOException(
          "engine process " + pid() + " ended during '" + command + "'; see " + log);
    }
    if (answer.equals("OK")) {
      return "";
    }
    if (answer.startsWith("OK ")) {
      return answer.substring(3);
    }
    throw new IOException("engine process answered '" + answer + "' to '" + command + "'");
  }

  /** Like {@link #call} but returns the raw answer line (for VERIFY's MISMATCH). */
  public synchronized String ask(String command, List<String> moreLines) throws IOException {
    in.println(command);
    moreLines.forEach(in::println);
    in.flush();
    String answer = out.readLine();
    if (answer == null) {
      throw new IOException(
          "engine process " + pid() + " ended during '" + command + "'; see " + log);
    }
    return answer;
  }

  /**
   * Checks this engine's whole region {@code regionId} ({@code VERIFY}): each span holds its
   * pattern, every other byte the guard pattern {@code guardSeed}.
   *
   * @return {@code "OK"}, or {@code "MISMATCH <index>"} naming the first wrong byte
   */
  public String verify(long regionId, long guardSeed, List<Span> spans) throws IOException {
    List<String> lines =
        spans.stream()
            .map(s -> s.offset() + " " + s.length() + " " + s.seed() + " " + s.from())
            .toList();
    return ask("VERIFY " + regionId + " " + guardSeed + " " + spans.size(), lines);
  }

  /** SIGKILL: the process dies at once, without closing anything (a real peer death). */
  public void kill() {
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    try {
      if (process.isAlive()) {
        // A stopped process cannot answer QUIT; let it run first. Its answer is not awaited: a
        // process that cannot close is ended below rather than waited on for ever.
        resume();
        synchronized (this) {
          in.println("QUIT");
          in.flush();
        }
        process.waitFor(40, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      // Fall through to the forced end below.
    } finally {
      if (process.isAlive()) {
        process.destroyForcibly();
      }
    }
  }
}
