package io.orbite.qualification.notify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.stream.javadsl.Sink;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * C16 over one transport: a sender process WRITEs into this JVM's receiver engine and attaches a
 * notification to the submission; the receiver's consumer of {@code Engine.notifications()}, on the
 * notification's arrival and before anything else, reads its whole region: every WRITTEN byte must
 * be there and every guard intact. Twenty rounds, each with bytes of its own, so that a
 * notification that overtook its WRITEs would find the previous round's bytes. Then a submission
 * whose WRITE fails is never notified. The subclasses name the transport; every request names it
 * too, and the sender's counters show the tasks went there.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class WriteThenNotifySuite {
  private static final int TASKS = 8;
  // Large enough that the WRITEs take far longer than a notification's trip: one sent ahead of
  // them would find the previous round's bytes.
  private static final long LENGTH = (1L << 20) + 3;
  private static final long STRIDE = LENGTH + 4099; // guards between the ranges
  private static final long REMOTE_BASE = 777;
  private static final long REGION = REMOTE_BASE + TASKS * STRIDE + 1000;
  private static final long GUARD = 0x6A;
  private static final int ROUNDS = 20;

  private final Transport transport;
  private TransferEngine receiver;
  private EngineProcess sender;
  private RegisteredMemory region;
  private RegisteredMemory doomed;
  private long local;

  /** What the consumer checks when a tag arrives, and where it puts what it found. */
  private record Expected(List<Span> spans, byte[] payload, CompletableFuture<Long> firstBad) {}

  private final Map<String, Expected> expected = new ConcurrentHashMap<>();
  private final LinkedBlockingQueue<String> arrivals = new LinkedBlockingQueue<>();

  WriteThenNotifySuite(Transport transport) {
    this.transport = transport;
  }

  /** The receiver's configuration: its transport on. */
  abstract EngineConfig receiverConfig();

  /** The sender process's ORBITE_CONF. */
  abstract String senderConf();

  /** The sender's COUNTERS key that counts tasks dispatched on this transport. */
  abstract String dispatchedKey();

  @BeforeAll
  void start(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws IOException {
    receiver = TransferEngine.start(receiverConfig());
    region = receiver.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(region.segment(), 0, REGION, GUARD, 0);
    doomed = receiver.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(doomed.segment(), 0, REGION, GUARD, 0);
    // The consumer: on arrival, before anything else, the whole region is read.
    receiver.notifications().runWith(Sink.foreach(this::onArrival), receiver.system());
    sender =
        EngineProcess.start(
            "notify-sender-" + transport.name().toLowerCase(java.util.Locale.ROOT),
            logs,
            Map.of("ORBITE_CONF", senderConf()));
    local = Long.parseLong(sender.call("ALLOC " + REGION + " READ_WRITE"));
    sender.call("OPEN " + receiver.localSegment().endpoint());
  }

  @AfterAll
  void stop() {
    try {
      if (sender != null) {
        sender.close();
      }
    } finally {
      receiver.close(Duration.ofSeconds(20));
    }
  }

  private void onArrival(ReceivedNotification n) {
    Expected e = expected.get(n.tag());
    if (e != null) {
      long bad = RegionCheck.check(region.segment(), e.spans(), GUARD);
      boolean payload = java.util.Arrays.equals(e.payload(), n.bytes());
      e.firstBad().complete(payload ? bad : -2);
    }
    arrivals.add(n.tag());
  }

  @Test
  void everyWrittenByteAndGuardIsThereWhenTheNotificationArrives() throws Exception {
    arrivals.clear();
    long received = receiver.counters().notificationsReceived();
    long sent = counters(sender).get("notificationsSent");
    for (int round = 0; round < ROUNDS; round++) {
      long seed = 1000 + round;
      sender.call("FILL " + local + " " + seed);
      List<Span> spans = new ArrayList<>();
      for (int i = 0; i < TASKS; i++) {
        spans.add(new Span(REMOTE_BASE + i * STRIDE, LENGTH, seed, i * STRIDE));
      }
      String tag = transport + "-round-" + round;
      byte[] payload = NotifyIT.bytes(seed, 16);
      Expected e = new Expected(spans, payload, new CompletableFuture<>());
      expected.put(tag, e);
      String answer =
          sender.call(
              "XFERN "
                  + transport
                  + " "
                  + local
                  + " "
                  + TASKS
                  + " "
                  + LENGTH
                  + " "
                  + STRIDE
                  + " 0 "
                  + region.regionId()
                  + " "
                  + REMOTE_BASE
                  + " "
                  + tag
                  + " 16 "
                  + seed);
      assertTrue(answer.startsWith(TASKS * LENGTH + " DELIVERED "), answer);
      long bad = e.firstBad().get(20, TimeUnit.SECONDS);
      assertEquals(
          -1, bad, () -> tag + ": at arrival, the first wrong byte (-2: the payload) is " + bad);
      assertEquals(tag, arrivals.poll(10, TimeUnit.SECONDS));
    }
    assertEquals(received + ROUNDS, receiver.counters().notificationsReceived());
    Map<String, Long> counters = counters(sender);
    assertTrue(
        counters.get(dispatchedKey()) >= ROUNDS,
        () -> "the WRITEs went over " + transport + ": " + counters);
    assertEquals(sent + ROUNDS, counters.get("notificationsSent"));
  }

  @Test
  void aSubmissionWhoseWriteFailedIsNeverNotified() throws Exception {
    arrivals.clear();
    long before = receiver.counters().notificationsReceived();
    receiver.unregister(doomed);
    String answer =
        sender.call(
            "XFERN "
                + transport
                + " "
                + local
                + " 1 4096 4096 0 "
                + doomed.regionId()
                + " 0 "
                + transport
                + "-failed 16 7");
    assertTrue(answer.startsWith("0 NOT_SENT "), answer);
    // The next notification to arrive is the one sent after it: the failed one never comes.
    assertTrue(sender.call("NOTIFY " + transport + "-after 8 8").startsWith("DELIVERED"));
    assertEquals(transport + "-after", arrivals.poll(20, TimeUnit.SECONDS));
    assertEquals(before + 1, receiver.counters().notificationsReceived());
  }

  static Map<String, Long> counters(EngineProcess p) throws IOException {
    Map<String, Long> out = new java.util.HashMap<>();
    for (String kv : p.call("COUNTERS").split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }
}
