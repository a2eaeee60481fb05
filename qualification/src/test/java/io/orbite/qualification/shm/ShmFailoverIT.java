package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failover from SHM to TCP ({@code retry.maxTransportFailovers}, default 1), with the source an
 * engine process on the same host that exports its allocations through SHM, and the requester in
 * this JVM with one SHM copy lane and a fault hook at its copy.
 *
 * <p>The SHM mapping is fenced under running tasks: the source fences its allocation's SHM export
 * ({@code SHM_FENCE}: liveness withdrawn, the region still registered) while the requester's copy
 * lane is held inside a pilot READ, with a READ and a WRITE queued behind it; or the copy breaks
 * inside a task (the hook throws there, and the lane drops that mapping). A task SHM failed drained
 * with nothing posted runs once more over TCP, to the same incarnation, and its result says {@code
 * TCP}, {@code FAILED_OVER}, 2 attempts; a WRITE cut inside its copy ({@code UNKNOWN}) is never
 * replayed. Both regions are checked whole (the source's in its own process), and the counters on
 * both sides say which transport moved which bytes, and how many times.
 */
class ShmFailoverIT {
  private static final long REGION = 8L << 20;
  private static final long TASK = 1L << 20;
  private static final long SOURCE_SEED = 0x51;
  private static final long LOCAL_SEED = 0x52;

  /**
   * Holds the next SHM copy until released, or makes it throw: a copy lane held inside a task, or a
   * copy that breaks under it (the lane then fails the tasks of that mapping and unmaps it).
   */
  private static final class CopyFault implements FaultHooks {
    private enum Mode {
      OFF,
      HOLD,
      THROW
    }

    private final AtomicReference<Mode> next = new AtomicReference<>(Mode.OFF);
    private volatile CountDownLatch entered = new CountDownLatch(1);
    private volatile CountDownLatch released = new CountDownLatch(1);

    void holdNext() {
      entered = new CountDownLatch(1);
      released = new CountDownLatch(1);
      next.set(Mode.HOLD);
    }

    void breakNext() {
      next.set(Mode.THROW);
    }

    void awaitHeld() throws InterruptedException {
      assertTrue(entered.await(20, TimeUnit.SECONDS), "no SHM copy reached the hook");
    }

    void release() {
      next.set(Mode.OFF);
      released.countDown();
    }

    @Override
    public void beforeSharedCopy(String lane) {
      Mode mode = next.getAndSet(Mode.OFF);
      if (mode == Mode.HOLD) {
        entered.countDown();
        try {
          // Bounded, so that a failed test never leaves the lane thread behind for good.
          released.await(2, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } else if (mode == Mode.THROW) {
        throw new IllegalStateException("test: the mapping broke under the copy");
      }
    }
  }

  private static EngineConfig requesterConfig(String name) {
    EngineConfig c = EngineConfig.defaults().withName(name);
    // One copy lane: a task queued behind the held pilot waits on that lane, nothing steals it.
    return c.withShm(c.shm().withLanes(1));
  }

  private static TaskResult await(Batch batch, int index) throws InterruptedException {
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    assertTrue(s.done(), s::toString);
    return s.tasks().get(index);
  }

  private static void assertRanOnce(TaskResult r, Transport on, Route route) {
    assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    assertEquals(TASK, r.bytes(), r::toString);
    assertTrue(r.locallyDrained(), r::toString);
    assertEquals(on, r.transport(), r::toString);
    assertEquals(route, r.route(), r::toString);
    assertEquals(1, r.attempts(), r::toString);
  }

  private static void assertFailedOver(TaskResult r, RemoteEffect effect) {
    assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    assertEquals(TASK, r.bytes(), r::toString);
    assertEquals(effect, r.remoteEffect(), r::toString);
    assertTrue(r.locallyDrained(), r::toString);
    assertEquals(Transport.TCP, r.transport(), "finished over TCP: " + r);
    assertEquals(Route.FAILED_OVER, r.route(), r::toString);
    assertEquals(2, r.attempts(), "SHM, then TCP: " + r);
  }

  @Test
  void tasksQueuedWhenTheSourceFencesItsShmExportFinishOverTcpEachAppliedOnce(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    CopyFault hook = new CopyFault();
    try (EngineProcess source = EngineProcess.start("failover-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester =
            FaultInjection.start(requesterConfig("failover-requester"), hook)) {
      ShmPeer.Opened o = ShmPeer.open(source, requester, REGION, SOURCE_SEED, LOCAL_SEED);
      // The pilot READ [0, TASK) is held inside its SHM copy, the activity lock taken.
      Batch batch = requester.allocateBatch(3);
      hook.holdNext();
      batch.submit(List.of(TransferRequest.read(o.local(), 0, o.peer(), o.remote(), 0, TASK)));
      hook.awaitHeld();
      // A READ (local 2 MiB + 5 <- remote 3 MiB + 7) and a WRITE (local 5 MiB + 11 -> remote
      // 6 MiB + 13) queue behind it on the one lane; the engine routes both to SHM.
      long readLocal = 2 * TASK + 5;
      long readRemote = 3 * TASK + 7;
      long writeLocal = 5 * TASK + 11;
      long writeRemote = 6 * TASK + 13;
      batch.submit(
          List.of(
              TransferRequest.read(o.local(), readLocal, o.peer(), o.remote(), readRemote, TASK),
              TransferRequest.write(
                  o.local(), writeLocal, o.peer(), o.remote(), writeRemote, TASK)));
      for (TaskResult queued : batch.status().tasks()) {
        assertEquals(TaskState.PENDING, queued.state(), queued::toString);
        assertEquals(Transport.SHM, queued.transport(), queued::toString);
        assertEquals(Route.SHM_SAME_HOST, queued.route(), queued::toString);
        assertEquals(1, queued.attempts(), queued::toString);
      }

      // The source fences the allocation's SHM export; the pilot is inside its copy, so the
      // fence cannot complete yet, but no copy can start any more.
      assertEquals("busy", source.call("SHM_FENCE " + o.remote()));
      long fencedBefore = requester.counters().shmFenced();
      hook.release();

      TaskResult pilot = await(batch, 0);
      TaskResult read = batch.status().tasks().get(1);
      TaskResult write = batch.status().tasks().get(2);
      // The copy that had started before the fence finishes over SHM (C1).
      assertRanOnce(pilot, Transport.SHM, Route.SHM_SAME_HOST);
      // The two queued tasks found the mapping fenced, posted nothing, and ran again over TCP.
      assertFailedOver(read, RemoteEffect.NONE);
      assertFailedOver(write, RemoteEffect.APPLIED);

      EngineCounters c = requester.counters();
      assertTrue(c.shmFenced() > fencedBefore, "the requester saw the fence");
      assertEquals(2, c.transportFailovers(), c::toString);
      assertEquals(2, c.tasksDispatched(Transport.TCP), "only the two failovers went over TCP");
      assertEquals(3, c.tasksDispatched(Transport.SHM));
      assertEquals(TASK, c.shmBytesRead(), "SHM copied the pilot only");
      assertEquals(0, c.shmBytesWritten(), "SHM never copied the WRITE");
      Map<String, Long> served = ShmPeer.counters(source);
      assertEquals(TASK, served.get("sourceBytesRead"), "the source served the READ once");
      assertEquals(TASK, served.get("sourceBytesWritten"), "and applied the WRITE once");

      // Requester: the pilot's and the READ's ranges hold the source's bytes, all else its own.
      assertEquals(
          -1,
          RegionCheck.check(
              o.local().segment(),
              List.of(
                  new Span(0, TASK, SOURCE_SEED, 0),
                  new Span(readLocal, TASK, SOURCE_SEED, readRemote)),
              LOCAL_SEED),
          "requester region");
      // Source: the WRITE's range holds the requester's bytes, all else its own.
      ShmPeer.assertRemoteRegion(
          source,
          o.remote(),
          SOURCE_SEED,
          List.of(new Span(writeRemote, TASK, LOCAL_SEED, writeLocal)),
          "source region");
      batch.free();
    }
  }

  @Test
  void aReadWhoseCopyBreaksFinishesOverTcpAndAWriteCutInItsCopyIsNotReplayed(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    CopyFault hook = new CopyFault();
    try (EngineProcess source = EngineProcess.start("break-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester = FaultInjection.start(requesterConfig("break-requester"), hook)) {
      ShmPeer.Opened o = ShmPeer.open(source, requester, REGION, SOURCE_SEED, LOCAL_SEED);

      // A READ whose SHM copy breaks inside it: drained, nothing posted, so it runs over TCP.
      long readLocal = TASK + 3;
      long readRemote = 2 * TASK + 9;
      Batch reads = requester.allocateBatch(1);
      hook.breakNext();
      reads.submit(
          List.of(
              TransferRequest.read(o.local(), readLocal, o.peer(), o.remote(), readRemote, TASK)));
      assertFailedOver(await(reads, 0), RemoteEffect.NONE);
      reads.free();

      // A WRITE whose SHM copy breaks inside it may have changed the source's bytes (UNKNOWN):
      // it fails, and is never sent again, over TCP or any other transport (C6).
      long writeLocal = 4 * TASK + 1;
      long writeRemote = 5 * TASK + 17;
      Batch writes = requester.allocateBatch(1);
      hook.breakNext();
      writes.submit(
          List.of(
              TransferRequest.write(
                  o.local(), writeLocal, o.peer(), o.remote(), writeRemote, TASK)));
      TaskResult write = await(writes, 0);
      assertEquals(TaskState.FAILED, write.state(), write::toString);
      assertEquals(ErrorKind.UNAVAILABLE, write.errorKind(), write::toString);
      assertEquals(RemoteEffect.UNKNOWN, write.remoteEffect(), write::toString);
      assertEquals(0, write.bytes());
      assertTrue(write.locallyDrained());
      assertEquals(Transport.SHM, write.transport(), "it stays where it failed: " + write);
      assertEquals(1, write.attempts(), write::toString);
      writes.free();

      // The channel carries on: the next READ maps the allocation again and runs over SHM.
      long againLocal = 6 * TASK;
      long againRemote = 7 * TASK;
      Batch again = requester.allocateBatch(1);
      again.submit(
          List.of(
              TransferRequest.read(
                  o.local(), againLocal, o.peer(), o.remote(), againRemote, TASK)));
      assertRanOnce(await(again, 0), Transport.SHM, Route.SHM_SAME_HOST);
      again.free();

      EngineCounters c = requester.counters();
      assertEquals(1, c.transportFailovers(), c::toString);
      assertEquals(1, c.tasksDispatched(Transport.TCP), "only the READ went over TCP");
      assertEquals(0, c.shmBytesWritten(), "the broken copy wrote nothing");
      Map<String, Long> served = ShmPeer.counters(source);
      assertEquals(TASK, served.get("sourceBytesRead"), "the source served the READ once");
      assertEquals(0, served.get("sourceBytesWritten"), "the WRITE never reached it over TCP");

      assertEquals(
          -1,
          RegionCheck.check(
              o.local().segment(),
              List.of(
                  new Span(readLocal, TASK, SOURCE_SEED, readRemote),
                  new Span(againLocal, TASK, SOURCE_SEED, againRemote)),
              LOCAL_SEED),
          "requester region");
      // The WRITE's range still holds the source's own bytes: not applied, not replayed.
      ShmPeer.assertRemoteRegion(source, o.remote(), SOURCE_SEED, List.of(), "source region");
    }
  }
}
