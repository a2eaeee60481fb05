package io.orbite.qualification.guides;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * An engine embedded in a serving application's ActorSystem: it transfers, joins the host's
 * CoordinatedShutdown, is really closed by it (its port refuses connections), and reports what it
 * still owes, also when the shutdown phase is too short for its close.
 */
class EmbeddingIT {
  private static final long KIB = 1024;
  private static final long SEED_SRC = 0xE3BE_0001L;
  private static final long SEED_LOCAL = 0xE3BE_0002L;
  private static final Duration OPEN = Duration.ofSeconds(10);
  private static final Duration AWAIT = Duration.ofSeconds(15);

  private Logger engineLog;
  private Level savedLevel;
  private ListAppender<ILoggingEvent> logged;

  @BeforeEach
  void captureEngineLog() {
    engineLog = (Logger) LoggerFactory.getLogger(TransferEngine.class);
    savedLevel = engineLog.getLevel();
    engineLog.setLevel(Level.INFO);
    logged = new ListAppender<>();
    logged.start();
    engineLog.addAppender(logged);
  }

  @AfterEach
  void releaseEngineLog() {
    engineLog.detachAppender(logged);
    engineLog.setLevel(savedLevel);
  }

  @Test
  void aSpawnedEngineTransfersAndTheHostsCoordinatedShutdownClosesIt() throws Exception {
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("embed-source"));
    ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "embed-host");
    try {
      TransferEngine engine =
          TransferEngine.spawn(host, EngineConfig.defaults().withName("embedded"));
      assertSame(host, engine.system(), "a spawned engine runs in the host's system");
      long srcLen = 256 * KIB;
      long localLen = 128 * KIB;
      RegisteredMemory src = guarded(source, srcLen, SEED_SRC);
      RegisteredMemory local = guarded(engine, localLen, SEED_LOCAL);
      RemoteSegment remote = engine.openSegment(source.localSegment().endpoint(), OPEN);

      Batch batch = engine.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 4 * KIB, remote, src.regionId(), 10 * KIB, 64 * KIB),
              TransferRequest.write(local, 96 * KIB, remote, src.regionId(), 200 * KIB, 16 * KIB)));
      BatchStatus status = batch.await(AWAIT);
      assertTrue(status.allCompleted(), () -> "both tasks complete: " + status);
      assertEquals(80 * KIB, status.completedBytes());
      assertRegion(
          local.segment(),
          List.of(new Span(4 * KIB, 64 * KIB, SEED_SRC, 10 * KIB)),
          SEED_LOCAL,
          "embedded engine's region after its READ");
      assertRegion(
          src.segment(),
          List.of(new Span(200 * KIB, 16 * KIB, SEED_LOCAL, 96 * KIB)),
          SEED_SRC,
          "source region after the embedded engine's WRITE");

      EngineOwed withBatch = engine.owed();
      assertAll(
          "owed with a finished batch not yet freed: " + withBatch,
          () -> assertEquals(EngineOwed.Phase.RUNNING, withBatch.phase()),
          () -> assertTrue(withBatch.live()),
          () -> assertEquals(1, withBatch.batches()),
          () -> assertEquals(0, withBatch.tasksInFlight()),
          () -> assertEquals(0, withBatch.bytesInFlight()),
          () -> assertEquals(1, withBatch.endpoints()),
          () -> assertEquals(1, withBatch.registrations()),
          () -> assertEquals(0, withBatch.loans()),
          () -> assertTrue(withBatch.isIdle()),
          () -> assertFalse(withBatch.isClear()),
          () ->
              assertTrue(
                  withBatch.toString().contains("1 batch(es), 0 task(s) / 0 B in flight"),
                  withBatch::toString));
      batch.free();
      assertEquals(0, engine.owed().batches(), "a freed batch is no longer charged");

      // The engine is left open on purpose: the host's shutdown must close it.
      int port = engine.localSegment().port();
      assertAccepts(port);
      CompletableFuture<Done> shutdown =
          CoordinatedShutdown.get(Adapter.toClassic(host))
              .runAll(CoordinatedShutdown.unknownReason())
              .toCompletableFuture();
      shutdown.get(30, TimeUnit.SECONDS);
      host.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);

      assertRefuses(port, "the embedded engine's listener after the host's CoordinatedShutdown");
      EngineOwed after = engine.owed();
      assertEquals(EngineOwed.Phase.CLOSED, after.phase(), after::toString);
      assertTrue(after.isClear(), () -> "a cleanly closed engine owes nothing: " + after);
      assertTrue(
          ((Registration) local).released(), "the close freed the engine-owned memory nobody held");
      long t0 = System.nanoTime();
      engine.close(Duration.ofSeconds(5));
      assertTrue(
          System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(1), "a second close returns at once");
      assertTrue(
          messages(Level.INFO).stream().anyMatch(m -> m.contains("closed by CoordinatedShutdown")),
          () -> "the task reports the close: " + messages(Level.INFO));
      assertTrue(
          messages(Level.ERROR).isEmpty(),
          () -> "nothing owed at shutdown: " + messages(Level.ERROR));

      // The peer was not disturbed by the embedded engine's close.
      assertRegion(
          src.segment(),
          List.of(new Span(200 * KIB, 16 * KIB, SEED_LOCAL, 96 * KIB)),
          SEED_SRC,
          "source region after the embedded engine closed");
    } finally {
      host.terminate();
      source.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void owedReportsAPendingTaskAndAShortShutdownPhaseStillCompletesWithTheReportLogged()
      throws Exception {
    try (SilentPeer peer = new SilentPeer(1024 * KIB)) {
      ActorSystem<Void> host =
          ActorSystem.create(Behaviors.empty(), "embed-stall-host", phaseTimeout("1500ms"));
      try {
        TransferEngine engine =
            TransferEngine.spawn(host, EngineConfig.defaults().withName("embedded-stall"));
        RegisteredMemory local = guarded(engine, 96 * KIB, SEED_LOCAL);
        RemoteSegment remote = engine.openSegment(peer.endpoint(), OPEN);
        Batch batch = engine.allocateBatch(1);
        batch.submit(
            List.of(
                TransferRequest.read(local, 8 * KIB, remote, SilentPeer.REGION_ID, 0, 64 * KIB)));
        awaitRequests(peer, 1);

        EngineOwed owed = engine.owed();
        assertAll(
            "owed while a READ waits on a silent peer: " + owed,
            () -> assertEquals(EngineOwed.Phase.RUNNING, owed.phase()),
            () -> assertEquals(1, owed.batches()),
            () -> assertEquals(1, owed.tasksInFlight()),
            () -> assertEquals(64 * KIB, owed.bytesInFlight()),
            () -> assertEquals(1, owed.endpoints()),
            () -> assertEquals(1, owed.registrations()),
            () -> assertFalse(owed.isIdle()),
            () -> assertFalse(owed.isClear()),
            () ->
                assertTrue(
                    owed.toString()
                        .contains("1 batch(es), 1 task(s) / 65536 B in flight, 1 endpoint(s)"),
                    owed::toString));
        assertFalse(batch.status().done(), "the READ is still pending");
        assertRegion(
            local.segment(), List.of(), SEED_LOCAL, "local region while its READ is pending");

        int port = engine.localSegment().port();
        long t0 = System.nanoTime();
        CompletableFuture<Done> shutdown =
            CoordinatedShutdown.get(Adapter.toClassic(host))
                .runAll(CoordinatedShutdown.unknownReason())
                .toCompletableFuture();
        try {
          shutdown.get(20, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
          fail("the host's CoordinatedShutdown hung on an engine with a pending task");
        }
        host.getWhenTerminated().toCompletableFuture().get(20, TimeUnit.SECONDS);
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(tookMillis < 15_000, () -> "shutdown took " + tookMillis + " ms");

        List<String> reports = messages(Level.WARN);
        reports.addAll(messages(Level.ERROR));
        assertTrue(
            reports.stream()
                .anyMatch(
                    m ->
                        m.contains("embedded-stall")
                            && m.contains("1 task(s) / 65536 B in flight")),
            () -> "the shutdown logs what the engine owed: " + reports);
        assertRefuses(port, "the engine's listener after the host's CoordinatedShutdown");
        EngineOwed after = engine.owed();
        assertNotEquals(EngineOwed.Phase.RUNNING, after.phase(), after::toString);
        assertTrue(peer.problems().isEmpty(), () -> "silent peer: " + peer.problems());
      } finally {
        host.terminate();
        host.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  /**
   * A close that cannot be confirmed in time: the host's default dispatcher (two threads, where the
   * engine's actors run) is held busy while the host shuts down, so the engine cannot even answer.
   * The shutdown task must give up at 80% of the phase timeout, log at ERROR what the engine still
   * owes and let the shutdown go on. The figures are current even so: the budgets are read from the
   * engine's admission gate, not asked of an actor that cannot run.
   */
  @Test
  void aCloseThatIsNotConfirmedInTimeIsLoggedAtErrorWithWhatTheEngineOwes() throws Exception {
    Config busyHost =
        ConfigFactory.parseString(
                """
            pekko.actor.default-dispatcher {
              executor = "thread-pool-executor"
              thread-pool-executor.fixed-pool-size = 2
              throughput = 1
            }
            pekko.coordinated-shutdown.phases.service-requests-done.timeout = 3s
            """)
            .withFallback(ConfigFactory.load());
    CountDownLatch release = new CountDownLatch(1);
    try (SilentPeer peer = new SilentPeer(1024 * KIB)) {
      ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "embed-late-host", busyHost);
      try {
        // The silent peer must stay unnoticed for the whole phase: a liveness bound longer than
        // the test (the default 2 s would lose its lanes, and drain the tasks, before the report).
        TransferEngine engine =
            TransferEngine.spawn(
                host,
                EngineConfig.defaults()
                    .withName("embedded-late")
                    .withTcp(TcpConfig.defaults().withKeepalive(500, 60_000)));
        RegisteredMemory local = guarded(engine, 64 * KIB, SEED_LOCAL);
        RemoteSegment remote = engine.openSegment(peer.endpoint(), OPEN);
        Batch batch = engine.allocateBatch(2);
        batch.submit(
            List.of(
                TransferRequest.read(local, 0, remote, SilentPeer.REGION_ID, 0, 16 * KIB),
                TransferRequest.write(
                    local, 32 * KIB, remote, SilentPeer.REGION_ID, 4 * KIB, 8 * KIB)));
        awaitRequests(peer, 2);
        EngineOwed before = engine.owed();
        assertEquals(2, before.tasksInFlight(), before::toString);

        // Occupy both dispatcher threads: from here on no engine actor runs.
        CountDownLatch busy = new CountDownLatch(2);
        for (int i = 0; i < 2; i++) {
          host.systemActorOf(
              Behaviors.setup(
                  ctx -> {
                    busy.countDown();
                    release.await(60, TimeUnit.SECONDS);
                    return Behaviors.empty();
                  }),
              "busy-" + i,
              Props.empty());
        }
        assertTrue(busy.await(10, TimeUnit.SECONDS), "both dispatcher threads are held");

        long t0 = System.nanoTime();
        CompletableFuture<Done> shutdown =
            CoordinatedShutdown.get(Adapter.toClassic(host))
                .runAll(CoordinatedShutdown.unknownReason())
                .toCompletableFuture();
        io.orbite.qualification.Await.until(
            Duration.ofSeconds(15), () -> !messages(Level.ERROR).isEmpty());
        List<String> errors = messages(Level.ERROR);
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        release.countDown();
        shutdown.get(30, TimeUnit.SECONDS);

        List<String> seen = errors;
        assertEquals(1, seen.size(), () -> "one ERROR report: " + seen);
        String report = seen.get(0);
        assertAll(
            "ERROR report: " + report,
            () -> assertTrue(report.contains("embedded-late"), "names the engine"),
            () -> assertTrue(report.contains("service-requests-done"), "names the phase"),
            () ->
                assertTrue(report.contains("not confirmed within 2400 ms"), "80% of the 3 s phase"),
            () ->
                assertFalse(
                    report.contains("last known figures"),
                    "the figures were read now, from the gate"),
            () ->
                assertTrue(
                    report.contains("1 batch(es), 2 task(s) / 24576 B in flight, 1 endpoint(s)"),
                    "what it owes"));
        assertTrue(
            tookMillis < 3_500,
            () ->
                "the report came about when the 3 s phase ran out, not after "
                    + tookMillis
                    + " ms");
      } finally {
        release.countDown();
        host.terminate();
        host.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void anEngineWithItsOwnSystemClosesWhenThatSystemTerminates() throws Exception {
    TransferEngine engine = TransferEngine.start(EngineConfig.defaults().withName("own-system"));
    RegisteredMemory m = guarded(engine, 32 * KIB, SEED_LOCAL);
    int port = engine.localSegment().port();
    assertAccepts(port);

    engine.system().terminate();
    engine.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);

    assertRefuses(port, "the engine's listener after its own system terminated");
    EngineOwed after = engine.owed();
    assertEquals(
        EngineOwed.Phase.CLOSED,
        after.phase(),
        () -> "terminating the system ran the engine's close: " + after);
    assertTrue(after.isClear(), after::toString);
    assertTrue(((Registration) m).released(), "the close freed the engine-owned memory");
    long t0 = System.nanoTime();
    engine.close(Duration.ofSeconds(5));
    assertTrue(
        System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(1), "a later close returns at once");
    assertTrue(messages(Level.ERROR).isEmpty(), () -> messages(Level.ERROR).toString());
  }

  @Test
  void anEngineClosedBeforeTheHostShutsDownLeavesNoShutdownTaskBehind() throws Exception {
    ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "embed-early-host");
    try {
      TransferEngine engine =
          TransferEngine.spawn(host, EngineConfig.defaults().withName("embedded-early"));
      int port = engine.localSegment().port();
      engine.close(Duration.ofSeconds(20));
      assertRefuses(port, "the engine's listener after close()");
      assertFalse(
          host.getWhenTerminated().toCompletableFuture().isDone(),
          "closing the engine leaves the host running");
      EngineOwed after = engine.owed();
      assertEquals(EngineOwed.Phase.CLOSED, after.phase(), after::toString);
      assertTrue(after.isClear(), after::toString);

      CoordinatedShutdown.get(Adapter.toClassic(host))
          .runAll(CoordinatedShutdown.unknownReason())
          .toCompletableFuture()
          .get(20, TimeUnit.SECONDS);
      List<String> all = messages(null);
      assertTrue(
          all.stream().noneMatch(m -> m.contains("embedded-early")),
          () -> "the cancelled task did not run: " + all);
    } finally {
      host.terminate();
      host.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  // ---------------------------------------------------------------- helpers

  private static Config phaseTimeout(String timeout) {
    return ConfigFactory.parseString(
            "pekko.coordinated-shutdown.phases.service-requests-done.timeout = " + timeout)
        .withFallback(ConfigFactory.load());
  }

  private static RegisteredMemory guarded(TransferEngine engine, long bytes, long seed) {
    RegisteredMemory m = engine.allocate(bytes, Access.READ_WRITE);
    Pattern.fill(m.segment(), 0, bytes, seed, 0);
    return m;
  }

  private static void assertRegion(
      MemorySegment region, List<Span> spans, long guardSeed, String what) {
    long bad = RegionCheck.check(region, spans, guardSeed);
    assertEquals(-1, bad, () -> what + ": first wrong byte at " + bad + " of " + region.byteSize());
  }

  private static void awaitRequests(SilentPeer peer, int n) {
    if (!io.orbite.qualification.Await.until(
        Duration.ofSeconds(10), () -> peer.requests().size() >= n)) {
      fail(
          "the silent peer got "
              + peer.requests().size()
              + " of "
              + n
              + " data requests within 10 s");
    }
  }

  private static void assertAccepts(int port) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
    }
  }

  private static void assertRefuses(int port, String what) {
    assertThrows(
        ConnectException.class,
        () -> {
          try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
          }
        },
        () -> what + " (127.0.0.1:" + port + ") still accepts connections");
  }

  /**
   * Messages the engine logged at {@code level} (null: any level), copied under the appender's
   * lock.
   */
  private List<String> messages(Level level) {
    List<ILoggingEvent> events;
    synchronized (logged) {
      events = List.copyOf(logged.list);
    }
    return new java.util.ArrayList<>(
        events.stream()
            .filter(e -> level == null || e.getLevel() == level)
            .map(ILoggingEvent::getFormattedMessage)
            .toList());
  }
}
