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
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a task meets while its peer's lanes reconnect, and when they cannot: with the peer stopped
 * (SIGSTOP: connections time out), a task waits for a lane within its deadline and fails TIMEOUT
 * never sent, and the lanes come back after SIGCONT; with {@code tcp.waitWhileReconnecting} off it
 * fails PEER_LOST at once; a stopped peer whose lanes cannot reconnect within {@code
 * tcp.reconnectGiveUpMillis} is declared lost; a peer whose endpoint refuses connections (its
 * process is gone) is lost at once, with no wait. Nothing lands in the requester's region.
 */
class ReconnectPolicyIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 64 * 1024;

  private static EngineConfig requester(String name, boolean wait, int giveUpMillis) {
    return EngineConfig.defaults()
        .withName(name)
        .withTcp(
            TcpConfig.defaults()
                .withConnectTimeoutMillis(300)
                .withReconnect(20, 100, giveUpMillis)
                .withWaitWhileReconnecting(wait)
                .withKeepalive(100, 500));
  }

  @Test
  void aTaskWaitsForALaneOfAStoppedPeerWithinItsDeadlineAndTheLanesComeBack(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine engine = TransferEngine.start(requester("waiting", true, 60_000));
        EngineProcess source = EngineProcess.start("stopped-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 5");
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = engine.openSegment(source.endpoint(), Duration.ofSeconds(10));
      source.stop();
      try {
        assertTrue(
            Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.LaneLost.class) >= 2),
            () -> "both lanes lost: " + events);
        Pattern.fill(local.segment(), 0, REGION, 6, 0);
        long begun = System.nanoTime();
        TaskResult waited =
            one(
                engine,
                TransferRequest.read(local, 0, peer, remote, 0, TASK)
                    .withDeadline(Duration.ofMillis(300)));
        long tookMillis = (System.nanoTime() - begun) / 1_000_000;
        assertEquals(TaskState.FAILED, waited.state(), waited::toString);
        assertEquals(ErrorKind.TIMEOUT, waited.errorKind(), waited::toString);
        assertEquals(RemoteEffect.NONE, waited.remoteEffect());
        assertEquals(0, waited.bytes());
        assertTrue(waited.locallyDrained());
        assertTrue(waited.detail().contains("before it was sent"), waited::detail);
        assertTrue(tookMillis >= 250, "it waited for a lane until its deadline: " + tookMillis);
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 6, 0), "nothing landed");
      } finally {
        source.resume();
      }
      assertTrue(
          Await.until(
              Duration.ofSeconds(10), () -> count(events, PeerEvent.LaneRestored.class) >= 2),
          () -> "both lanes back: " + events);
      TaskResult ok = one(engine, TransferRequest.read(local, 0, peer, remote, 0, TASK));
      assertEquals(TaskState.COMPLETED, ok.state(), ok::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 5, 0), "the READ's bytes");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, 6, TASK), "guard");
    }
  }

  @Test
  void aStoppedPeerWhoseLanesCannotReconnectWithinTheBoundIsLost(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine engine = TransferEngine.start(requester("giving-up", true, 1_500));
        EngineProcess source = EngineProcess.start("never-back-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 7, 0);
      RemoteSegment peer = engine.openSegment(source.endpoint(), Duration.ofSeconds(10));
      source.stop();
      try {
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
                () -> one(engine, TransferRequest.read(local, 0, peer, remote, 0, TASK)));
        assertEquals(ErrorKind.PEER_LOST, lost.kind(), lost::getMessage);
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 7, 0), "nothing landed");
      } finally {
        source.resume();
      }
    }
  }

  @Test
  void withWaitingOffATaskSubmittedWhileReconnectingFailsPeerLostAtOnce(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine engine = TransferEngine.start(requester("not-waiting", false, 60_000));
        EngineProcess source = EngineProcess.start("stopped-source2", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 8, 0);
      RemoteSegment peer = engine.openSegment(source.endpoint(), Duration.ofSeconds(10));
      source.stop();
      try {
        assertTrue(
            Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.LaneLost.class) >= 2),
            () -> "both lanes lost: " + events);
        long begun = System.nanoTime();
        ErrorKind kind =
            kindOf(
                engine,
                TransferRequest.read(local, 0, peer, remote, 0, TASK)
                    .withDeadline(Duration.ofSeconds(20)));
        long tookMillis = (System.nanoTime() - begun) / 1_000_000;
        assertEquals(ErrorKind.PEER_LOST, kind);
        assertTrue(tookMillis < 5_000, "refused at once, not at its deadline: " + tookMillis);
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 8, 0), "nothing landed");
      } finally {
        source.resume();
      }
    }
  }

  @Test
  void aPeerWhoseEndpointRefusesConnectionsIsLostAtOnce() throws Exception {
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("gone-source"));
    try (TransferEngine engine = TransferEngine.start(requester("refused", true, 60_000))) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      engine.onPeerEvent(events::add);
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 9, 0);
      RemoteSegment peer =
          engine.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      source.close(Duration.ofSeconds(10));
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.PeerLost.class) == 1),
          () -> "lost as soon as its endpoint refused a reconnection: " + events);
      ErrorKind kind =
          kindOf(
              engine,
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withDeadline(Duration.ofSeconds(20)));
      assertEquals(ErrorKind.PEER_LOST, kind);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 9, 0), "nothing landed");
    } finally {
      source.close();
    }
  }

  private static long count(List<PeerEvent> events, Class<? extends PeerEvent> kind) {
    return events.stream().filter(kind::isInstance).count();
  }

  /** The kind a task fails with, refused at submit or failed as a task (then: 0 bytes, NONE). */
  private static ErrorKind kindOf(TransferEngine engine, TransferRequest request) {
    try {
      TaskResult r = one(engine, request);
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(0, r.bytes());
      assertEquals(RemoteEffect.NONE, r.remoteEffect());
      return r.errorKind();
    } catch (TransferException e) {
      return e.kind();
    }
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
