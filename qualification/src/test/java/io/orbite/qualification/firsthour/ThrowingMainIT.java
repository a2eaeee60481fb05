package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.harness.EngineProcess;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM whose {@code main} throws after {@code TransferEngine.start}, with the engines still open,
 * exits by itself, and each engine is closed on the way out by its system's CoordinatedShutdown,
 * run from the JVM shutdown hook: the engine's own system runs on daemon threads, and so do the
 * threads the engine starts. An engine spawned in an application's system follows that system.
 */
class ThrowingMainIT {
  /** From the child's {@code THROWING} to its exit; an engine's close on the way out takes ms. */
  private static final Duration EXIT_WITHIN = Duration.ofSeconds(15);

  private static final List<String> ENGINES = List.of("throwing-source", "throwing-requester");

  @TempDir Path dir;

  @Test
  void aJvmWhoseMainThrowsAfterStartExitsAndClosesItsEnginesOnTheWayOut() throws Exception {
    Path file = dir.resolve("segment.bin");
    Files.write(file, new byte[64 * 1024]);
    // The engine's lifecycle lines (logger io.orbite.engine.TransferEngine, INFO) go to stderr,
    // which is the log file; stdout carries the child's own lines.
    Path logback = dir.resolve("logback.xml");
    Files.writeString(
        logback,
        """
        <configuration>
          <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
            <target>System.err</target>
            <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{24} - %msg%n</pattern></encoder>
          </appender>
          <logger name="io.orbite.engine.TransferEngine" level="INFO"/>
          <root level="WARN"><appender-ref ref="STDERR"/></root>
        </configuration>
        """);
    List<String> cmd =
        new ArrayList<>(
            EngineProcess.javaCommand(
                EngineProcess.classPath(), ThrowingApp.class.getName(), List.of(file.toString())));
    cmd.add(1, "-Dlogback.configurationFile=" + logback);
    Path log = dir.resolve("throwing-app.log");
    Process child = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
    List<String> out = new ArrayList<>();
    CountDownLatch throwing = new CountDownLatch(1);
    CompletableFuture<Void> reader =
        CompletableFuture.runAsync(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  synchronized (out) {
                    out.add(line);
                  }
                  if (line.equals("THROWING")) {
                    throwing.countDown();
                  }
                }
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    try {
      assertTrue(
          throwing.await(90, TimeUnit.SECONDS),
          () -> "the child did not reach its throw: " + lines(out) + "\n" + ChildLog.tail(log));
      long thrownAt = System.nanoTime();
      boolean exited = child.waitFor(EXIT_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
      long exitMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - thrownAt);
      assertTrue(
          exited,
          () ->
              "the JVM was still running "
                  + EXIT_WITHIN.toSeconds()
                  + " s after main threw; non-daemon threads when it threw: "
                  + lines(out).stream().filter(l -> l.startsWith("NON-DAEMON")).toList()
                  + "\n"
                  + ChildLog.tail(log));
      reader.get(10, TimeUnit.SECONDS);
      String said = Files.readString(log);
      assertEquals(
          1,
          child.exitValue(),
          () -> "an uncaught exception in main exits with status 1\n" + ChildLog.tail(log));
      assertTrue(
          said.contains(ThrowingApp.FAILURE), () -> "it died of its throw:\n" + ChildLog.tail(log));
      assertTrue(
          lines(out).stream().anyMatch(l -> l.startsWith("VERIFIED")), () -> lines(out) + "");
      assertEquals(
          List.of(),
          lines(out).stream().filter(l -> l.startsWith("NON-DAEMON")).toList(),
          "threads the engines (their systems, acceptors, lanes) keep alive besides main");
      // Proof the engines were closed, not merely ended with the process: each engine's close by
      // the JVM hook's CoordinatedShutdown completed and said what it still owed, nothing.
      for (String engine : ENGINES) {
        assertTrue(
            said.lines()
                .anyMatch(
                    l ->
                        l.contains("INFO")
                            && l.contains("engine " + engine + "@")
                            && l.contains("closed by CoordinatedShutdown (JvmExitReason)")
                            && l.contains("(closed): closed, owes nothing")),
            () -> engine + " was not closed on the way out (in " + exitMillis + " ms):\n" + said);
      }
      assertFalse(
          said.contains("goes on without engine"),
          () -> "a close on the way out was cut short:\n" + said);
    } finally {
      child.destroyForcibly();
    }
  }

  /**
   * The settings behind the exit: a started engine's own system is daemonic and runs its
   * CoordinatedShutdown from the JVM shutdown hook; a host's system is left as the host made it.
   */
  @Test
  void aStartedEnginesSystemIsDaemonicAndASpawnedEngineLeavesItsHostAsItWas() throws Exception {
    try (TransferEngine started =
        TransferEngine.start(EngineConfig.defaults().withName("daemonic-own"))) {
      var settings = started.system().settings().classicSettings();
      assertTrue(settings.Daemonicity(), "pekko.daemonic of the engine's own system");
      assertTrue(
          settings.JvmShutdownHooks(), "pekko.jvm-shutdown-hooks of the engine's own system");
      assertTrue(
          settings.config().getBoolean("pekko.coordinated-shutdown.run-by-jvm-shutdown-hook"),
          "run-by-jvm-shutdown-hook of the engine's own system");
    }
    ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "daemonic-host");
    try {
      TransferEngine spawned =
          TransferEngine.spawn(host, EngineConfig.defaults().withName("daemonic-spawned"));
      assertFalse(
          spawned.system().settings().classicSettings().Daemonicity(),
          "the host's system keeps its own pekko.daemonic (off by default)");
      spawned.close(Duration.ofSeconds(20));
    } finally {
      CoordinatedShutdown.get(Adapter.toClassic(host))
          .runAll(CoordinatedShutdown.unknownReason())
          .toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
    }
  }

  private static List<String> lines(List<String> out) {
    synchronized (out) {
      return List.copyOf(out);
    }
  }
}
