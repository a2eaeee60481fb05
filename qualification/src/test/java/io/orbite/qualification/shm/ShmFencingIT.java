package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.contract.HeldWorker;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fencing of SHM mappings through OFD locks (C1, C3, C11): a mapping of an allocation its source
 * unregistered is refused and dropped; a mapping of a source that was killed is never used again,
 * in particular never to reach the replacement incarnation at the same endpoint (EPOCH_MISMATCH,
 * zero bytes, the destination untouched), while a fresh open reaches the replacement through SHM.
 */
class ShmFencingIT {
  private static final long REGION = 8L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void aMappingIsRefusedAfterTheSourceUnregistersAndIsNeverUsedAgain(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("shm-unreg-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("shm-unreg-requester"))) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 11");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertTrue(peer.sharedReachable(remote), "SHM chosen for the same-host source");

      // A first READ maps the allocation and copies it.
      Pattern.fill(local.segment(), 0, REGION, 12, 0);
      TaskResult first = runOne(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK));
      assertEquals(TaskState.COMPLETED, first.state(), first::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 11, 0), "the first READ landed");
      assertEquals(1, requester.counters().shmMappingsOpened());

      source.call("UNREGISTER " + remote);
      long guard = 13;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      long fencedBefore = requester.counters().shmFenced();
      TaskResult read =
          runOne(
              requester,
              TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.SHM));
      TaskResult write =
          runOne(requester, TransferRequest.write(local, TASK, peer, remote, TASK, TASK));
      for (TaskResult r : List.of(read, write)) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.PERMISSION_DENIED, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
      }
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, REGION, guard, 0),
          "no byte moved after the unregister");
      assertTrue(requester.counters().shmFenced() > fencedBefore, "the fence was seen");
      assertEquals(1, requester.counters().shmMappingsClosed(), "the dead mapping was unmapped");
      assertEquals(1, requester.counters().shmMappingsOpened(), "and never mapped again");
      assertEquals(
          0,
          ShmPeer.counters(source).get("sourceBytesRead"),
          "nothing was served over TCP instead");
    }
  }

  @Test
  void afterCloseSourceNoSameHostPeerCopiesAnyMore(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("shm-closed-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("shm-closed-requester"))) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 21");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertTrue(peer.sharedReachable(remote), "SHM chosen for the same-host source");
      Pattern.fill(local.segment(), 0, REGION, 22, 0);
      TaskResult first = runOne(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK));
      assertEquals(TaskState.COMPLETED, first.state(), first::toString);
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, TASK, 21, 0),
          "the READ before closeSource landed");

      source.call("CLOSE_SOURCE");
      Pattern.fill(local.segment(), 0, REGION, 23, 0);
      TaskResult read =
          runOne(
              requester,
              TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.SHM));
      TaskResult write =
          runOne(
              requester,
              TransferRequest.write(local, TASK, peer, remote, TASK, TASK)
                  .withTransport(Transport.SHM));
      for (TaskResult r : List.of(read, write)) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
      }
      assertEquals(
          -1, Pattern.verify(local.segment(), 0, REGION, 23, 0), "no byte moved after closeSource");
      assertEquals(
          "OK",
          source.ask("VERIFY " + remote + " 21 0", List.of()),
          "the source's memory is untouched");
    }
  }

  @Test
  void aKilledSourcesMappingNeverReachesItsReplacement(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    try (TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName("shm-kill-requester"))) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first =
          EngineProcess.startAt("shm-kill-source", logs, port, ShmPeer.SHM_SOURCE);
      EngineProcess second = null;
      try {
        long remote = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        first.call("FILL " + remote + " 21");
        RemoteSegment old = requester.openSegment(first.endpoint(), Duration.ofSeconds(10));
        assertTrue(old.sharedReachable(remote));
        Pattern.fill(local.segment(), 0, REGION, 22, 0);
        TaskResult before = runOne(requester, TransferRequest.read(local, 0, old, remote, 0, TASK));
        assertEquals(TaskState.COMPLETED, before.state(), before::toString);
        assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 21, 0));

        first.kill();
        second = first.restart();
        assertNotEquals(first.epoch(), second.epoch());
        long replacement = Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE"));
        assertEquals(remote, replacement, "the replacement publishes the same region id");
        second.call("FILL " + replacement + " 23");

        // The engine learns of the replacement by itself (a reconnecting TCP lane's HELLO is
        // refused by the new epoch, issue 38), with no reopen: the old segment is then refused
        // EPOCH_MISMATCH over SHM as over TCP (C3); nothing moves.
        assertTrue(
            Await.until(Duration.ofSeconds(10), () -> requester.counters().peersFenced() == 1),
            "the replacement was learned without a reopen");
        long guard = 24;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        refused(
            requester,
            TransferRequest.read(local, 0, old, remote, 0, TASK).withTransport(Transport.SHM),
            ErrorKind.EPOCH_MISMATCH);
        refused(
            requester,
            TransferRequest.write(local, TASK, old, remote, TASK, TASK)
                .withTransport(Transport.SHM),
            ErrorKind.EPOCH_MISMATCH);
        assertEquals(
            -1,
            Pattern.verify(local.segment(), 0, REGION, guard, 0),
            "no byte of either incarnation landed");
        ShmPeer.assertRemoteRegion(
            second, replacement, 23, List.of(), "the replacement's memory is untouched");
        assertTrue(
            Await.until(
                Duration.ofSeconds(10), () -> requester.counters().shmMappingsClosed() == 1),
            "the dead incarnation's mapping is unmapped");

        // A fresh open reaches the replacement, through SHM again.
        RemoteSegment fresh = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
        assertEquals(second.epoch(), fresh.descriptor().epoch());
        assertTrue(fresh.sharedReachable(replacement));
        long shmBefore = requester.counters().tasksDispatched(Transport.SHM);
        TaskResult after =
            runOne(requester, TransferRequest.read(local, 0, fresh, replacement, 0, TASK));
        assertEquals(TaskState.COMPLETED, after.state(), after::toString);
        assertEquals(shmBefore + 1, requester.counters().tasksDispatched(Transport.SHM));
        assertEquals(
            -1,
            RegionCheck.check(local.segment(), List.of(new Span(0, TASK, 23, 0)), guard),
            "the replacement's bytes landed, guards intact");
        // And the old segment stays refused now that the table knows the new epoch.
        refusedAsStale(requester, TransferRequest.read(local, TASK, old, remote, 0, TASK));
      } finally {
        first.kill();
        if (second != null) {
          second.close();
        }
      }
    }
  }

  /**
   * The SHM channel belongs to the peer's table entry: it holds an endpoint charge of its own, and
   * when a fresh open learns the replacement's epoch the table fences it with the entry. The SHM
   * lane is held inside a copy meanwhile, so it cannot notice the death itself (its idle token
   * check): the fence seen, and the queued task's refusal naming the new epoch, are the table's.
   * The endpoint has one lane ({@code shm.lanes} 1), so the second task queues behind the held copy
   * and no idle sibling lane sees the death first. The charges come back when the old segment is
   * closed, and then the replacement gets SHM too.
   */
  @Test
  void theTableFencesAndChargesTheSharedChannelOfAReplacedIncarnation(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    HeldWorker hook = HeldWorker.atSharedCopy();
    EngineConfig config = EngineConfig.defaults().withName("shm-table-requester");
    config =
        config.withBudgets(config.budgets().withMaxEndpoints(3)).withShm(config.shm().withLanes(1));
    try (TransferEngine requester = FaultInjection.start(config, hook)) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first =
          EngineProcess.startAt("shm-table-source", logs, port, ShmPeer.SHM_SOURCE);
      EngineProcess second = null;
      try {
        long remote = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        first.call("FILL " + remote + " 31");
        RemoteSegment old = requester.openSegment(first.endpoint(), Duration.ofSeconds(10));
        assertTrue(old.sharedReachable(remote), "SHM chosen for the same-host source");
        assertEquals(
            2,
            requester.owed().endpoints(),
            "the TCP and the SHM channel are charged: " + requester.owed());
        assertEquals(
            PeerEntry.Shared.ACTIVE,
            requester.peers().getFirst().shared(),
            requester.peers()::toString);
        long guard = 32;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        TaskResult before = runOne(requester, TransferRequest.read(local, 0, old, remote, 0, TASK));
        assertEquals(TaskState.COMPLETED, before.state(), before::toString);
        assertEquals(
            -1,
            RegionCheck.check(local.segment(), List.of(new Span(0, TASK, 31, 0)), guard),
            "the READ before the restart landed, guards intact");
        Pattern.fill(local.segment(), 0, REGION, guard, 0);

        // Hold the lane inside a copy, and queue a second READ behind it.
        Batch held = requester.allocateBatch(1);
        Batch queued = requester.allocateBatch(1);
        try {
          hook.arm();
          held.submit(
              List.of(
                  TransferRequest.read(local, 0, old, remote, 0, TASK)
                      .withTransport(Transport.SHM)));
          hook.awaitHeld(Duration.ofSeconds(20));
          queued.submit(
              List.of(
                  TransferRequest.read(local, 2 * TASK, old, remote, 2 * TASK, TASK)
                      .withTransport(Transport.SHM)));

          first.kill();
          second = first.restart();
          long replacement = Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE"));
          assertEquals(remote, replacement, "the replacement publishes the same region id");
          second.call("FILL " + replacement + " 33");

          // The fresh open fences the old entry, both channels, while the lane is still held. Its
          // own
          // SHM channel would be a fourth endpoint: refused by the budget, so it is reached over
          // TCP.
          RemoteSegment fresh = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
          assertEquals(second.epoch(), fresh.descriptor().epoch());
          assertFalse(fresh.sharedReachable(replacement), "no SHM beyond budgets.maxEndpoints");
          String refusal = fresh.unreachableBecause(Transport.SHM, replacement);
          assertTrue(refusal.contains("endpoints: budget of 3"), refusal);
          assertEquals(3, requester.owed().endpoints(), requester.owed()::toString);
          long oldEpoch = first.epoch();
          PeerEntry fenced =
              requester.peers().stream()
                  .filter(p -> p.peer().epoch() == oldEpoch)
                  .findFirst()
                  .orElseThrow();
          assertEquals(PeerEntry.State.FENCED, fenced.state(), fenced::toString);
          assertEquals(
              PeerEntry.Shared.FENCED,
              fenced.shared(),
              () -> "fenced by the table, the lane held: " + fenced);
          assertEquals(
              TaskState.PENDING,
              queued.status().tasks().getFirst().state(),
              "still queued behind the hold");

          hook.release();
          String newEpoch = "now runs epoch " + Long.toHexString(second.epoch());
          TaskResult q = queued.await(Duration.ofSeconds(30)).tasks().getFirst();
          assertEquals(TaskState.FAILED, q.state(), q::toString);
          assertEquals(ErrorKind.EPOCH_MISMATCH, q.errorKind(), q::toString);
          assertTrue(q.detail().contains(newEpoch), () -> "refused by the table's fence: " + q);
          assertEquals(0, q.bytes());
          assertEquals(RemoteEffect.NONE, q.remoteEffect());
          TaskResult h = held.await(Duration.ofSeconds(30)).tasks().getFirst();
          // The held copy had begun under the old incarnation's locks: it lands whole or not at
          // all.
          List<Span> landed =
              h.state() == TaskState.COMPLETED ? List.of(new Span(0, TASK, 31, 0)) : List.of();
          assertTrue(h.state() == TaskState.COMPLETED || h.bytes() == 0, h::toString);
          assertEquals(
              -1,
              RegionCheck.check(local.segment(), landed, guard),
              "the queued READ moved nothing; the held one whole or nothing: " + h);

          for (TransferRequest stale :
              List.of(
                  TransferRequest.read(local, 4 * TASK, old, remote, 0, TASK)
                      .withTransport(Transport.SHM),
                  TransferRequest.write(local, TASK, old, remote, TASK, TASK)
                      .withTransport(Transport.SHM))) {
            String why = staleRefusal(requester, stale);
            assertTrue(why.contains(newEpoch), why);
          }
          assertEquals(
              -1,
              RegionCheck.check(local.segment(), landed, guard),
              "nothing moved by the stale requests");
          ShmPeer.assertRemoteRegion(
              second, replacement, 33, List.of(), "the replacement's memory is untouched");

          // Closing the old segment reclaims its entry and both of its charges; SHM then fits.
          old.close();
          fresh.close();
          assertTrue(
              Await.until(Duration.ofSeconds(10), () -> requester.owed().endpoints() == 1),
              () ->
                  "the old entry's two charges returned: "
                      + requester.owed()
                      + " "
                      + requester.peers());
          RemoteSegment again = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
          assertTrue(
              again.sharedReachable(replacement),
              () -> again.unreachableBecause(Transport.SHM, replacement));
          assertEquals(2, requester.owed().endpoints(), requester.owed()::toString);
          Pattern.fill(local.segment(), 0, REGION, guard, 0);
          TaskResult after =
              runOne(requester, TransferRequest.read(local, 0, again, replacement, 0, TASK));
          assertEquals(TaskState.COMPLETED, after.state(), after::toString);
          assertEquals(
              -1,
              RegionCheck.check(local.segment(), List.of(new Span(0, TASK, 33, 0)), guard),
              "the replacement's bytes landed over SHM, guards intact");
          again.close();
        } finally {
          hook.release();
          freeAfterDrain(held);
          freeAfterDrain(queued);
        }
      } finally {
        first.kill();
        if (second != null) {
          second.close();
        }
      }
    }
  }

  /**
   * The request fails EPOCH_MISMATCH, refused at submit or failed with zero bytes and no remote
   * effect; returns the refusal's message.
   */
  private static String staleRefusal(TransferEngine requester, TransferRequest request) {
    return refused(requester, request, ErrorKind.EPOCH_MISMATCH);
  }

  /**
   * The request fails {@code kind}: refused at submit, or failed with zero bytes, no remote effect,
   * drained.
   */
  private static String refused(TransferEngine requester, TransferRequest request, ErrorKind kind) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(kind, r.errorKind(), r::toString);
      assertEquals(0, r.bytes());
      assertEquals(RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
      return r.detail();
    } catch (TransferException e) {
      assertEquals(kind, e.kind(), e.getMessage());
      return e.getMessage();
    } finally {
      batch.free();
    }
  }

  /**
   * The request fails EPOCH_MISMATCH: refused at submit, or failed with zero bytes and no remote
   * effect.
   */
  private static void refusedAsStale(TransferEngine requester, TransferRequest request) {
    staleRefusal(requester, request);
  }

  /**
   * Frees {@code batch} once it has drained; a batch still busy stays for the engine's close to
   * report.
   */
  private static void freeAfterDrain(Batch batch) {
    if (batch.await(Duration.ofSeconds(30)).done()) {
      batch.free();
    }
  }

  private static TaskResult runOne(TransferEngine engine, TransferRequest request) {
    Batch batch = engine.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      assertTrue(s.done(), "drained");
      return s.tasks().getFirst();
    } finally {
      batch.free();
    }
  }
}
