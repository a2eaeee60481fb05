package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * C16, at most once, judged by the adversarial peer's ledger: the peer reads a notification and
 * resets the connection instead of answering. The engine says UNKNOWN, opens a fresh connection for
 * the next notification, and never sends the unanswered one again: the ledger, which records every
 * NOTIFY read on any connection, holds each tag exactly once, with the bytes and the epochs the
 * documented layout puts there.
 */
class NotifyNoReplayIT {
  private static byte[] bytes(long seed, int length) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = Pattern.at(seed, i);
    }
    return b;
  }

  @Test
  void aNotificationWhoseAnswerWasLostIsUnknownAndNeverSentAgain() throws Exception {
    Script script = r -> new Script.Reply.Serve();
    try (AdversarialSource peer = AdversarialSource.start(1 << 20, 3, script);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("notify-no-replay"))) {
      RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
      byte[] a = bytes(1, 100);
      byte[] b = bytes(2, 3000);
      byte[] c = bytes(3, 0);
      assertEquals(NotificationResult.DELIVERED, engine.notify(segment, "a", a));
      peer.resetAfterNotify("b");
      NotificationResult lost = engine.notify(segment, "b", b);
      assertEquals(NotificationResult.State.UNKNOWN, lost.state(), lost.toString());
      assertEquals(NotificationResult.DELIVERED, engine.notify(segment, "c", c));

      List<Ledger.Notified> seen = peer.ledger().notified();
      assertEquals(List.of("a", "b", "c"), seen.stream().map(n -> n.frame().tag()).toList());
      assertEquals(
          List.of(true, false, true), seen.stream().map(Ledger.Notified::answered).toList());
      Ledger.Notified first = seen.get(0);
      Ledger.Notified cut = seen.get(1);
      Ledger.Notified after = seen.get(2);
      assertEquals(first.connection(), cut.connection(), "one connection until it broke");
      assertNotEquals(cut.connection(), after.connection(), "a fresh connection after the break");
      assertTrue(cut.sequence() > first.sequence(), "sequence numbers go up on a connection");
      assertArrayEquals(a, first.frame().bytes());
      assertArrayEquals(b, cut.frame().bytes());
      assertArrayEquals(c, after.frame().bytes());
      for (Ledger.Notified n : seen) {
        assertEquals(peer.epoch(), n.namedEpoch(), "names the peer's incarnation");
        assertEquals(engine.localSegment().epoch(), n.senderEpoch());
        assertEquals("notify-no-replay", n.frame().senderName());
        assertEquals(engine.localSegment().port(), n.frame().senderPort());
      }
      assertEquals(3, engine.counters().notificationsSent());
      assertTrue(peer.ledger().problems().isEmpty(), peer.ledger().problems().toString());
    }
  }
}
