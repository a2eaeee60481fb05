package io.orbite.qualification.heal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * What a task meets while its peer's lanes reconnect, and what happens when they cannot: a task
 * submitted while no lane works waits for one within its deadline, then fails TIMEOUT never sent;
 * with {@code tcp.waitWhileReconnecting} off it fails PEER_LOST at once; and a peer whose lanes
 * cannot reconnect within {@code tcp.reconnectGiveUpMillis} is declared lost ({@code PeerLost}),
 * its entry closed, later tasks refused PEER_LOST. Nothing lands in the requester's region.
 */
class ReconnectPolicyIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 64 * 1024;

  private static EngineConfig requester(String name, boolean wait) {
    return EngineConfig.defaults()
        .withName(name)
        .withTcp(
            TcpConfig.defaults()
                .withReconnect(20, 100, 1_500)
                .withWaitWhileReconnecting(wait)
                .withKeepalive(100, 500));
  }

  @Test
  void aTaskWaitsForALaneWithinItsDeadlineAndAPeerThatNeverComesBackIsLost() throws Exception {
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("gone-source"));
    try (TransferEngine engine = TransferEngine.start(requester("waiting", true))) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(remote.segment(), 0, REGION, 5, 0);
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          engine.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      TaskResult ok = one(engine, TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK));
      assertEquals(TaskState.COMPLETED, ok.state(), ok::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 5, 0));

      source.close(Duration.ofSeconds(10));
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.LaneLost.class) >= 2),
          () -> "both lanes lost: " + events);
      Pattern.fill(local.segment(), 0, REGION, 6, 0);
      long begun = System.nanoTime();
      TaskResult waited =
          one(
              engine,
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withDeadline(Duration.ofMillis(300)));
      long tookMillis = (System.nanoTime() - begun) / 1_000_000;
      assertEquals(TaskState.FAILED, waited.state(), waited::toString);
      assertEquals(ErrorKind.TIMEOUT, waited.errorKind(), waited::toString);
      assertEquals(RemoteEffect.NONE, waited.remoteEffect());
      assertEquals(0, waited.bytes());
      assertTrue(waited.locallyDrained());
      assertTrue(waited.detail().contains("before it was sent"), waited::detail);
      assertTrue(tookMillis >= 250, "it waited for a lane until its deadline: " + tookMillis);

      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> count(events, PeerEvent.PeerLost.class) == 1),
          () -> "no lane came back within tcp.reconnectGiveUpMillis: " + events);
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> engine.peers().stream().allMatch(e -> e.state() == PeerEntry.State.CLOSED)),
          () -> "the entry closed: " + engine.peers());
      // Refused at submit (nothing admitted) now that the channel's gate is closed.
      TransferException lost =
          assertThrows(
              TransferException.class,
              () -> one(engine, TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)));
      assertEquals(ErrorKind.PEER_LOST, lost.kind(), lost::getMessage);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 6, 0), "nothing landed");
    } finally {
      source.close();
    }
  }

  @Test
  void withWaitingOffATaskSubmittedWhileReconnectingFailsPeerLostAtOnce() throws Exception {
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("gone-source2"));
    try (TransferEngine engine = TransferEngine.start(requester("not-waiting", false))) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 7, 0);
      RemoteSegment peer =
          engine.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      source.close(Duration.ofSeconds(10));
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.LaneLost.class) >= 2),
          () -> "both lanes lost: " + events);
      long begun = System.nanoTime();
      TaskResult refused =
          one(
              engine,
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withDeadline(Duration.ofSeconds(20)));
      long tookMillis = (System.nanoTime() - begun) / 1_000_000;
      assertEquals(ErrorKind.PEER_LOST, refused.errorKind(), refused::toString);
      assertEquals(RemoteEffect.NONE, refused.remoteEffect());
      assertEquals(0, refused.bytes());
      assertTrue(tookMillis < 5_000, "refused at once, not at its deadline: " + tookMillis);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 7, 0), "nothing landed");
    } finally {
      source.close();
    }
  }

  private static long count(List<PeerEvent> events, Class<? extends PeerEvent> kind) {
    return events.stream().filter(kind::isInstance).count();
  }

  private static TaskResult one(TransferEngine engine, TransferRequest request) {
    Batch batch = engine.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      return batch.await(Duration.ofSeconds(30)).tasks().getFirst();
    } finally {
      batch.free();
    }
  }
}
