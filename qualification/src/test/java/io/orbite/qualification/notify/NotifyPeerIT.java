package io.orbite.qualification.notify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.harness.EngineProcess;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Notifications to a receiver process that dies, is replaced, or is frozen while the sender's
 * connection breaks: never delivered to another incarnation than the one named, never sent twice,
 * and the sender's result says what it knows. The receiver's own list of what it received (tag,
 * length, CRC-32 of the bytes, sender epoch) is the oracle, not the sender's word.
 */
class NotifyPeerIT {
  private static String expect(String tag, byte[] bytes, long senderEpoch) {
    CRC32 c = new CRC32();
    c.update(bytes);
    return tag
        + "/"
        + bytes.length
        + "/"
        + Long.toHexString(c.getValue())
        + "/"
        + Long.toHexString(senderEpoch);
  }

  /** What the process received since it was last asked, in arrival order. */
  private static List<String> received(EngineProcess p) throws IOException {
    String[] words = p.call("NOTIFICATIONS 1000").split(" ");
    List<String> out = new ArrayList<>(List.of(words).subList(1, words.length));
    assertEquals(Integer.parseInt(words[0]), out.size());
    return out;
  }

  private static long counter(EngineProcess p, String key) throws IOException {
    for (String kv : p.call("COUNTERS").split(" ")) {
      if (kv.startsWith(key + "=")) {
        return Long.parseLong(kv.substring(key.length() + 1));
      }
    }
    throw new AssertionError("no counter " + key);
  }

  private static int freePort() throws IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void aNotificationToAKilledPeerIsNotSentAndNeverReachesItsReplacement(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    EngineProcess first = EngineProcess.startAt("notify-peer", logs, freePort(), Map.of());
    try (TransferEngine sender =
        TransferEngine.start(EngineConfig.defaults().withName("notify-sender"))) {
      long me = sender.localSegment().epoch();
      RemoteSegment old = sender.openSegment(first.endpoint(), Duration.ofSeconds(10));
      byte[] before = NotifyIT.bytes(1, 100);
      assertEquals(NotificationResult.DELIVERED, sender.notify(old, "before", before));
      assertEquals(List.of(expect("before", before, me)), received(first));

      first.kill();
      // Until the replacement listens: nothing is delivered, and once the dead connection is
      // noticed a fresh one cannot be made (NOT_SENT).
      NotificationResult last = null;
      for (int i = 0; i < 50; i++) {
        last = sender.notify(old, "to-the-dead-" + i, NotifyIT.bytes(2, 100));
        assertNotEquals(NotificationResult.State.DELIVERED, last.state(), last.toString());
        if (last.state() == NotificationResult.State.NOT_SENT) {
          break;
        }
        Thread.sleep(100);
      }
      assertNotNull(last);
      assertEquals(NotificationResult.State.NOT_SENT, last.state(), last.toString());

      try (EngineProcess second = first.restart()) {
        assertNotEquals(first.epoch(), second.epoch());
        assertEquals(first.endpoint(), second.endpoint());
        // The old segment names the dead incarnation: whatever answers at its endpoint now, the
        // notification is not delivered there.
        for (int i = 0; i < 3; i++) {
          NotificationResult r = sender.notify(old, "stale-" + i, NotifyIT.bytes(3, 100));
          assertNotEquals(NotificationResult.State.DELIVERED, r.state(), r.toString());
          if (r.state() == NotificationResult.State.REFUSED) {
            assertEquals(ErrorKind.EPOCH_MISMATCH, r.errorKind(), r.toString());
          }
        }
        assertEquals(List.of(), received(second), "nothing for the dead incarnation");
        assertEquals(0, counter(second, "notificationsReceived"));

        RemoteSegment fresh = sender.openSegment(second.endpoint(), Duration.ofSeconds(10));
        byte[] after = NotifyIT.bytes(4, 100);
        assertEquals(NotificationResult.DELIVERED, sender.notify(fresh, "after", after));
        assertEquals(List.of(expect("after", after, me)), received(second));
      }
    } finally {
      first.close();
    }
  }

