package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.DeadLetter;
import org.apache.pekko.actor.Dropped;
import org.apache.pekko.actor.UnhandledMessage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * An orderly close (work done, segments and batches released, then the engines closed) leaves no
 * dead letter, no dropped and no unhandled message. Two witnesses: Pekko's own log, routed to SLF4J
 * at INFO and captured, and a subscriber to the event stream those log lines come from.
 */
class OrderlyCloseIT {
  private static final long LEN = 256 * 1024;
  private static final long SEED_SRC = 0x0DC1_0001L;
  private static final long SEED_LOCAL = 0x0DC1_0002L;

  @Test
  void closingEnginesSpawnedInAnApplicationsSystemLogsNoDeadLetter() throws Exception {
    ActorSystem<Void> app =
        ActorSystem.create(
            Behaviors.empty(),
            "orderly-app",
            ConfigFactory.parseString(
                    """
        pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
        pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
        pekko.loglevel = INFO
        pekko.log-dead-letters = on
        """)
                .withFallback(ConfigFactory.load()));
    Logger pekkoLog = (Logger) LoggerFactory.getLogger("org.apache.pekko");
    Level before = pekkoLog.getLevel();
    Captured log = new Captured();
    log.start();
    pekkoLog.addAppender(log);
    pekkoLog.setLevel(Level.INFO);
    try {
      ConcurrentLinkedQueue<Object> undelivered = watch(app);
      // The witnesses work: a probe's dead letter shows in both (probes are left out of the
      // verdict).
      probe(app, undelivered, log, "before");
      TransferEngine source =
          TransferEngine.spawn(app, EngineConfig.defaults().withName("orderly-source"));
      TransferEngine requester =
          TransferEngine.spawn(app, EngineConfig.defaults().withName("orderly-requester"));
      roundTrip(source, requester);
      // A segment still open when its engine closes, dropped afterwards (try-with-resources around
      // the engine's use): the engine's peer table has stopped, so there is nothing to tell it.
      RemoteSegment kept =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      EngineOwed closed = requester.close(Duration.ofSeconds(20));
      assertEquals(EngineOwed.Phase.CLOSED, closed.phase(), closed::toString);
      // The table stops with the guardian, just after the close is confirmed: drop the segment
      // after.
      assertTrue(
          io.orbite.qualification.Await.until(
              Duration.ofSeconds(5),
              () ->
                  requester.ownerView().retired().stream()
                      .anyMatch(r -> r.kind().equals("SegmentTable"))),
          "the requester's segment table stopped");
      kept.close();
      assertTrue(source.close(Duration.ofSeconds(20)).isClear(), "source closed clean");
      // Dead letters are published, then logged, asynchronously: a last probe, once it shows in
      // both
      // witnesses, shows that whatever the closes left undelivered before it has shown too.
      probe(app, undelivered, log, "after");
      assertEquals(List.of(), notProbes(undelivered), "undelivered messages during the close");
      List<String> lines =
          log.lines.stream()
              .filter(
                  m ->
                      m.contains("dead letter")
                          || m.contains("not delivered")
                          || m.contains("unhandled"))
              .filter(m -> !m.contains("/system/" + PROBE))
              .toList();
      assertEquals(List.of(), lines, "Pekko's log during the close");
    } finally {
      pekkoLog.detachAppender(log);
      pekkoLog.setLevel(before);
      app.terminate();
      app.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void closingEnginesWithTheirOwnSystemsLeavesNoDeadLetter() throws Exception {
    TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("orderly-own-source"));
    TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName("orderly-own-requester"));
    ConcurrentLinkedQueue<Object> atSource = watch(source.system());
    ConcurrentLinkedQueue<Object> atRequester = watch(requester.system());
    roundTrip(source, requester);
    // The source closes its side first, as a serving process does before it exits, then both close.
    EngineOwed sourceSide = source.closeSource(Duration.ofSeconds(20));
    assertTrue(sourceSide.isIdle(), sourceSide::toString);
    assertTrue(requester.close(Duration.ofSeconds(20)).isClear(), "requester closed clean");
    assertTrue(source.close(Duration.ofSeconds(20)).isClear(), "source closed clean");
    assertEquals(
        List.of(), notProbes(atRequester), "undelivered messages in the requester's system");
    assertEquals(List.of(), notProbes(atSource), "undelivered messages in the source's system");
  }

