package io.orbite.qualification.example;

import io.orbite.qualification.harness.EngineProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The decode side's handle on the prefill process: a child JVM running {@link PrefillMain}, started
 * from this JVM's java, flags and class path (the launcher's {@code ORBITE_JAVA}, {@code
 * ORBITE_JVM_FLAGS}, {@code ORBITE_CLASSPATH} when set). Reads the published block locations;
 * closing it asks the child to quit and kills it if it does not. Its stderr goes to a log file.
 */
final class PrefillProcess implements AutoCloseable {
  private final Process process;
  private final Path log;
  private final BufferedReader out;
  private final PrintWriter in;
  private final String endpoint;
  private final long epoch;
  private final long regionId;
  private final long regionBytes;
  private final long layeredRegionId;
  private final long layeredBytes;
  private final List<KvBlock> blocks;
  private final long publishedBytes;

  /**
   * Kills the child if this JVM exits while it runs (it also exits by itself when its stdin
   * closes).
   */
  private final Thread killOnExit;

  private volatile boolean publishedInTime;

  private PrefillProcess(Process process, Path log, Duration publishWithin) throws IOException {
    this.process = process;
    this.log = log;
    this.killOnExit = new Thread(process::destroyForcibly, "prefill-" + process.pid() + "-reaper");
    Runtime.getRuntime().addShutdownHook(killOnExit);
    // A child that never publishes must not hold this process in readLine forever.
    CompletableFuture.runAsync(
        () -> {
          if (!publishedInTime) {
            process.destroyForcibly();
          }
        },
        CompletableFuture.delayedExecutor(publishWithin.toMillis(), TimeUnit.MILLISECONDS));
    this.out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    this.in =
        new PrintWriter(
            new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), true);
    try {
      String[] ready = expect("READY", 3);
      this.endpoint = ready[1];
      this.epoch = Long.parseUnsignedLong(ready[2], 16);
      String[] region = expect("REGION", 3);
      this.regionId = Long.parseLong(region[1]);
      this.regionBytes = Long.parseLong(region[2]);
      String[] layered = expect("LAYERED", 3);
      this.layeredRegionId = Long.parseLong(layered[1]);
      this.layeredBytes = Long.parseLong(layered[2]);
      List<KvBlock> list = new ArrayList<>();
      String line;
      while ((line = out.readLine()) != null && line.startsWith(KvBlock.TAG + " ")) {
        list.add(KvBlock.parse(line));
      }
      String[] published = words(line, "PUBLISHED", 3);
      if (Integer.parseInt(published[1]) != list.size()) {
        throw new IOException(
            "prefill published " + published[1] + " blocks but listed " + list.size());
      }
      this.blocks = List.copyOf(list);
      this.publishedBytes = Long.parseLong(published[2]);
      publishedInTime = true;
    } catch (IOException | RuntimeException e) {
      process.destroyForcibly();
      removeHook();
      throw e instanceof IOException io
          ? io
          : new IOException("prefill process: " + e.getMessage() + "; see " + log, e);
    }
  }

  /** Starts the prefill process for {@code plan} and waits until it has published every block. */
  static PrefillProcess start(KvPlan plan, KvLayers layers, boolean corruptOneBlock, Path logDir)
      throws IOException {
    List<String> args = new ArrayList<>(plan.toArgs());
    args.addAll(layers.toArgs());
    List<String> cmd =
        new ArrayList<>(
            EngineProcess.javaCommand(
                EngineProcess.classPath(), PrefillMain.class.getName(), args));
    if (corruptOneBlock) {
      cmd.add("--corrupt-one-block");
    }
    Files.createDirectories(logDir);
    Path log = logDir.resolve("prefill.log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
    // Producing the blocks runs at memory speed; allow a minute plus 30 s per GiB of pool.
    Duration publishWithin =
        Duration.ofSeconds(60 + 30 * ((plan.regionBytes() + layers.sourceBytes()) >> 30));
    return new PrefillProcess(pb.start(), log, publishWithin);
  }

  private String[] expect(String tag, int words) throws IOException {
    return words(out.readLine(), tag, words);
  }

  private String[] words(String line, String tag, int words) throws IOException {
    if (line == null) {
      throw new IOException("prefill process ended before '" + tag + "'; see " + log);
    }
    String[] t = line.trim().split("\\s+");
    if (!t[0].equals(tag) || t.length != words) {
      throw new IOException(
          "prefill process said '" + line + "' where '" + tag + "' was due; see " + log);
    }
    return t;
  }

  String endpoint() {
    return endpoint;
  }

  long epoch() {
    return epoch;
  }

  long regionId() {
    return regionId;
  }

  long regionBytes() {
    return regionBytes;
  }

  /** The layered region of the layer-by-layer phase. */
  long layeredRegionId() {
    return layeredRegionId;
  }

  long layeredBytes() {
    return layeredBytes;
  }

  /** The published blocks, in the order they were published. */
  List<KvBlock> blocks() {
    return blocks;
  }

  long publishedBytes() {
    return publishedBytes;
  }

  long pid() {
    return process.pid();
  }

  Path log() {
    return log;
  }

  /** Sends one command; returns the words after {@code OK}. */
  synchronized String call(String command) throws IOException {
    in.println(command);
    String answer = out.readLine();
    if (answer == null) {
      throw new IOException(
          "prefill process " + pid() + " ended during '" + command + "'; see " + log);
    }
    if (answer.equals("OK") || answer.startsWith("OK ")) {
      return answer.length() > 3 ? answer.substring(3) : "";
    }
    throw new IOException("prefill process answered '" + answer + "' to '" + command + "'");
  }

  /** The prefill JVM's JIT compile time so far, ms. */
  long jitMillis() throws IOException {
    return Long.parseLong(call("JIT").trim());
  }

  /**
   * Sends one command whose answer is any number of lines starting with {@code prefix}, then {@code
   * OK ...}; returns those lines, the OK line's words after {@code OK} last. Waits as long as the
   * command runs.
   */
  synchronized List<String> callLines(String command, String prefix) throws IOException {
    in.println(command);
    List<String> lines = new ArrayList<>();
    String answer;
    while ((answer = out.readLine()) != null && answer.startsWith(prefix + " ")) {
      lines.add(answer);
    }
    if (answer == null) {
      throw new IOException(
          "prefill process " + pid() + " ended during '" + command + "'; see " + log);
    }
    if (answer.equals("OK") || answer.startsWith("OK ")) {
      lines.add(answer.length() > 3 ? answer.substring(3) : "");
      return lines;
    }
    throw new IOException("prefill process answered '" + answer + "' to '" + command + "'");
  }

  /**
   * Asks the child to quit; kills it if it has not ended within 30 s. The child is gone afterwards.
   */
  @Override
  public void close() {
    removeHook();
    try {
      if (process.isAlive()) {
        call("QUIT");
        in.close();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    } finally {
      if (process.isAlive()) {
        process.destroyForcibly();
        try {
          process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  private void removeHook() {
    try {
      Runtime.getRuntime().removeShutdownHook(killOnExit);
    } catch (IllegalStateException shuttingDown) {
      // The hook runs anyway.
    }
  }
}
