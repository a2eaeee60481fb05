package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
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
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.Await;
import io.orbite.qualification.contract.HeldWorker;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * An SHM endpoint with several copy lanes ({@code shm.lanes}): a batch's tasks are dealt across
 * them and every lane copies part of it with every byte and guard right; an idle lane steals the
 * waiting tasks of a lane held inside a copy; and a peer's death fences every lane: each task
 * completes with its bytes or fails drained with none, and every lane's thread ends. Both regions
 * are checked in full.
 */
class ShmLanesIT {
  private static final long REGION = 16L << 20;
  private static final long TASK = 4096;
  private static final String LANE_THREAD = "orbite-shm lane ";

  @Test
  void aBatchIsDealtAcrossEveryLaneAndEveryByteLands(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int lanes = 3;
    int tasks = 1024;
    EngineConfig config = EngineConfig.defaults().withName("shm-lanes-deal");
    String endpoint;
    try (EngineProcess source =
            EngineProcess.start("shm-lanes-deal-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            TransferEngine.start(config.withShm(config.shm().withLanes(lanes)))) {
      endpoint = source.endpoint();
      ShmPeer.Opened opened = ShmPeer.open(source, requester, REGION, 71, 72);
      long remote = opened.remote();
      RegisteredMemory local = opened.local();
      RemoteSegment peer = opened.peer();
      assertEquals(lanes, laneThreads(endpoint), "one copy thread per lane");

      // READs: task k lands at local k*8 KiB + 16 from remote k*4 KiB + 8 (a guard between each).
      List<TransferRequest> reads = new ArrayList<>();
      List<Span> readSpans = new ArrayList<>();
      for (int k = 0; k < tasks; k++) {
        long at = k * 2 * TASK + 16;
        long from = k * TASK + 8;
        reads.add(
            TransferRequest.read(local, at, peer, remote, from, TASK).withTransport(Transport.SHM));
        readSpans.add(new Span(at, TASK, 71, from));
      }
      Map<String, Long> before = shmLaneBytes(requester);
      Batch batch = requester.allocateBatch(tasks);
      batch.submit(reads);
      assertAllCompleted(batch.await(Duration.ofSeconds(30)), tasks);
      Map<String, Long> after = shmLaneBytes(requester);
      assertEquals(lanes, after.size(), () -> "every lane counted: " + after);
      long total = 0;
      for (Map.Entry<String, Long> e : after.entrySet()) {
        long mine = e.getValue() - before.getOrDefault(e.getKey(), 0L);
        assertTrue(
            mine > 0 && mine % TASK == 0,
            () -> e.getKey() + " copied part of the batch: " + after + " vs " + before);
        total += mine;
      }
      assertEquals(tasks * TASK, total, "every READ byte counted once, by one lane");
      batch.reset();

      // WRITEs from the upper half of the local region to the upper half of the source's.
      List<TransferRequest> writes = new ArrayList<>();
      List<Span> writeSpans = new ArrayList<>();
      long half = REGION / 2;
      for (int k = 0; k < tasks; k++) {
        long at = half + k * 2 * TASK + 24;
        long to = half + k * 2 * TASK + 40;
        writes.add(
            TransferRequest.write(local, at, peer, remote, to, TASK).withTransport(Transport.SHM));
        writeSpans.add(new Span(to, TASK, 72, at));
      }
      batch.submit(writes);
      assertAllCompleted(batch.await(Duration.ofSeconds(30)), tasks);
      batch.free();

      assertEquals(
          -1,
          RegionCheck.check(local.segment(), readSpans, 72),
          "every READ landed, every local guard intact");
      ShmPeer.assertRemoteRegion(
          source, remote, 71, writeSpans, "every WRITE landed, every remote guard intact");
      assertEquals(0, ((Registration) local).loans(), "every loan returned");
      assertTrue(requester.owed().isIdle(), requester.owed()::toString);
      assertEquals(0, requester.counters().tasksDispatched(Transport.TCP), "nothing went over TCP");
    }
    assertTrue(
        Await.until(Duration.ofSeconds(10), () -> laneThreads(endpoint) == 0),
        "every lane's thread ended with the engine");
  }

  @Test
  void anIdleLaneStealsTheWaitingTasksOfALaneHeldInsideACopy(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int tasks = 4096;
    HeldWorker hook = HeldWorker.atSharedCopy();
    EngineConfig config = EngineConfig.defaults().withName("shm-lanes-steal");
    try (EngineProcess source =
            EngineProcess.start("shm-lanes-steal-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            FaultInjection.start(config.withShm(config.shm().withLanes(2)), hook)) {
      ShmPeer.Opened opened = ShmPeer.open(source, requester, 2 * REGION, 91, 92);
      long remote = opened.remote();
      RegisteredMemory local = opened.local();
      RemoteSegment peer = opened.peer();
      List<TransferRequest> reads = new ArrayList<>();
      List<Span> spans = new ArrayList<>();
      for (int k = 0; k < tasks; k++) {
        // 4096 slots of 4 KiB, 16 B of guard before each (32 MiB regions).
        long at = 16 + k * (TASK + 16);
        long from = (k % 2048) * TASK + 8;
        reads.add(
            TransferRequest.read(local, at, peer, remote, from, TASK).withTransport(Transport.SHM));
        spans.add(new Span(at, TASK, 91, from));
      }
      long stolenBefore = requester.counters().shmTasksStolen();
      Batch batch = requester.allocateBatch(tasks);
      hook.arm();
      batch.submit(reads);
      String held = hook.awaitHeld(Duration.ofSeconds(20));
      try {
        // The held lane took at most one pass (1024 tasks) before its first copy; everything else
        // dealt to it is still waiting, and the other lane must take it.
        assertTrue(
            Await.until(
                Duration.ofSeconds(30), () -> batch.status().completedCount() >= tasks - 1024 - 1),
            () ->
                "the other lane copied the held lane's waiting tasks ("
                    + held
                    + "): "
                    + batch.status().completedCount()
                    + " completed");
        // The held lane copied nothing (it is held before its first copy), so every completed
        // task beyond the other lane's own share was stolen. The dealer gives the lanes whole
        // parts of up to 256 KiB in turn, so that share is half the batch give or take one part
        // (64 tasks): CI once saw the held lane dealt 32 fewer, and 991 stolen for 3071 completed.
        long completed = batch.status().completedCount();
        long ownShareAtMost = tasks / 2 + (256 * 1024 / TASK);
        assertTrue(
            requester.counters().shmTasksStolen() - stolenBefore >= completed - ownShareAtMost,
            () ->
                "counted as stolen: "
                    + requester.counters().shmTasksStolen()
                    + " of "
                    + completed
                    + " completed");
      } finally {
        hook.release();
      }
      assertAllCompleted(batch.await(Duration.ofSeconds(30)), tasks);
      batch.free();
      assertEquals(
          -1,
          RegionCheck.check(local.segment(), spans, 92),
          "every READ landed once, every guard intact");
      assertEquals(0, ((Registration) local).loans(), "every loan returned");
      assertTrue(requester.owed().isIdle(), requester.owed()::toString);
    }
  }

  @Test
  void aPeerDeathWhileBatchesRunOnEveryLaneFailsTasksOnlyDrainedAndEndsEveryLane(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int tasks = 256;
    long localSeed = 82;
    try (TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName("shm-lanes-death"))) {
      EngineProcess source =
          EngineProcess.start("shm-lanes-death-source", logs, ShmPeer.SHM_SOURCE);
      try {
        String endpoint = source.endpoint();
        ShmPeer.Opened opened = ShmPeer.open(source, requester, REGION, 81, localSeed);
        long remote = opened.remote();
        RegisteredMemory local = opened.local();
        RemoteSegment peer = opened.peer();
        assertEquals(
            EngineConfig.defaults().shm().lanes(), laneThreads(endpoint), "the default lanes run");

        // One thread submits 256-task READ batches until the source's death fails a task. After
        // a batch that completed, every slot is checked and put back to its guard.
        AtomicInteger batches = new AtomicInteger();
        AtomicReference<BatchStatus> last = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<TransferException> refused = new AtomicReference<>();
        Thread reader =
            Thread.ofPlatform()
                .name("lane-batches")
                .start(
                    () -> {
                      try {
                        Batch batch = requester.allocateBatch(tasks);
                        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                        while (System.nanoTime() < end) {
                          int round = batches.get();
                          List<TransferRequest> reads = new ArrayList<>();
                          for (int k = 0; k < tasks; k++) {
                            reads.add(
                                TransferRequest.read(
                                        local, slot(k), peer, remote, from(round, k), TASK)
                                    .withTransport(Transport.SHM));
                          }
                          try {
                            batch.submit(reads);
                          } catch (TransferException e) {
                            // The death was seen between two batches: the next one is refused
                            // before any task is admitted.
                            refused.set(e);
                            break;
                          }
                          BatchStatus s = batch.await(Duration.ofSeconds(30));
                          assertTrue(s.done(), s::toString);
                          if (s.tasks().stream().anyMatch(t -> t.state() != TaskState.COMPLETED)) {
                            last.set(s);
                            break;
                          }
                          List<Span> spans = new ArrayList<>();
                          for (int k = 0; k < tasks; k++) {
                            spans.add(new Span(slot(k), TASK, 81, from(round, k)));
                          }
                          assertEquals(
                              -1,
                              RegionCheck.check(local.segment(), spans, localSeed),
                              "batch " + round + " landed, guards intact");
                          for (Span sp : spans) {
                            Pattern.fill(
                                local.segment(), sp.offset(), TASK, localSeed, sp.offset());
                          }
                          batch.reset();
                          batches.incrementAndGet();
                        }
                        batch.free();
                      } catch (Throwable t) {
                        failure.set(t);
                      }
                    });
        assertTrue(
            Await.until(Duration.ofSeconds(20), () -> batches.get() >= 20),
            "batches ran on the lanes before the kill");
        source.kill();
        reader.join(Duration.ofSeconds(90));
        assertTrue(!reader.isAlive(), "the reader finished");
        if (failure.get() != null) {
          throw new AssertionError("the reader failed", failure.get());
        }

        // The batch the death cut: each task completed with its bytes, or failed drained with none.
        // Or the death was seen between two batches, and the next submission was refused whole.
        BatchStatus cut = last.get();
        List<Span> landed = new ArrayList<>();
        int failed = 0;
        if (cut == null) {
          TransferException e = refused.get();
          assertTrue(e != null, "the peer's death failed a task or refused the next batch");
          assertEquals(ErrorKind.PEER_LOST, e.kind(), e::toString);
        } else {
          assertTrue(refused.get() == null, () -> "refused after a cut batch: " + refused.get());
        }
        int round = batches.get();
        List<TaskResult> cutTasks = cut == null ? List.of() : cut.tasks();
        for (TaskResult t : cutTasks) {
          assertTrue(t.locallyDrained(), t::toString);
          if (t.state() == TaskState.COMPLETED) {
            assertEquals(TASK, t.bytes(), t::toString);
            landed.add(new Span(slot(t.index()), TASK, 81, from(round, t.index())));
          } else {
            failed++;
            assertEquals(TaskState.FAILED, t.state(), t::toString);
            // A peer killed and not restarted is lost, never a restart (C18).
            assertEquals(ErrorKind.PEER_LOST, t.errorKind(), t::toString);
            assertEquals(0, t.bytes(), t::toString);
            assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
          }
        }
        BatchStatus cutStatus = cut;
        assertTrue(failed > 0 || refused.get() != null, () -> String.valueOf(cutStatus));
        assertEquals(
            -1,
            RegionCheck.check(local.segment(), landed, localSeed),
            "only the completed tasks' bytes landed; every failed slot and guard untouched");
        assertTrue(
            Await.until(Duration.ofSeconds(10), () -> laneThreads(endpoint) == 0),
            "every lane's thread ended after the death");
        assertEquals(0, ((Registration) local).loans(), "every loan returned");
        assertTrue(
            Await.until(Duration.ofSeconds(10), () -> requester.owed().isIdle()),
            requester.owed()::toString);
      } finally {
        source.kill();
      }
    }
  }

  /** Local offset of task {@code k}: 8 KiB apart, so a guard lies between every two slots. */
  private static long slot(int k) {
    return k * 2 * TASK + 16;
  }

  /** Remote offset of task {@code k} in round {@code round}: each round reads other bytes. */
  private static long from(int round, int k) {
    return ((round * 7L + k) % 2048) * TASK + 8;
  }

  private static void assertAllCompleted(BatchStatus s, int tasks) {
    assertTrue(s.done(), s::toString);
    assertEquals(tasks, s.tasks().size());
    for (TaskResult t : s.tasks()) {
      assertEquals(TaskState.COMPLETED, t.state(), t::toString);
      assertEquals(TASK, t.bytes(), t::toString);
    }
  }

  /** Cumulative bytes of this engine's SHM lanes, by lane name. */
  private static Map<String, Long> shmLaneBytes(TransferEngine engine) {
    Map<String, Long> out = new java.util.TreeMap<>();
    engine
        .counters()
        .laneBytes()
        .forEach(
            (name, bytes) -> {
              if (name.startsWith("shm/")) {
                out.put(name, bytes);
              }
            });
    return out;
  }

  /** Live SHM copy threads in this JVM to the peer at {@code endpoint}. */
  private static long laneThreads(String endpoint) {
    String to = " to " + endpoint + "@";
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith(LANE_THREAD) && t.getName().contains(to))
        .count();
  }
}
