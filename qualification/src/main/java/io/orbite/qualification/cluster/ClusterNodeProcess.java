package io.orbite.qualification.cluster;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A child JVM running {@link ClusterNode}, started with this JVM's java, class path and flags (as
 * {@link EngineProcess} starts engines) and driven over its standard streams; its logs go to a file
 * in the run's log directory. {@link #launch} starts the JVM without waiting, so that a cluster's
 * nodes start side by side; {@link #awaitReady} then reads its {@code READY} line.
 */
public final class ClusterNodeProcess implements AutoCloseable {
  private final NodeSpec spec;
  private final Path logDir;
  private final int generation;
  private final Process process;
  private final Path log;
  private final BufferedReader out;
  private final PrintWriter in;
  private String endpoint;
  private long epoch;
  private String member;

  private ClusterNodeProcess(NodeSpec spec, Path logDir, int generation) throws IOException {
    this.spec = spec;
    this.logDir = logDir;
    this.generation = generation;
    Files.createDirectories(logDir);
    this.log = logDir.resolve(spec.name() + (generation > 1 ? "-gen" + generation : "") + ".log");
    ProcessBuilder pb =
        new ProcessBuilder(
                EngineProcess.javaCommand(
                    EngineProcess.classPath(), ClusterNode.class.getName(), spec.toArgs()))
            .redirectError(log.toFile());
    this.process = pb.start();
    this.out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    this.in =
        new PrintWriter(
            new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), true);
  }

  /**
   * Starts the node's JVM and returns at once; call {@link #awaitReady} before any command.
   *
   * @param spec the node
   * @param logDir where its log goes ({@code <name>.log})
   * @return the process
   * @throws IOException when the JVM cannot be started
   */
  public static ClusterNodeProcess launch(NodeSpec spec, Path logDir) throws IOException {
    return new ClusterNodeProcess(spec, logDir, 1);
  }

  /**
   * Waits for the node's {@code READY} line: its engine serves its regions, it has asked to join
   * the cluster and joined the directory.
   *
   * @param timeout how long to wait
   * @return this
   * @throws IOException when the node ended, said something else or was not ready in time (it is
   *     then killed); the message names its log
   */
  public ClusterNodeProcess awaitReady(Duration timeout) throws IOException {
    String ready = readLine(timeout, "start");
    if (ready == null || !ready.startsWith("READY ")) {
      process.destroyForcibly();
      throw new IOException(
          "cluster node " + spec.name() + " did not start (first line: " + ready + "); see " + log);
    }
    String[] t = ready.split(" ");
    endpoint = t[1];
    epoch = Long.parseUnsignedLong(t[2], 16);
    member = t[3];
    return this;
  }

  /**
   * Starts the next incarnation of this node, with the same spec (the same member address and
   * engine port), once this one has died; returns at once, as {@link #launch} does.
   *
   * @return the new process
   * @throws IOException when the JVM cannot be started
   */
  public ClusterNodeProcess restart() throws IOException {
    if (process.isAlive()) {
      throw new IllegalStateException(
          "cluster node " + spec.name() + " (pid " + process.pid() + ") is still alive");
    }
    return new ClusterNodeProcess(spec, logDir, generation + 1);
  }

  /**
   * Sends one command and returns its answer line, whatever it says.
   *
   * @param command the command line ({@link ClusterNode}'s protocol)
   * @param timeout how long to wait for the answer
   * @return the answer
   * @throws IOException when the node ended or did not answer in time
   */
  public synchronized String ask(String command, Duration timeout) throws IOException {
    in.println(command);
    String answer = readLine(timeout, command);
    if (answer == null) {
      throw new IOException(
          "cluster node " + spec.name() + " ended during '" + command + "'; see " + log);
    }
    return answer;
  }

  /**
   * Sends one command and returns the words after {@code OK}.
   *
   * @param command the command line
   * @param timeout how long to wait for the answer
   * @return the answer after {@code OK }
   * @throws IOException on any other answer, naming the command, the answer and the log
   */
  public String call(String command, Duration timeout) throws IOException {
    String answer = ask(command, timeout);
    if (answer.equals("OK")) {
      return "";
    }
    if (answer.startsWith("OK ")) {
      return answer.substring(3);
    }
    throw new IOException(
        spec.name() + " answered '" + answer + "' to '" + command + "'; see " + log);
  }

  private String readLine(Duration timeout, String during) throws IOException {
    CompletableFuture<String> line =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return out.readLine();
              } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            },
            r -> Thread.ofPlatform().daemon().name("node-reader-" + spec.name()).start(r));
    try {
      return line.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      process.destroyForcibly();
      throw new IOException(
          "cluster node "
              + spec.name()
              + " did not answer '"
              + during
              + "' within "
              + timeout
              + " (killed); see "
              + log);
    } catch (ExecutionException e) {
      throw new IOException("reading cluster node " + spec.name() + ": " + e.getCause(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted waiting for " + spec.name(), e);
    }
  }

  /** SIGKILL: the JVM dies at once, its member and engine without a goodbye. */
  public void kill() {
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The node's spec.
   *
   * @return its spec
   */
  public NodeSpec spec() {
    return spec;
  }

  /**
   * The engine's name.
   *
   * @return the name
   */
  public String name() {
    return spec.name();
  }

  /**
   * Where the engine listens ({@code host:port}), from the READY line.
   *
   * @return the endpoint
   */
  public String endpoint() {
    return endpoint;
  }

  /**
   * The engine's epoch, from the READY line; its {@code kv-pool} holds the pattern of this seed.
   *
   * @return the epoch
   */
  public long epoch() {
    return epoch;
  }

  /**
   * The epoch as the protocol writes it.
   *
   * @return lower-case hex
   */
  public String epochHex() {
    return Long.toHexString(epoch);
  }

  /**
   * The cluster member's address, from the READY line.
   *
   * @return {@code pekko://orbite@host:port}
   */
  public String member() {
    return member;
  }

  /**
   * The JVM's process id.
   *
   * @return the pid
   */
  public long pid() {
    return process.pid();
  }

  /**
   * Whether the JVM runs.
   *
   * @return true while it runs
   */
  public boolean alive() {
    return process.isAlive();
  }

  /**
   * The node's log file.
   *
   * @return its path
   */
  public Path log() {
    return log;
  }

  /** Asks the node to QUIT (it closes its directory and system) and kills it if it lingers. */
  @Override
  public void close() {
    try {
      if (process.isAlive()) {
        synchronized (this) {
          in.println("QUIT");
          in.flush();
        }
        process.waitFor(30, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      if (process.isAlive()) {
        process.destroyForcibly();
      }
    }
  }
}
