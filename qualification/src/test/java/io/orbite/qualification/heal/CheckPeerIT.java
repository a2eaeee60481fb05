package io.orbite.qualification.heal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerCheck;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code Engine.checkPeer} (issue 40), the path a peer directory's hint takes: the endpoint is
 * described, and only what Describe answers there fences anything (C3). A live peer answering its
 * own epoch keeps working; a source that no longer answers (SIGSTOPped, with keepalive far off so
 * that only the check can notice) is fenced at once, its old segment refused EPOCH_MISMATCH with no
 * byte moved; a restarted source is fenced with the new epoch as its replacement. Every READ checks
 * the whole requester region, payload and guards.
 */
class CheckPeerIT {
  private static final long REGION = 1L << 20;
  private static final long TASK = 64 * 1024 + 3;

  /** Keepalive far off: only the check can notice a stalled source within the test. */
  private static EngineConfig requesterConfig(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withTcp(TcpConfig.defaults().withLanes(2).withKeepalive(5_000, 60_000))
        .withTimeouts(TimeoutConfig.defaults().withDescribeTimeoutMillis(500));
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static PeerCheck check(TransferEngine engine, String endpoint, String reason)
      throws Exception {
    return engine.checkPeer(endpoint, reason).toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @Test
  void aPeerAnsweringItsOwnEpochKeepsWorking(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs)
      throws Exception {
    try (TransferEngine requester = TransferEngine.start(requesterConfig("check-live"));
        EngineProcess source = EngineProcess.start("check-live-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      read(requester, source, local, peer, remote, 3);

      PeerCheck check = check(requester, source.endpoint(), "directory: entry updated");
      assertEquals(peer.descriptor(), check.answering());
      assertEquals(List.of(), check.fenced());
      assertEquals(List.of(), check.lost());
      assertEquals(0, requester.counters().peersFenced());
      read(requester, source, local, peer, remote, 4);
      assertTrue(
          events.stream()
              .noneMatch(e -> e instanceof PeerEvent.PeerFenced || e instanceof PeerEvent.PeerLost),
          events::toString);
    }
  }

  @Test
  void aSourceThatNoLongerAnswersIsFencedAtOnceAndItsSegmentRefused(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine requester = TransferEngine.start(requesterConfig("check-gone"));
        EngineProcess source = EngineProcess.start("check-gone-source", logs, Map.of())) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      read(requester, source, local, peer, remote, 5);

      source.stop();
      try {
        PeerCheck check = check(requester, source.endpoint(), "directory: member removed");
        assertNull(check.answering(), check::toString);
        assertEquals(List.of(peer.descriptor()), check.lost());
        assertEquals(List.of(), check.fenced());
        assertTrue(check.detail().contains("no answer within 500 ms"), check::detail);
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> events.stream().anyMatch(PeerEvent.PeerLost.class::isInstance)),
            events::toString);
        PeerEvent.PeerLost lost =
            (PeerEvent.PeerLost)
                events.stream().filter(PeerEvent.PeerLost.class::isInstance).findFirst().get();
        assertEquals(peer.descriptor(), lost.peer());
        assertTrue(lost.reason().startsWith("directory: member removed"), lost::reason);

        long guard = 77;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        HealIT.refused(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK));
        HealIT.refused(requester, TransferRequest.write(local, TASK, peer, remote, TASK, TASK));
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
        assertEquals(1, requester.counters().peersFenced());
      } finally {
        source.resume();
      }
      // The source answers again with the same epoch: the fenced segment stays refused (a check
      // never unfences), and a fresh open reaches it.
      HealIT.refused(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK));
      RemoteSegment fresh = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertEquals(peer.descriptor(), fresh.descriptor());
      read(requester, source, local, fresh, remote, 6);
    }
  }

  @Test
  void aRestartedSourceIsFencedWithItsReplacement(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port = freePort();
    try (TransferEngine requester = TransferEngine.start(requesterConfig("check-restart"))) {
      List<PeerEvent> events = new CopyOnWriteArrayList<>();
      requester.onPeerEvent(events::add);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first = EngineProcess.startAt("check-restart-source", logs, port, Map.of());
      EngineProcess second = null;
      try {
        long remote = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        RemoteSegment old = requester.openSegment(first.endpoint(), Duration.ofSeconds(10));
        read(requester, first, local, old, remote, 7);
        first.kill();
        second = first.restart();
        assertNotEquals(first.epoch(), second.epoch());

        PeerCheck check = check(requester, first.endpoint(), "directory: a new epoch");
        assertEquals(second.epoch(), check.answering().epoch());
        // The lanes' own reconnection may have learned the restart first; either way the old
        // incarnation is fenced exactly once, with the replacement the check saw.
        // (Listeners hear events off the table's mailbox, so the event may follow the reply.)
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> events.stream().anyMatch(PeerEvent.PeerFenced.class::isInstance)),
            events::toString);
        List<PeerEvent.PeerFenced> fenced =
            events.stream()
                .filter(PeerEvent.PeerFenced.class::isInstance)
                .map(PeerEvent.PeerFenced.class::cast)
                .toList();
        assertEquals(1, fenced.size(), events::toString);
        assertEquals(old.descriptor(), fenced.getFirst().peer());
        assertEquals(second.epoch(), fenced.getFirst().replacement().epoch());
        assertTrue(check.fenced().isEmpty() || check.fenced().equals(List.of(old.descriptor())));

        long guard = 91;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        HealIT.refused(requester, TransferRequest.read(local, 0, old, remote, 0, TASK));
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");

        long replacement = Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE"));
        RemoteSegment fresh = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
        assertEquals(second.epoch(), fresh.descriptor().epoch());
        read(requester, second, local, fresh, replacement, 8);
      } finally {
        if (second != null) {
          second.close();
        }
        first.close();
      }
    }
  }

  @Test
  void aMalformedEndpointIsRefusedNamingIt() {
    try (TransferEngine requester = TransferEngine.start(requesterConfig("check-bad"))) {
      CompletionException e =
          assertThrows(
              CompletionException.class,
              () -> requester.checkPeer("no-port-here", "test").toCompletableFuture().join());
      TransferException cause = (TransferException) e.getCause();
      assertEquals(ErrorKind.INVALID_ARGUMENT, cause.kind());
      assertTrue(cause.getMessage().contains("'no-port-here'"), cause::getMessage);
    }
  }

  /** One READ of [0, TASK) at remote offset 11 into local [TASK, 2 * TASK), guards around it. */
  private static void read(
      TransferEngine requester,
      EngineProcess source,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long seed)
      throws Exception {
    long data = seed * 2;
    long guard = seed * 2 + 1;
    source.call("FILL " + remote + " " + data);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(TransferRequest.read(local, TASK, peer, remote, 11, TASK)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    } finally {
      batch.free();
    }
    assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, guard, 0), "guard before");
    assertEquals(-1, Pattern.verify(local.segment(), TASK, TASK, data, 11), "payload");
    assertEquals(
        -1,
        Pattern.verify(local.segment(), 2 * TASK, REGION - 2 * TASK, guard, 2 * TASK),
        "guard after");
  }
}
