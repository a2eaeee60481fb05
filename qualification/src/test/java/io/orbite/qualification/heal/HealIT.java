package io.orbite.qualification.heal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.config.ShmConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Self-healing peers with real processes (issue 38): a source's lane sockets cut from under it
 * reconnect and transfers resume on the same segment; a SIGKILLed source restarted at the same
 * endpoint is fenced with no task running, and its old segment is refused EPOCH_MISMATCH over TCP
 * and SHM with nothing moved; a SIGSTOPped source is noticed by keepalive and its lanes come back
 * after SIGCONT. Every transfer checks the whole requester region (payload and guards) and the
 * source's region.
 */
class HealIT {
  private static final long REGION = 2L << 20;
  private static final long TASK = 64 * 1024 + 5;
  private static final int TASKS = 16;
  private static final Map<String, String> SHM_SOURCE =
      Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}");

  private static EngineConfig requesterConfig(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withTcp(TcpConfig.defaults().withLanes(2).withKeepalive(200, 1_000))
        .withShm(ShmConfig.defaults().withEnabled(true));
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void cutLanesReconnectAndTransfersResumeOnTheSameSegment(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine requester = TransferEngine.start(requesterConfig("heal-cut"));
        EngineProcess source = EngineProcess.start("heal-cut-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      AutoCloseable listening = requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      roundTrip(requester, source, local, peer, remote, Transport.TCP, 1);

      // One lane cut: the other carries on, the cut one comes back.
      assertEquals("1", source.call("CUT 1"));
      assertTrue(
          Await.until(
              Duration.ofSeconds(10), () -> count(events, PeerEvent.LaneRestored.class) >= 1),
          () -> "a lane came back: " + events);
      roundTrip(requester, source, local, peer, remote, Transport.TCP, 2);

      // Both lanes cut at once, with READs submitted meanwhile: they wait for a lane (RECONNECTING)
      // or complete; none is lost, and every byte is checked.
      source.call("FILL " + remote + " 31");
      Pattern.fill(local.segment(), 0, REGION, 32, 0);
      Batch batch = requester.allocateBatch(TASKS);
      assertEquals("2", source.call("CUT 2"));
      batch.submit(reads(local, peer, remote, Transport.TCP));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      assertTrue(s.done());
      for (TaskResult r : s.tasks()) {
        if (r.state() == TaskState.COMPLETED) {
          assertEquals(TASK, r.bytes());
          long lo = r.index() * TASK * 2;
          assertEquals(-1, Pattern.verify(local.segment(), lo, TASK, 31, lo + 7), r::toString);
        } else {
          // A READ that was on a cut lane failed after its lane drained, with nothing claimed.
          assertEquals(ErrorKind.PEER_LOST, r.errorKind(), r::toString);
          assertEquals(RemoteEffect.NONE, r.remoteEffect());
          assertTrue(r.locallyDrained());
        }
      }
      batch.free();
      assertTrue(
          Await.until(
              Duration.ofSeconds(10), () -> count(events, PeerEvent.LaneRestored.class) >= 3),
          () -> "both lanes came back: " + events);
      roundTrip(requester, source, local, peer, remote, Transport.TCP, 3);
      assertTrue(requester.counters().lanesLost() >= 3, requester.counters()::toString);
      assertTrue(requester.counters().lanesRestored() >= 3, requester.counters()::toString);
      assertEquals(0, count(events, PeerEvent.PeerFenced.class));
      listening.close();
    }
  }

  @Test
  void aRestartedSourceIsFencedWithNoTaskRunningAndItsOldSegmentIsRefused(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port = freePort();
    try (TransferEngine requester = TransferEngine.start(requesterConfig("heal-restart"))) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first = EngineProcess.startAt("heal-restart-source", logs, port, SHM_SOURCE);
      EngineProcess second = null;
      try {
        long remote = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        RemoteSegment old = requester.openSegment(first.endpoint(), Duration.ofSeconds(10));
        assertTrue(old.sharedReachable(remote));
        roundTrip(requester, first, local, old, remote, Transport.SHM, 4);
        roundTrip(requester, first, local, old, remote, Transport.TCP, 5);

        first.kill();
        second = first.restart();
        assertNotEquals(first.epoch(), second.epoch());
        long replacement = Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE"));
        assertEquals(remote, replacement, "the replacement publishes the same region id");
        second.call("FILL " + replacement + " 41");
        long restarted = System.nanoTime();
        // No task runs: the engine learns of the replacement by itself, within the bound.
        assertTrue(
            Await.until(
                Duration.ofSeconds(5), () -> count(events, PeerEvent.PeerFenced.class) == 1),
            () -> "PeerFenced: " + events);
        long detectMillis = (System.nanoTime() - restarted) / 1_000_000;
        assertTrue(
            detectMillis <= requester.config().tcp().livenessTimeoutMillis() + 1_000,
            "noticed within the bound: " + detectMillis + " ms");
        PeerEvent.PeerFenced fenced =
            (PeerEvent.PeerFenced)
                events.stream().filter(PeerEvent.PeerFenced.class::isInstance).findFirst().get();
        assertEquals(old.descriptor(), fenced.peer());
        assertEquals(second.epoch(), fenced.replacement().epoch());

        long guard = 42;
        for (Transport t : List.of(Transport.TCP, Transport.SHM)) {
          Pattern.fill(local.segment(), 0, REGION, guard, 0);
          refused(requester, TransferRequest.read(local, 0, old, remote, 0, TASK).withTransport(t));
          refused(
              requester,
              TransferRequest.write(local, TASK, old, remote, TASK, TASK).withTransport(t));
          assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
        }
        assertEquals(
            "OK",
            second.ask("VERIFY " + replacement + " 41 0", List.of()),
            "the replacement's memory is untouched");

        RemoteSegment fresh = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
        assertEquals(second.epoch(), fresh.descriptor().epoch());
        roundTrip(requester, second, local, fresh, replacement, Transport.SHM, 6);
        roundTrip(requester, second, local, fresh, replacement, Transport.TCP, 7);
        // The old segment stays refused after the new one works (C3).
        refused(requester, TransferRequest.read(local, 0, old, remote, 0, TASK));
        assertEquals(1, requester.counters().peersFenced());
      } finally {
        if (second != null) {
          second.close();
        }
        first.close();
      }
    }
  }

  @Test
  void aRestartedRdmaSourceIsFencedWithNoTaskRunningAndItsOldSegmentIsRefusedOverRdma(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port = freePort();
    EngineConfig config =
        requesterConfig("heal-rdma")
            .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(2).withLanes(2));
    Map<String, String> rdmaSource =
        Map.of("ORBITE_CONF", "{\"rdma\":{\"enabled\":true,\"softwareDevices\":2,\"lanes\":2}}");
    try (TransferEngine requester = TransferEngine.start(config)) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first = EngineProcess.startAt("heal-rdma-source", logs, port, rdmaSource);
      EngineProcess second = null;
      try {
        long remote = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        RemoteSegment old = requester.openSegment(first.endpoint(), Duration.ofSeconds(10));
        roundTrip(requester, first, local, old, remote, Transport.RDMA, 10);

        first.kill();
        second = first.restart();
        long replacement = Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE"));
        second.call("FILL " + replacement + " 43");
        assertTrue(
            Await.until(
                Duration.ofSeconds(5), () -> count(events, PeerEvent.PeerFenced.class) == 1),
            () -> "PeerFenced: " + events);
        long guard = 44;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        refused(
            requester,
            TransferRequest.read(local, 0, old, remote, 0, TASK).withTransport(Transport.RDMA));
        refused(
            requester,
            TransferRequest.write(local, TASK, old, remote, TASK, TASK)
                .withTransport(Transport.RDMA));
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
        assertEquals("OK", second.ask("VERIFY " + replacement + " 43 0", List.of()));
        RemoteSegment fresh = requester.reopen(old, Duration.ofSeconds(10));
        assertEquals(second.epoch(), fresh.descriptor().epoch());
        roundTrip(requester, second, local, fresh, replacement, Transport.RDMA, 11);
      } finally {
        if (second != null) {
          second.close();
        }
        first.close();
      }
    }
  }

  @Test
  void aStoppedSourceIsNoticedByKeepaliveAndItsLanesComeBackAfterSigcont(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine requester = TransferEngine.start(requesterConfig("heal-stop"));
        EngineProcess source = EngineProcess.start("heal-stop-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      // The same events through the Streams API.
      List<PeerEvent> streamed = new CopyOnWriteArrayList<>();
      requester.peerEvents().runForeach(streamed::add, requester.system());
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      roundTrip(requester, source, local, peer, remote, Transport.TCP, 8);

      source.stop();
      long stopped = System.nanoTime();
      try {
        assertTrue(
            Await.until(Duration.ofSeconds(5), () -> count(events, PeerEvent.LaneLost.class) >= 2),
            () -> "both lanes lost by keepalive: " + events);
        long detectMillis = (System.nanoTime() - stopped) / 1_000_000;
        assertTrue(detectMillis <= 1_000 + 1_000, "noticed within the bound: " + detectMillis);
        assertTrue(requester.counters().keepaliveMisses() >= 2, requester.counters()::toString);
      } finally {
        source.resume();
      }
      assertTrue(
          Await.until(
              Duration.ofSeconds(15), () -> count(events, PeerEvent.LaneRestored.class) >= 2),
          () -> "both lanes back after SIGCONT: " + events);
      assertEquals(0, count(events, PeerEvent.PeerFenced.class), "the same epoch answered");
      roundTrip(requester, source, local, peer, remote, Transport.TCP, 9);
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> streamed.size() == events.size() && streamed.containsAll(events)),
          () -> "the stream saw what the listener saw: " + streamed + " vs " + events);
    }
  }

  private static long count(List<PeerEvent> events, Class<? extends PeerEvent> kind) {
    return events.stream().filter(kind::isInstance).count();
  }

  /** Task i: local [i * 2 * TASK, +TASK) and remote [i * 2 * TASK + 7, +TASK). */
  private static List<TransferRequest> reads(
      RegisteredMemory local, RemoteSegment peer, long remote, Transport t) {
    List<TransferRequest> out = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      out.add(
          TransferRequest.read(local, i * TASK * 2, peer, remote, i * TASK * 2 + 7, TASK)
              .withTransport(t));
    }
    return out;
  }

  /** A READ round and a WRITE round over {@code t}, each checking both whole regions. */
  private static void roundTrip(
      TransferEngine requester,
      EngineProcess source,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      Transport t,
      long seed)
      throws Exception {
    long data = seed * 2;
    long guard = seed * 2 + 1;
    source.call("FILL " + remote + " " + data);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    runAll(requester, reads(local, peer, remote, t), t);
    for (int i = 0; i < TASKS; i++) {
      long lo = i * TASK * 2;
      assertEquals(-1, Pattern.verify(local.segment(), lo, TASK, data, lo + 7), "READ " + i);
      long gap = i == TASKS - 1 ? REGION - lo - TASK : TASK;
      assertEquals(
          -1, Pattern.verify(local.segment(), lo + TASK, gap, guard, lo + TASK), "guard " + i);
    }
    assertEquals("OK", source.ask("VERIFY " + remote + " " + data + " 0", List.of()));

    long written = seed * 3 + 1;
    Pattern.fill(local.segment(), 0, REGION, written, 0);
    source.call("FILL " + remote + " " + guard);
    List<TransferRequest> writes = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      long lo = i * TASK * 2;
      long ro = i * TASK * 2 + 3;
      writes.add(TransferRequest.write(local, lo, peer, remote, ro, TASK).withTransport(t));
      lines.add(ro + " " + TASK + " " + written + " " + lo);
    }
    runAll(requester, writes, t);
    assertEquals(
        "OK",
        source.ask("VERIFY " + remote + " " + guard + " " + lines.size(), lines),
        "source after WRITE: payload and guards");
  }

  private static void runAll(TransferEngine engine, List<TransferRequest> requests, Transport t) {
    Batch batch = engine.allocateBatch(requests.size());
    try {
      batch.submit(requests);
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      assertTrue(s.done(), "drained");
      for (TaskResult r : s.tasks()) {
        assertEquals(TaskState.COMPLETED, r.state(), r::toString);
        assertEquals(t, r.transport(), r::toString);
      }
    } finally {
      batch.free();
    }
  }

  /**
   * Submits {@code request} alone and requires it refused EPOCH_MISMATCH with nothing moved, no
   * remote effect and drained (or the submission itself refused EPOCH_MISMATCH); also {@code
   * CheckPeerIT}'s.
   */
  static void refused(TransferEngine requester, TransferRequest request) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      TaskResult r = batch.await(Duration.ofSeconds(30)).tasks().getFirst();
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(ErrorKind.EPOCH_MISMATCH, r.errorKind(), r::toString);
      assertEquals(0, r.bytes());
      assertEquals(RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
    } catch (io.orbite.engine.TransferException e) {
      assertEquals(ErrorKind.EPOCH_MISMATCH, e.kind(), e::getMessage);
    } finally {
      batch.free();
    }
  }
}
