package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Small SHM transfers copied on the submitting thread (the lane is idle, the task is at most 64
 * KiB): the copy runs inside {@code submit}, under the lane's owner lock, so the task is terminal
 * when {@code submit} returns. The fences (C3, C8) and the drain (C5) hold there as on the lane
 * thread, and a batch reused for one such transfer after another leaks no slot, charge or loan.
 * Every byte of both regions is checked.
 */
class ShmCallerCopyIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 4096;

  @Test
  void aCallerThreadCopyOfAnUnregisteredRegionIsRefusedAndCopiesNothing(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source =
            EngineProcess.start("shm-caller-unreg-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("shm-caller-unreg"))) {
      ShmPeer.Opened opened = ShmPeer.open(source, requester, REGION, 41, 42);
      long remote = opened.remote();
      RegisteredMemory local = opened.local();
      RemoteSegment peer = opened.peer();
      Batch batch = requester.allocateBatch(1);

      // A first small READ runs on this thread: it is terminal as soon as submit returns.
      long byCaller = requester.counters().shmCopiedByCaller();
      batch.submit(
          List.of(
              TransferRequest.read(local, 100, peer, remote, 200, TASK)
                  .withTransport(Transport.SHM)));
      BatchStatus first = batch.status();
      assertTrue(first.done(), () -> "the copy ran inside submit: " + first);
      assertEquals(TaskState.COMPLETED, first.tasks().getFirst().state(), first::toString);
      assertEquals(byCaller + 1, requester.counters().shmCopiedByCaller(), "copied by the caller");
      assertEquals(
          -1,
          RegionCheck.check(local.segment(), List.of(new Span(100, TASK, 41, 200)), 42),
          "the READ landed, guards intact");
      batch.reset();

      // The source unregisters the allocation: the caller-thread copy finds the fence and copies
      // nothing.
      source.call("UNREGISTER " + remote);
      Pattern.fill(local.segment(), 0, REGION, 43, 0);
      for (Op op : Op.values()) {
        long before = requester.counters().shmCopiedByCaller();
        TransferRequest r =
            op == Op.READ
                ? TransferRequest.read(local, 8192, peer, remote, 8192, TASK)
                : TransferRequest.write(local, 3 * 8192, peer, remote, 3 * 8192, TASK);
        batch.submit(List.of(r.withTransport(Transport.SHM)));
        BatchStatus s = batch.status();
        assertTrue(s.done(), () -> "refused inside submit: " + s);
        TaskResult t = s.tasks().getFirst();
        assertEquals(TaskState.FAILED, t.state(), t::toString);
        assertEquals(ErrorKind.PERMISSION_DENIED, t.errorKind(), t::toString);
        assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
        assertEquals(0, t.bytes());
        assertTrue(t.locallyDrained(), t::toString);
        assertEquals(
            before + 1, requester.counters().shmCopiedByCaller(), "tried on the caller's thread");
        batch.reset();
      }
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, REGION, 43, 0),
          "no byte landed after the unregister");
      assertEquals(0, ((Registration) local).loans(), "no loan kept");
      batch.free();
      assertTrue(requester.owed().isIdle(), requester.owed()::toString);
    }
  }

  @Test
  void aPeerDeathWhileSmallTransfersRunOnTheCallerFailsThemOnlyAfterDrain(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int slots = (int) (REGION / TASK);
    try (TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName("shm-caller-death"))) {
      EngineProcess source =
          EngineProcess.start("shm-caller-death-source", logs, ShmPeer.SHM_SOURCE);
      try {
        ShmPeer.Opened opened = ShmPeer.open(source, requester, REGION, 51, 52);
        long remote = opened.remote();
        RegisteredMemory local = opened.local();
        RemoteSegment peer = opened.peer();

        // One thread reads slot after slot (round and round), one 4 KiB task at a time, checking
        // each
        // slot's bytes and putting its guard back, until the source's death fails a task.
        List<TaskResult> results = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread reader =
            Thread.ofPlatform()
                .name("small-reads")
                .start(
                    () -> {
                      try {
                        Batch batch = requester.allocateBatch(1);
                        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                        for (int k = 0; System.nanoTime() < end; k++) {
                          long at = (k % slots) * TASK;
                          batch.submit(
                              List.of(
                                  TransferRequest.read(local, at, peer, remote, at, TASK)
                                      .withTransport(Transport.SHM)));
                          BatchStatus s = batch.await(Duration.ofSeconds(30));
                          assertTrue(s.done(), s::toString);
                          TaskResult t = s.tasks().getFirst();
                          synchronized (results) {
                            results.add(t);
                          }
                          batch.reset();
                          if (t.state() != TaskState.COMPLETED) {
                            assertEquals(
                                -1,
                                Pattern.verify(local.segment(), 0, REGION, 52, 0),
                                "a failed task copied nothing");
                            break;
                          }
                          assertEquals(
                              -1,
                              Pattern.verify(local.segment(), at, TASK, 51, at),
                              "transfer " + k + " landed");
                          Pattern.fill(local.segment(), at, TASK, 52, at);
                        }
                        batch.free();
                      } catch (Throwable t) {
                        failure.set(t);
                      }
                    });
        assertTrue(
            Await.until(
                Duration.ofSeconds(20),
                () -> {
                  synchronized (results) {
                    return results.size() >= 2 * slots;
                  }
                }),
            "small reads ran before the kill");
        source.kill();
        reader.join(Duration.ofSeconds(90));
        assertTrue(!reader.isAlive(), "the reader finished");
        if (failure.get() != null) {
          throw new AssertionError("the reader failed", failure.get());
        }

        // Every task completed with its bytes (checked by the reader), or failed drained with none;
        // only the last one failed.
        for (int k = 0; k < results.size(); k++) {
          TaskResult t = results.get(k);
          assertTrue(t.locallyDrained(), t::toString);
          if (t.state() == TaskState.COMPLETED) {
            assertEquals(TASK, t.bytes());
          } else {
            assertEquals(k, results.size() - 1, "only the last task fails: " + t);
            assertEquals(TaskState.FAILED, t.state(), t::toString);
            // A peer killed and not restarted is lost, never a restart (C18).
            assertEquals(ErrorKind.PEER_LOST, t.errorKind(), t::toString);
            assertEquals(0, t.bytes());
            assertEquals(RemoteEffect.NONE, t.remoteEffect());
          }
        }
        assertEquals(
            TaskState.FAILED,
            results.getLast().state(),
            "the peer's death was seen: " + results.getLast());
        assertEquals(
            -1, Pattern.verify(local.segment(), 0, REGION, 52, 0), "every slot back to its guard");
        assertEquals(0, ((Registration) local).loans(), "every loan returned");
        assertTrue(
            Await.until(Duration.ofSeconds(10), () -> requester.owed().isIdle()),
            requester.owed()::toString);
      } finally {
        source.kill();
      }
    }
  }

  @Test
  void aReusedBatchServes100kTransfersWithoutLeakingSlotsChargesOrLoans(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int transfers = 100_000;
    int slots = 256;
    try (EngineProcess source = EngineProcess.start("shm-reuse-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("shm-reuse"))) {
      ShmPeer.Opened opened = ShmPeer.open(source, requester, REGION, 61, 62);
      long remote = opened.remote();
      RegisteredMemory local = opened.local();
      RemoteSegment peer = opened.peer();
      Batch batch = requester.allocateBatch(1);
      for (int k = 0; k < transfers; k++) {
        long at = (k % slots) * TASK;
        TransferRequest read =
            TransferRequest.read(local, at, peer, remote, at + 8, TASK)
                .withTransport(Transport.SHM);
        assertEquals(0, batch.submit(List.of(read)).first(), "every generation starts at task 0");
        BatchStatus s = batch.await(Duration.ofSeconds(30));
        TaskResult t = s.tasks().getFirst();
        if (t.state() != TaskState.COMPLETED
            || Pattern.verify(local.segment(), at, TASK, 61, at + 8) != -1) {
          throw new AssertionError("transfer " + k + ": " + t);
        }
        // Back to the guard, so that the next transfer to this slot must land again.
        Pattern.fill(local.segment(), at, TASK, 62, at);
        batch.reset();
        if (k % 10_000 == 0) {
          var owed = requester.owed();
          assertEquals(0, owed.tasksInFlight(), owed::toString);
          assertEquals(0, owed.bytesInFlight(), owed::toString);
          assertEquals(0, owed.loans(), owed::toString);
          assertEquals(1, owed.batches(), owed::toString);
        }
      }
      // The capacity is still one task: a second submission without a reset is refused, naming
      // reset().
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.SHM)));
      TransferException full =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(local, TASK, peer, remote, TASK, TASK)
                              .withTransport(Transport.SHM))));
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, full.kind());
      assertTrue(full.getMessage().contains("reset()"), full.getMessage());
      assertEquals(1, batch.await(Duration.ofSeconds(30)).tasks().size());
      assertEquals(
          -1,
          RegionCheck.check(local.segment(), List.of(new Span(0, TASK, 61, 0)), 62),
          "every slot back to its guard but the last READ's");
      batch.free();
      var owed = requester.owed();
      assertEquals(0, owed.batches(), owed::toString);
      assertTrue(owed.isIdle(), owed::toString);
      assertEquals(0, ((Registration) local).loans());
      ShmPeer.assertRemoteRegion(
          source, remote, 61, List.of(), "READs change nothing at the source");
    }
  }
}
