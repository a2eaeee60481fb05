package io.orbite.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedHost;
import io.orbite.nativebind.HostIdentity;
import io.orbite.transport.TestContexts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The SHM transport answers every open, a refused one included (C10: a clear error, never a
 * timeout). A peer that reports another host is refused by the proof at once, on the blocking-I/O
 * executor; the endpoint used to be spawned and then told the open, so a refusal that came first
 * stopped the endpoint before the open reached it, and the open waited out the SegmentTable's 30 s
 * ask (seen as a flaky {@code ShmOtherHostIT}); an open sent just after a refusal went to the
 * stopped endpoint the same way. An open just after a refusal could find the refused endpoint
 * dropped but not yet stopped, and its fresh endpoint's name still taken: the spawn threw and the
 * transport stopped. Each of many opens, two at a time and then one more, must be refused promptly.
 */
class ShmTransportTest {
  private static final ActorTestKit testKit = ActorTestKit.create(ConfigFactory.load());
  private static final ExecutorService blockingIo = Executors.newFixedThreadPool(2);

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
    blockingIo.shutdownNow();
  }

  @Test
  void everyOpenOfAPeerOnAnotherHostIsRefusedAtOnceNeverLeftUnanswered() {
    HostIdentity local = new HostIdentity("this-host", "00000000-0000-0000-0000-000000000001");
    TransportContext context =
        TestContexts.context(
            EngineConfig.defaults(),
            blockingIo,
            new EngineTally(),
            new OwnerBoard(),
            new QuarantineLedger(),
            FaultHooks.NONE);
    ActorRef<TransportCommand> shm = testKit.spawn(ShmTransport.create(context, local));
    SharedExports elsewhere =
        new SharedExports(
            new SharedHost("another-host", "00000000-0000-0000-0000-000000000002", 4242, 7, 1),
            List.of());
    TestProbe<TransportCommand.OpenPeerReply> replies = testKit.createTestProbe();
    for (int i = 1; i <= 300; i++) {
      SegmentDescriptor peer = new SegmentDescriptor("127.0.0.1", 4000, i);
      // Twice at once: the second may reach the endpoint after its refusal, or a fresh one.
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      expectRefusal(replies, i + ".1");
      expectRefusal(replies, i + ".2");
      // Once refused, at once again: the transport may still hold the refused endpoint, be closing
      // it, or have dropped it and spawn a fresh one while the old one is still stopping.
      shm.tell(new TransportCommand.OpenPeer(peer, described(peer, elsewhere), replies.getRef()));
      expectRefusal(replies, i + ".3");
    }
  }

  private static Description described(SegmentDescriptor peer, SharedExports exports) {
    return new Description(peer.host(), peer.port(), peer.epoch(), List.of(), exports);
  }

  private static void expectRefusal(
      TestProbe<TransportCommand.OpenPeerReply> replies, String open) {
    TransportCommand.PeerOpenFailed refused =
        assertInstanceOf(
            TransportCommand.PeerOpenFailed.class,
            replies.receiveMessage(Duration.ofSeconds(3)),
            "open " + open);
    assertEquals(ErrorKind.UNAVAILABLE, refused.kind());
    assertTrue(refused.detail().contains("another host"), refused.detail());
  }
}
