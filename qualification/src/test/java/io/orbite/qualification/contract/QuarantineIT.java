package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * C5 and C7 past the destruction window: a test hook holds a requester lane while it owns a READ's
 * memory. The task cannot be shown drained, so after its deadline plus the window it is reported
 * UNQUIESCED, its batch is quarantined (free() answers BATCH_BUSY), its loan keeps the memory
 * mapped (read back afterwards, byte for byte) and its charges stay. The engine lists the owner,
 * and every close reports it. If the worker lets go, the owner proves its drain late and leaves
 * quarantine.
 */
class QuarantineIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;
  private static final long WINDOW_MILLIS = 1_500;

  private static EngineConfig requesterConfig() {
    EngineConfig d = EngineConfig.defaults();
    return d.withName("holder")
        .withTimeouts(d.timeouts().withDestructionWindowMillis(WINDOW_MILLIS));
  }

  /** Submits one 1 MiB READ with a short deadline and waits until its lane is held. */
  private static Batch readHeld(
      TransferEngine requester,
      HeldWorker hook,
      RegisteredMemory local,
      RemoteSegment peer,
      long remoteRegion)
      throws InterruptedException {
    Batch batch = requester.allocateBatch(2);
    hook.arm();
    batch.submit(
        List.of(
            TransferRequest.read(local, 4096 + 7, peer, remoteRegion, 8192 + 3, TASK)
                .withDeadline(Duration.ofMillis(500))));
    hook.awaitHeld(Duration.ofSeconds(20));
    return batch;
  }

  private static TaskResult awaitUnquiesced(Batch batch) {
    BatchStatus status = batch.await(Duration.ofSeconds(30));
    assertTrue(status.done(), "an UNQUIESCED task is terminal for the caller");
    TaskResult r = status.tasks().get(0);
    assertEquals(TaskState.UNQUIESCED, r.state(), r::toString);
    assertEquals(ErrorKind.UNQUIESCED, r.errorKind(), r::toString);
    assertFalse(r.locallyDrained(), () -> "a held worker may still touch the memory: " + r);
    assertEquals(0, r.bytes(), "an UNQUIESCED task's bytes are never counted");
    assertEquals(RemoteEffect.NONE, r.remoteEffect(), "a READ never changes the peer");
    return r;
  }

  /**
   * Reads the whole retained region: guards outside the held task intact; inside it every byte is
   * its guard or the source's byte (slices on other lanes may have landed), and the held slice's
   * first byte did not land while the lane was held.
   */
  private static void assertRetained(RegisteredMemory local, long guardSeed, long remoteSeed) {
    assertRetained(local, guardSeed, remoteSeed, true);
  }

  private static void assertRetained(
      RegisteredMemory local, long guardSeed, long remoteSeed, boolean held) {
    long start = 4096 + 7;
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, start, guardSeed, 0), "guard before the task");
    assertEquals(
        -1,
        Pattern.verify(
            local.segment(), start + TASK, REGION - start - TASK, guardSeed, start + TASK),
        "guard after the task");
    long unlanded = 0;
    for (long p = start; p < start + TASK; p++) {
      byte b = local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
      boolean guard = b == Pattern.at(guardSeed, p);
      boolean landed = b == Pattern.at(remoteSeed, p - start + 8192 + 3);
      assertTrue(guard || landed, "byte " + p + " is neither its guard nor the source's byte");
      if (guard && !landed) {
        unlanded++;
      }
    }
    if (held) {
      assertTrue(unlanded > 0, "the held slice has not landed");
    }
  }

  @Test
  void aHeldWorkerQuarantinesItsBatchAndEveryCloseReportsIt() throws Exception {
    HeldWorker hook = new HeldWorker();
    TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("quarantine-source"));
    TransferEngine requester = FaultInjection.start(requesterConfig(), hook);
    try {
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, 31);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, 32);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));

      Batch batch = readHeld(requester, hook, local, peer, remote.regionId());
      awaitUnquiesced(batch);

      TransferException busy = assertThrows(TransferException.class, batch::free);
      assertEquals(ErrorKind.BATCH_BUSY, busy.kind(), busy::getMessage);
      assertTrue(busy.getMessage().contains("quarantined"), busy::getMessage);

      EngineOwed owed = requester.owed();
      assertEquals(1, owed.tasksInFlight(), () -> "the held task keeps its charge: " + owed);
      assertEquals(TASK, owed.bytesInFlight(), owed::toString);
      assertEquals(1, owed.loans(), () -> "the held task keeps its loan: " + owed);
      assertTrue(
          owed.quarantined().stream()
              .anyMatch(
                  q ->
                      q.kind() == QuarantinedOwner.Kind.BATCH
                          && q.tasks() == 1
                          && q.bytes() == TASK),
          owed::toString);
      assertEquals(owed.quarantined(), requester.quarantined());

      // Unregister hides the range but cannot free it under the held worker.
      TransferException unquiesced =
          assertThrows(TransferException.class, () -> requester.unregister(local));
      assertEquals(ErrorKind.UNQUIESCED, unquiesced.kind(), unquiesced::getMessage);
      assertTrue(
          requester.quarantined().stream()
              .anyMatch(q -> q.kind() == QuarantinedOwner.Kind.REGISTRATION),
          () -> requester.quarantined().toString());
      // Still mapped: every byte reads back. The task's slices on other lanes may have landed; the
      // held one did not, and nothing outside the task moved.
      assertRetained(local, 32, 31);

      EngineOwed first = requester.close(Duration.ofSeconds(30));
      assertEquals(EngineOwed.Phase.CLOSED, first.phase());
      assertTrue(
          first.quarantined().stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.BATCH),
          first::toString);
      assertTrue(
          first.quarantined().stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.ENDPOINT),
          () -> "the held lane's endpoint could not drain when the engine closed: " + first);
      assertTrue(
          first.loans() >= 1 && first.registrations() >= 1,
          () -> "memory under the loan retained: " + first);
      assertFalse(first.isClear(), first::toString);
      EngineOwed second = requester.close(Duration.ofSeconds(30));
      assertEquals(
          first.quarantined(), second.quarantined(), "a second close reports the same owners");
      assertRetained(local, 32, 31);

      // The worker lets go: its endpoint proves its drain (the lane thread ends) and leaves
      // quarantine.
      hook.release();
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () ->
                  requester.quarantined().stream()
                      .noneMatch(q -> q.kind() == QuarantinedOwner.Kind.ENDPOINT)),
          () -> requester.quarantined().toString());
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, 31, 0), "the source's memory untouched");
    } finally {
      hook.release();
      requester.close(Duration.ofSeconds(30));
      source.close(Duration.ofSeconds(30));
    }
  }

  @Test
  void aWorkerThatLetsGoLateTakesItsBatchOutOfQuarantine() throws Exception {
    HeldWorker hook = new HeldWorker();
    try (TransferEngine source =
            TransferEngine.start(EngineConfig.defaults().withName("late-source"));
        TransferEngine requester = FaultInjection.start(requesterConfig(), hook)) {
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, 41);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, 42);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));

      Batch batch = readHeld(requester, hook, local, peer, remote.regionId());
      awaitUnquiesced(batch);
      assertEquals(ErrorKind.BATCH_BUSY, assertThrows(TransferException.class, batch::free).kind());

      hook.release();
      assertTrue(
          Await.until(Duration.ofSeconds(20), () -> requester.quarantined().isEmpty()),
          () -> requester.quarantined().toString());
      TaskResult after = batch.status().tasks().get(0);
      assertEquals(TaskState.UNQUIESCED, after.state(), "a reported outcome never changes");
      assertTrue(after.locallyDrained(), () -> "its worker has let go now: " + after);
      batch.free();
      EngineOwed owed = requester.owed();
      assertTrue(owed.isIdle() && owed.batches() == 0, () -> "every charge returned: " + owed);
      // The held slice finished landing after the task was reported; the guards never moved.
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 4096 + 7, TASK, 41, 8192 + 3),
          "the READ landed late, whole");
      assertRetained(local, 42, 41, false);

      // The batch and the engine keep working.
      Batch next = requester.allocateBatch(1);
      next.submit(List.of(TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)));
      assertTrue(next.await(Duration.ofSeconds(30)).allCompleted());
      next.free();
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, 41, 0), "the peer's bytes");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, 41, 0), "the source's memory untouched");
    }
  }
}