  /** A READ and a WRITE with every byte checked, then the segment and batch released. */
  private static void roundTrip(TransferEngine source, TransferEngine requester) {
    RegisteredMemory src = source.allocate(LEN, Access.READ_WRITE);
    Pattern.fill(src.segment(), 0, LEN, SEED_SRC, 0);
    RegisteredMemory local = requester.allocate(LEN, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, LEN, SEED_LOCAL, 0);
    RemoteSegment remote =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
    Batch batch = requester.allocateBatch(2);
    long half = LEN / 2;
    batch.submit(
        List.of(
            TransferRequest.read(local, 0, remote, src.regionId(), 0, half),
            TransferRequest.write(local, half, remote, src.regionId(), half, half)));
    BatchStatus status = batch.await(Duration.ofSeconds(15));
    assertTrue(status.allCompleted(), status::toString);
    assertEquals(-1, Pattern.verify(local.segment(), 0, half, SEED_SRC, 0), "read half");
    assertEquals(
        -1,
        Pattern.verify(local.segment(), half, half, SEED_LOCAL, half),
        "local second half untouched");
    assertEquals(
        -1, Pattern.verify(src.segment(), 0, half, SEED_SRC, 0), "source first half untouched");
    assertEquals(-1, Pattern.verify(src.segment(), half, half, SEED_LOCAL, half), "written half");
    batch.free();
    remote.close();
    requester.unregister(local);
    source.unregister(src);
  }

  /**
   * Collects every dead letter, dropped and unhandled message published in {@code system} from now
   * on, until the system itself begins to shut down: what Pekko's own termination leaves
   * undelivered it does not log ({@code log-dead-letters-during-shutdown = off}), and it is not the
   * engine's.
   */
  private static ConcurrentLinkedQueue<Object> watch(ActorSystem<?> system) throws Exception {
    ConcurrentLinkedQueue<Object> seen = new ConcurrentLinkedQueue<>();
    var shutdown =
        org.apache.pekko.actor.CoordinatedShutdown.get(
            org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(system));
    ActorRef<Object> collector =
        system.systemActorOf(
            Behaviors.receiveMessage(
                m -> {
                  if (shutdown.getShutdownReason().isEmpty()) {
                    seen.add(m);
                  }
                  return Behaviors.same();
                }),
            "undelivered-" + System.nanoTime(),
            org.apache.pekko.actor.typed.Props.empty());
    system.eventStream().tell(new EventStream.Subscribe<>(Dropped.class, collector.narrow()));
    system
        .eventStream()
        .tell(new EventStream.Subscribe<>(UnhandledMessage.class, collector.narrow()));
    system.eventStream().tell(new EventStream.Subscribe<>(DeadLetter.class, collector.narrow()));
    // The subscriptions are messages too, taken in order: once a probe's dead letter arrives, all
    // three are in effect.
    probe(system, seen, null, "subscribed");
    return seen;
  }

  private static final String PROBE = "probe-";

  /** Pekko's log lines, appended by logging threads while the test reads them. */
  private static final class Captured extends AppenderBase<ILoggingEvent> {
    final ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();

    @Override
    protected void append(ILoggingEvent event) {
      lines.add(event.getFormattedMessage());
    }
  }

  /**
   * Sends a message to an actor that has stopped and waits until its dead letter reaches {@code
   * seen} (and, with {@code log}, Pekko's captured log): the witnesses are live, and everything
   * published before it has been seen.
   */
  private static void probe(
      ActorSystem<?> system, ConcurrentLinkedQueue<Object> seen, Captured log, String label) {
    String name = PROBE + label + "-" + System.nanoTime();
    ActorRef<String> gone =
        system.systemActorOf(Behaviors.stopped(), name, org.apache.pekko.actor.typed.Props.empty());
    // Sent again every 20 ms until seen: a subscription sent just before may not be in effect yet
    // when the first one is published.
    long[] next = {0};
    assertTrue(
        io.orbite.qualification.Await.until(
            Duration.ofSeconds(5),
            () -> {
              if (System.nanoTime() - next[0] > 0) {
                gone.tell("probe");
                next[0] = System.nanoTime() + 20_000_000L;
              }
              return seen.stream()
                      .anyMatch(
                          m ->
                              m instanceof DeadLetter d && d.recipient().path().name().equals(name))
                  && (log == null || log.lines.stream().anyMatch(line -> line.contains(name)));
            }),
        () ->
            "the probe "
                + name
                + " was not seen: "
                + seen
                + (log == null ? "" : " / " + log.lines));
  }

  /** What {@code seen} holds other than the probes' dead letters. */
  private static List<Object> notProbes(ConcurrentLinkedQueue<Object> seen) {
    return seen.stream()
        .filter(m -> !(m instanceof DeadLetter d && d.recipient().path().name().startsWith(PROBE)))
        .toList();
  }
}
