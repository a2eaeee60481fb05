package io.orbite.qualification.qualify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The supervisor's handle on one {@link QualifyPeer}: it starts the launcher's command, stores each
 * {@code RECEIPT} line the peer prints, unchanged and at once, in the peer's receipts file, and
 * hands every other line to the command in progress. The wrapper's {@code EXITSTATUS} line gives
 * the peer's exit status once the wrapper has reaped it.
 */
final class PeerProcess {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration ANSWER = Duration.ofSeconds(180);

  private final Launcher launcher;
  private final String host;
  private final String key;
  private final Process process;
  private final PrintWriter in;
  private final BlockingQueue<String> answers = new LinkedBlockingQueue<>();
  private final BlockingQueue<JsonNode> receipts = new LinkedBlockingQueue<>();
  private final Path log;
  private volatile Integer exitStatus;
  private final long pid;
  private final String endpoint;
  private final String epoch;

  private PeerProcess(
      Launcher launcher,
      String host,
      String key,
      Process process,
      Path receiptsFile,
      Path log,
      String secret)
      throws IOException {
    this.launcher = launcher;
    this.host = host;
    this.key = key;
    this.process = process;
    this.log = log;
    this.in =
        new PrintWriter(
            new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), true);
    in.println("SECRET " + secret);
    BufferedWriter file =
        Files.newBufferedWriter(
            receiptsFile, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    BufferedReader out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    Thread.ofPlatform().daemon().name("qualify-" + key).start(() -> pump(out, file));
    String ready = answer("start");
    if (!ready.startsWith("READY ")) {
      process.destroyForcibly();
      throw new IOException(key + " did not start (first line: " + ready + "); see " + log);
    }
    JsonNode start = receipt("start", Duration.ofSeconds(5));
    this.pid = start.path("pid").asLong();
    String[] t = ready.split(" ");
    this.endpoint = t[1];
    this.epoch = t[2];
  }

  /** Starts the peer {@code key} ({@code role-gN}) on {@code host}. */
  static PeerProcess start(
      Launcher launcher,
      String host,
      String key,
      java.util.List<String> args,
      java.util.Map<String, String> env,
      Path caseDir,
      String secret)
      throws IOException {
    Launcher.Launch launch = launcher.command(host, env, launcher.peerCommand(host, args));
    Path log = caseDir.resolve(key + ".log");
    ProcessBuilder pb = new ProcessBuilder(launch.command()).redirectError(log.toFile());
    pb.environment().putAll(launch.env());
    return new PeerProcess(
        launcher, host, key, pb.start(), caseDir.resolve(key + ".jsonl"), log, secret);
  }

  private void pump(BufferedReader out, BufferedWriter file) {
    try (file) {
      String line;
      while ((line = out.readLine()) != null) {
        if (line.startsWith("RECEIPT ")) {
          String json = line.substring("RECEIPT ".length());
          file.write(json);
          file.newLine();
          file.flush();
          try {
            receipts.add(JSON.readTree(json));
          } catch (IOException e) {
            // Stored as it came; the verifier names the line. Nobody waits for it here.
          }
        } else if (line.startsWith("EXITSTATUS ")) {
          exitStatus = Integer.parseInt(line.substring("EXITSTATUS ".length()).trim());
        } else {
          answers.add(line);
        }
      }
    } catch (IOException | RuntimeException e) {
      answers.add("ERR the peer's output broke: " + e);
    } finally {
      answers.add("ERR " + key + " ended (its output closed); see " + log);
    }
  }

  private String answer(String what) throws IOException {
    try {
      String a = answers.poll(ANSWER.toSeconds(), TimeUnit.SECONDS);
      if (a == null) {
        throw new IOException(
            key + " did not answer '" + what + "' within " + ANSWER + "; see " + log);
      }
      return a;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted waiting for " + key, e);
    }
  }

  /**
   * Sends one command (and its extra lines); returns the words after OK, throws on anything else.
   */
  String call(String command, java.util.List<String> more) throws IOException {
    send(command, more);
    return result(command);
  }

  String call(String command) throws IOException {
    return call(command, java.util.List.of());
  }

  /** Sends a command without waiting for its answer ({@link #result} takes it). */
  void send(String command, java.util.List<String> more) {
    in.println(command);
    more.forEach(in::println);
    in.flush();
  }

  /** The answer of the command sent last. */
  String result(String command) throws IOException {
    String a = answer(command);
    if (a.equals("OK")) {
      return "";
    }
    if (a.startsWith("OK ")) {
      return a.substring(3);
    }
    throw new IOException(key + " answered '" + a + "' to '" + command + "'");
  }

  /**
   * Forgets the receipts received so far (they are in the file), so a wait sees only later ones.
   */
  void forgetReceipts() {
    receipts.clear();
  }

  /** Waits for the next receipt of {@code type}; receipts of other types are passed over. */
  JsonNode receipt(String type, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      while (true) {
        JsonNode r = receipts.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (r == null) {
          throw new IOException(key + " wrote no '" + type + "' receipt within " + timeout);
        }
        if (r.path("type").asText().equals(type)) {
          return r;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  /** SIGKILL to the peer's own PID, through the launcher. */
  void kill() throws IOException {
    launcher.kill(host, pid);
  }

  /**
   * Waits for the wrapper to reap the peer and end.
   *
   * @return the peer's exit status as its wrapper saw it, or null when it never said
   */
  Integer reap(Duration timeout) throws IOException {
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        throw new IOException(key + " (pid " + pid + ") did not end within " + timeout);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    // The pump may still be reading the last line: the stream ends right after the process.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (exitStatus == null && deadline - System.nanoTime() > 0) {
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    if (launcher.alive(host, pid)) {
      throw new IOException(key + " (pid " + pid + ") is still alive after its wrapper ended");
    }
    return exitStatus;
  }

  /** Ends the peer: SIGKILL of its PID if it still runs (its wrapper then ends); never throws. */
  void stop() {
    try {
      if (process.isAlive()) {
        launcher.kill(host, pid);
      }
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (IOException | InterruptedException | RuntimeException e) {
      process.destroyForcibly();
    }
  }

  long pid() {
    return pid;
  }

  String endpoint() {
    return endpoint;
  }

  String epoch() {
    return epoch;
  }

  String host() {
    return host;
  }

  String key() {
    return key;
  }

  boolean running() {
    return process.isAlive();
  }
}