  @Test
  void aNotificationWhoseConnectionBreaksAfterItWasSentIsUnknownAndDeliveredAtMostOnce(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    AtomicReference<Runnable> cut = new AtomicReference<>();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public void notificationLinkStarted(String peer, Runnable c) {
            cut.set(c);
          }
        };
    try (EngineProcess receiver = EngineProcess.start("notify-frozen", logs, Map.of());
        TransferEngine sender =
            FaultInjection.start(EngineConfig.defaults().withName("notify-sender"), hooks)) {
      long me = sender.localSegment().epoch();
      RemoteSegment peer = sender.openSegment(receiver.endpoint(), Duration.ofSeconds(10));
      byte[] warm = NotifyIT.bytes(5, 64);
      assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "warm", warm));
      Runnable firstLink = cut.get();
      assertNotNull(firstLink, "the link reported its start");

      receiver.stop(); // frozen: what reaches its socket stays unread and unanswered
      byte[] ambiguous = NotifyIT.bytes(6, 1000);
      CompletableFuture<NotificationResult> pending =
          sender.notifyAsync(peer, "ambiguous", ambiguous).toCompletableFuture();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (sender.counters().notificationsSent() < 2) {
        assertTrue(System.nanoTime() - deadline < 0, "the second notification was not written");
        Thread.sleep(5);
      }
      assertTrue(!pending.isDone(), "a frozen peer cannot have answered: " + pending);
      firstLink.run(); // the connection breaks after the notification was written
      NotificationResult r = pending.get(10, TimeUnit.SECONDS);
      assertEquals(NotificationResult.State.UNKNOWN, r.state(), r.toString());
      receiver.resume();

      // A later notification goes on a fresh connection; the ambiguous one is never sent again.
      byte[] after = NotifyIT.bytes(7, 32);
      assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "after", after));
      assertEquals(3, sender.counters().notificationsSent(), "each written once");
      // The receiver reads what reached its socket before the break once it runs again (the old
      // connection's thread and the new one's run side by side): collect twice.
      List<String> got = new ArrayList<>(received(receiver));
      Thread.sleep(500);
      got.addAll(received(receiver));
      assertEquals(expect("warm", warm, me), got.getFirst());
      assertEquals(1, got.stream().filter(expect("after", after, me)::equals).count(), "" + got);
      long copies = got.stream().filter(s -> s.startsWith("ambiguous/")).count();
      assertTrue(copies <= 1, "delivered at most once: " + got);
      if (copies == 1) {
        assertTrue(got.contains(expect("ambiguous", ambiguous, me)), "its bytes intact: " + got);
      }
      assertEquals(2 + copies, got.size(), "" + got);
      assertEquals(got.size(), counter(receiver, "notificationsReceived"));
    }
  }

  @Test
  void aNotificationUnansweredWithinTheAnswerTimeoutIsUnknownAndItsLateAnswerIgnored(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    EngineConfig config =
        EngineConfig.defaults()
            .withName("notify-sender")
            .withNotifications(
                io.orbite.config.NotificationConfig.defaults().withAnswerTimeoutMillis(500));
    try (EngineProcess receiver = EngineProcess.start("notify-slow", logs, Map.of());
        TransferEngine sender = TransferEngine.start(config)) {
      long me = sender.localSegment().epoch();
      RemoteSegment peer = sender.openSegment(receiver.endpoint(), Duration.ofSeconds(10));
      byte[] warm = NotifyIT.bytes(8, 16);
      assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "warm", warm));
      receiver.stop();
      byte[] late = NotifyIT.bytes(9, 16);
      NotificationResult r = sender.notify(peer, "late", late);
      assertEquals(NotificationResult.State.UNKNOWN, r.state(), r.toString());
      assertEquals(ErrorKind.TIMEOUT, r.errorKind(), r.toString());
      assertTrue(r.detail().contains("notifications.answerTimeoutMillis (500)"), r.detail());
      receiver.resume();
      // The same connection carries on: the late answer is ignored, the next one is answered.
      byte[] after = NotifyIT.bytes(10, 16);
      assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "after", after));
      assertEquals(
          List.of(expect("warm", warm, me), expect("late", late, me), expect("after", after, me)),
          received(receiver),
          "the late one delivered once, in its place, and never sent again");
      assertEquals(3, sender.counters().notificationsSent());
    }
  }
}
