package io.orbite.qualification.notify;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.NotificationConfig;
import io.orbite.engine.Access;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.qualification.verify.Pattern;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Standalone notifications between two engines in this JVM, over loopback: every payload byte and
 * tag is compared with what was sent, and what each side counted is read back.
 */
class NotifyIT {
  private TransferEngine sender;
  private TransferEngine receiver;

  private void start(NotificationConfig senderConfig, NotificationConfig receiverConfig) {
    receiver =
        TransferEngine.start(
            EngineConfig.defaults().withName("receiver").withNotifications(receiverConfig));
    sender =
        TransferEngine.start(
            EngineConfig.defaults().withName("sender").withNotifications(senderConfig));
  }

  private RemoteSegment open() {
    return sender.openSegment(receiver.localSegment().endpoint(), Duration.ofSeconds(10));
  }

  @AfterEach
  void close() {
    if (sender != null) {
      sender.close(Duration.ofSeconds(20));
    }
    if (receiver != null) {
      receiver.close(Duration.ofSeconds(20));
    }
  }

  /** {@code length} bytes of the pattern {@code seed}. */
  static byte[] bytes(long seed, int length) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = Pattern.at(seed, i);
    }
    return b;
  }

  private void assertFrom(ReceivedNotification n, String tag, byte[] payload) {
    assertEquals(tag, n.tag());
    assertArrayEquals(payload, n.bytes(), "the payload, byte for byte");
    assertEquals("sender", n.senderName());
    assertEquals(sender.localSegment(), n.sender(), "the sender's endpoint and epoch");
  }

  @Test
  void aStandaloneNotifyArrivesWithItsTagAndEveryByteThroughThePollAndTheStream() throws Exception {
    start(NotificationConfig.defaults(), NotificationConfig.defaults());
    RemoteSegment peer = open();
    byte[] first = bytes(11, 4096);
    long before = System.nanoTime();
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "req-1/layer-0", first));
    Optional<ReceivedNotification> polled = receiver.pollNotification(Duration.ofSeconds(10));
    assertTrue(polled.isPresent());
    assertFrom(polled.get(), "req-1/layer-0", first);
    assertTrue(polled.get().receivedAtNanos() - before > 0, "received after it was sent");

    // A multi-byte tag, an empty payload and the largest default payload, through the stream.
    CompletionStage<List<ReceivedNotification>> three =
        receiver.notifications().take(3).runWith(Sink.seq(), receiver.system());
    byte[] largest = bytes(12, NotificationConfig.DEFAULT_MAX_PAYLOAD_BYTES);
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "é/κ/ключ", new byte[0]));
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "big", largest));
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "null-bytes", null));
    List<ReceivedNotification> got = three.toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertFrom(got.get(0), "é/κ/ключ", new byte[0]);
    assertFrom(got.get(1), "big", largest);
    assertFrom(got.get(2), "null-bytes", new byte[0]);
    assertEquals(List.of(), receiver.pollNotifications(10), "each was taken once");

    EngineCounters r = receiver.counters();
    assertEquals(4, r.notificationsReceived());
    assertEquals(0, r.notificationsRefused());
    assertEquals(4, sender.counters().notificationsSent());
  }

  @Test
  void aFullInboxRefusesResourceExhaustedAndAcceptsAgainOnceOneIsTaken() {
    start(NotificationConfig.defaults(), NotificationConfig.defaults().withInboxCapacity(4));
    RemoteSegment peer = open();
    for (int i = 0; i < 4; i++) {
      assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "n" + i, bytes(i, 100)));
    }
    NotificationResult full = sender.notify(peer, "n4", bytes(4, 100));
    assertEquals(NotificationResult.State.REFUSED, full.state());
    assertEquals(ErrorKind.RESOURCE_EXHAUSTED, full.errorKind());
    assertTrue(full.detail().contains("notifications.inboxCapacity 4"), full.detail());
    assertEquals(1, receiver.counters().notificationsRefused());

    ReceivedNotification oldest = receiver.pollNotifications(1).getFirst();
    assertFrom(oldest, "n0", bytes(0, 100));
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "n5", bytes(5, 100)));
    List<ReceivedNotification> rest = receiver.pollNotifications(100);
    assertEquals(List.of("n1", "n2", "n3", "n5"), rest.stream().map(n -> n.tag()).toList());
    for (ReceivedNotification n : rest) {
      int seed = Integer.parseInt(n.tag().substring(1));
      assertFrom(n, n.tag(), bytes(seed, 100));
    }
    assertEquals(5, receiver.counters().notificationsReceived());
  }

  @Test
  void aSlowStreamFillsTheInboxAndEveryNotificationReachesExactlyOneTaker() throws Exception {
    start(NotificationConfig.defaults(), NotificationConfig.defaults().withInboxCapacity(8));
    RemoteSegment peer = open();
    // A consumer that demands nothing until the test pulls: the inbox fills behind it.
    // Input buffers of one element, so that what is taken ahead of demand is small and bounded.
    Sink<ReceivedNotification, SinkQueueWithCancel<ReceivedNotification>> pulled =
        Sink.<ReceivedNotification>queue().withAttributes(Attributes.inputBuffer(1, 1));
    SinkQueueWithCancel<ReceivedNotification> slow =
        receiver.notifications().runWith(pulled, receiver.system());
    SinkQueueWithCancel<ReceivedNotification> other =
        receiver.notifications().runWith(pulled, receiver.system());
    List<String> delivered = new ArrayList<>();
    int refused = 0;
    for (int i = 0; i < 40; i++) {
      NotificationResult r = sender.notify(peer, "s" + i, bytes(100 + i, 64));
      if (r.delivered()) {
        delivered.add("s" + i);
      } else {
        assertEquals(ErrorKind.RESOURCE_EXHAUSTED, r.errorKind(), r.toString());
        refused++;
      }
    }
    assertTrue(refused > 0, "a consumer that does not pull leaves the inbox to fill");
    // Beyond the inbox, at most what each of the two streams holds in its one-element buffer.
    assertTrue(delivered.size() <= 8 + 4, "taken ahead of demand: " + delivered.size());
    assertEquals(refused, receiver.counters().notificationsRefused());

    Set<String> taken = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      ReceivedNotification n = slow.pull().toCompletableFuture().get(10, TimeUnit.SECONDS).get();
      assertTrue(taken.add(n.tag()), "twice: " + n.tag());
      assertFrom(n, n.tag(), bytes(100 + Integer.parseInt(n.tag().substring(1)), 64));
    }
    for (ReceivedNotification n : receiver.pollNotifications(3)) {
      assertTrue(taken.add(n.tag()), "twice: " + n.tag());
      assertFrom(n, n.tag(), bytes(100 + Integer.parseInt(n.tag().substring(1)), 64));
    }
    // The rest, from both streams at once: one pull outstanding on each, so that whichever stream
    // holds the next notification hands it over (which one does is not the test's to choose: a
    // pull from a stream whose buffer is empty while the other holds the last one would wait for
    // ever).
    List<SinkQueueWithCancel<ReceivedNotification>> queues = List.of(slow, other);
    List<java.util.concurrent.CompletableFuture<Optional<ReceivedNotification>>> pending =
        new ArrayList<>(java.util.Arrays.asList(null, null));
    while (taken.size() < delivered.size()) {
      for (int q = 0; q < 2; q++) {
        if (pending.get(q) == null) {
          pending.set(q, queues.get(q).pull().toCompletableFuture());
        }
      }
      java.util.concurrent.CompletableFuture.anyOf(pending.get(0), pending.get(1))
          .get(10, TimeUnit.SECONDS);
      for (int q = 0; q < 2; q++) {
        if (pending.get(q).isDone()) {
          ReceivedNotification n = pending.get(q).get().orElseThrow();
          assertTrue(taken.add(n.tag()), "twice: " + n.tag());
          assertFrom(n, n.tag(), bytes(100 + Integer.parseInt(n.tag().substring(1)), 64));
          pending.set(q, null);
        }
      }
    }
    assertEquals(new HashSet<>(delivered), taken, "every delivered one, by exactly one taker");
    assertEquals(List.of(), receiver.pollNotifications(10));
    for (var p : pending) {
      assertTrue(p == null || !p.isDone(), "nothing more for either stream: " + p);
    }
    slow.cancel();
    other.cancel();
  }

  @Test
  void aTagOrPayloadOverTheSendersBoundIsRefusedBeforeAnythingIsSent() {
    start(
        NotificationConfig.defaults().withMaxTagBytes(8).withMaxPayloadBytes(1000),
        NotificationConfig.defaults());
    RemoteSegment peer = open();
    // Eight characters, but ten bytes of UTF-8: the bound is in bytes.
    TransferException tag =
        assertThrows(TransferException.class, () -> sender.notify(peer, "ééééé", null));
    assertEquals(ErrorKind.INVALID_ARGUMENT, tag.kind());
    assertTrue(tag.getMessage().contains("notifications.maxTagBytes (8)"), tag.getMessage());
    TransferException payload =
        assertThrows(TransferException.class, () -> sender.notify(peer, "ok", new byte[1001]));
    assertEquals(ErrorKind.INVALID_ARGUMENT, payload.kind());
    assertTrue(
        payload.getMessage().contains("notifications.maxPayloadBytes (1000)"),
        payload.getMessage());
    CompletionStage<NotificationResult> async = sender.notifyAsync(peer, "123456789", null);
    CompletionException failed =
        assertThrows(CompletionException.class, () -> async.toCompletableFuture().join());
    assertEquals(ErrorKind.INVALID_ARGUMENT, ((TransferException) failed.getCause()).kind());

    assertEquals(0, sender.counters().notificationsSent(), "nothing sent");
    assertEquals(0, receiver.counters().notificationsReceived());
    assertEquals(0, receiver.counters().notificationsRefused());
    assertEquals(List.of(), receiver.pollNotifications(10));
    // At the bound exactly, both go.
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "éééé", bytes(3, 1000)));
    assertFrom(receiver.pollNotifications(1).getFirst(), "éééé", bytes(3, 1000));
  }

  @Test
  void aTagOrPayloadOverTheReceiversOwnBoundIsRefusedThereNamingItsKey() {
    start(
        NotificationConfig.defaults(),
        NotificationConfig.defaults().withMaxTagBytes(4).withMaxPayloadBytes(10));
    RemoteSegment peer = open();
    NotificationResult tag = sender.notify(peer, "12345", null);
    assertEquals(NotificationResult.State.REFUSED, tag.state());
    assertEquals(ErrorKind.INVALID_ARGUMENT, tag.errorKind());
    assertTrue(tag.detail().contains("notifications.maxTagBytes (4)"), tag.detail());
    NotificationResult payload = sender.notify(peer, "1234", new byte[11]);
    assertEquals(ErrorKind.INVALID_ARGUMENT, payload.errorKind());
    assertTrue(payload.detail().contains("notifications.maxPayloadBytes (10)"), payload.detail());
    assertEquals(2, receiver.counters().notificationsRefused());
    assertEquals(List.of(), receiver.pollNotifications(10), "nothing of them kept");
    // The connection is still good for the next one.
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "1234", bytes(5, 10)));
    assertFrom(receiver.pollNotifications(1).getFirst(), "1234", bytes(5, 10));
  }

  @Test
  void badArgumentsFailInvalidArgumentNamingWhatIsWrong(@TempDir Path dir) throws Exception {
    start(NotificationConfig.defaults(), NotificationConfig.defaults());
    RemoteSegment peer = open();
    assertInvalid(() -> sender.notify(null, "t", null), "segment must not be null");
    assertInvalid(() -> sender.notify(peer, null, null), "tag must not be null");
    Path file = Files.writeString(dir.resolve("f"), "x", StandardCharsets.UTF_8);
    try (RemoteSegment f = sender.openFileSegment(file, Access.READ, Duration.ofSeconds(10))) {
      assertInvalid(() -> sender.notify(f, "t", null), "there is no peer to notify");
    }
    RemoteSegment closed = open();
    closed.close();
    assertInvalid(() -> sender.notify(closed, "t", null), "was closed");
    assertInvalid(() -> receiver.pollNotifications(0), "max must be positive");
    assertEquals(0, sender.counters().notificationsSent());
    // The stream of a closed engine ends; its calls fail UNAVAILABLE.
    CompletionStage<List<ReceivedNotification>> all =
        receiver.notifications().runWith(Sink.seq(), receiver.system());
    TransferEngine r = receiver;
    receiver = null;
    r.close(Duration.ofSeconds(20));
    assertEquals(List.of(), all.toCompletableFuture().get(10, TimeUnit.SECONDS));
    TransferException gone = assertThrows(TransferException.class, () -> r.pollNotifications(1));
    assertEquals(ErrorKind.UNAVAILABLE, gone.kind());
  }

  @Test
  void aBlockedPollIsWokenByTheArrivalAndAnEmptyOneTimesOut() throws Exception {
    start(NotificationConfig.defaults(), NotificationConfig.defaults());
    RemoteSegment peer = open();
    assertEquals(Optional.empty(), receiver.pollNotification(Duration.ofMillis(20)));
    var waiting =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> receiver.pollNotification(Duration.ofSeconds(30)));
    Thread.sleep(100); // the poller parks first (the result is the same if it does not)
    assertEquals(NotificationResult.DELIVERED, sender.notify(peer, "wake", bytes(9, 8)));
    assertFrom(waiting.get(20, TimeUnit.SECONDS).orElseThrow(), "wake", bytes(9, 8));
  }

  private static void assertInvalid(Runnable call, String says) {
    TransferException e = assertThrows(TransferException.class, call::run);
    assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind(), e.getMessage());
    assertTrue(e.getMessage().contains(says), e.getMessage());
  }
}
