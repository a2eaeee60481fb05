package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.Await;
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
 * unregistered is refused and dropped; a mapping of a source that was killed is never used again, in
 * particular never to reach the replacement incarnation at the same endpoint (EPOCH_MISMATCH, zero
 * bytes, the destination untouched), while a fresh open reaches the replacement through SHM.
 */
class ShmFencingIT {
  private static final long REGION = 8L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void aMappingIsRefusedAfterTheSourceUnregistersAndIsNeverUsedAgain(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("shm-unreg-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester = TransferEngine.start(EngineConfig.defaults().withName("shm-unreg-requester"))) {
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
      assertEquals(1, requester.counters().shmMappingsOpened.sum());

      source.call("UNREGISTER " + remote);
      long guard = 13;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      long fencedBefore = requester.counters().shmFenced.sum();
      TaskResult read = runOne(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.SHM));
      TaskResult write = runOne(requester, TransferRequest.write(local, TASK, peer, remote, TASK, TASK));
      for (TaskResult r : List.of(read, write)) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.PERMISSION_DENIED, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "no byte moved after the unregister");
      assertTrue(requester.counters().shmFenced.sum() > fencedBefore, "the fence was seen");
      assertEquals(1, requester.counters().shmMappingsClosed.sum(), "the dead mapping was unmapped");
      assertEquals(1, requester.counters().shmMappingsOpened.sum(), "and never mapped again");
      assertEquals(0, ShmPeer.counters(source).get("sourceBytesRead"), "nothing was served over TCP instead");
    }
  }

  @Test
  void afterCloseSourceNoSameHostPeerCopiesAnyMore(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("shm-closed-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester = TransferEngine.start(EngineConfig.defaults().withName("shm-closed-requester"))) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 21");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertTrue(peer.sharedReachable(remote), "SHM chosen for the same-host source");
      Pattern.fill(local.segment(), 0, REGION, 22, 0);
      TaskResult first = runOne(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK));
      assertEquals(TaskState.COMPLETED, first.state(), first::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 21, 0), "the READ before closeSource landed");

      source.call("CLOSE_SOURCE");
      Pattern.fill(local.segment(), 0, REGION, 23, 0);
      TaskResult read = runOne(requester, TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.SHM));
      TaskResult write = runOne(requester,
          TransferRequest.write(local, TASK, peer, remote, TASK, TASK).withTransport(Transport.SHM));
      for (TaskResult r : List.of(read, write)) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 23, 0), "no byte moved after closeSource");
      assertEquals("OK", source.ask("VERIFY " + remote + " 21 0", List.of()), "the source's memory is untouched");
    }
  }

  @Test
  void aKilledSourcesMappingNeverReachesItsReplacement(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    try (TransferEngine requester = TransferEngine.start(EngineConfig.defaults().withName("shm-kill-requester"))) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first = EngineProcess.startAt("shm-kill-source", logs, port, ShmPeer.SHM_SOURCE);
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

        // Through the old segment: refused EPOCH_MISMATCH, whether the lane has noticed the death yet or not.
        long guard = 24;
        Pattern.fill(local.segment(), 0, REGION, guard, 0);
        refusedAsStale(requester, TransferRequest.read(local, 0, old, remote, 0, TASK));
        refusedAsStale(requester, TransferRequest.write(local, TASK, old, remote, TASK, TASK));
        assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "no byte of either incarnation landed");
        ShmPeer.assertRemoteRegion(second, replacement, 23, List.of(), "the replacement's memory is untouched");
        assertTrue(Await.until(Duration.ofSeconds(10), () -> requester.counters().shmMappingsClosed.sum() == 1),
            "the dead incarnation's mapping is unmapped");

        // A fresh open reaches the replacement, through SHM again.
        RemoteSegment fresh = requester.openSegment(second.endpoint(), Duration.ofSeconds(10));
        assertEquals(second.epoch(), fresh.descriptor().epoch());
        assertTrue(fresh.sharedReachable(replacement));
        long shmBefore = requester.counters().of(Transport.SHM).tasksDispatched.sum();
        TaskResult after = runOne(requester, TransferRequest.read(local, 0, fresh, replacement, 0, TASK));
        assertEquals(TaskState.COMPLETED, after.state(), after::toString);
        assertEquals(shmBefore + 1, requester.counters().of(Transport.SHM).tasksDispatched.sum());
        assertEquals(-1, RegionCheck.check(local.segment(), List.of(new Span(0, TASK, 23, 0)), guard),
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

  /** The request fails EPOCH_MISMATCH: refused at submit, or failed with zero bytes and no remote effect. */
  private static void refusedAsStale(TransferEngine requester, TransferRequest request) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(request));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(ErrorKind.EPOCH_MISMATCH, r.errorKind(), r::toString);
      assertEquals(0, r.bytes());
      assertEquals(RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
    } catch (TransferException e) {
      assertEquals(ErrorKind.EPOCH_MISMATCH, e.kind(), e.getMessage());
    } finally {
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
