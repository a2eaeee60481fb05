package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * C5, C6, C11 with a real process: the source is SIGKILLed while large READs and WRITEs are in
 * flight. Every affected task fails only after local drain; a WRITE that may have reached the peer
 * says UNKNOWN (and is not replayed); a READ says NONE; no failed task's bytes are counted; the
 * survivor's bytes outside the READ destinations are untouched and the engine keeps working.
 */
class PeerDeathIT {
  private static final long REGION = 256L << 20;
  private static final long TASK = 8L << 20;

  @Test
  void aSourceKilledMidTransferFailsTasksOnlyAfterDrainAndNeverClaimsTheirBytes(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("survivor"));
        EngineProcess source = EngineProcess.start("victim", logs, Map.of())) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 1");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 2;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      // READs into the first half of the local region, WRITEs from the second half.
      List<TransferRequest> reads = new ArrayList<>();
      List<TransferRequest> writes = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        reads.add(TransferRequest.read(local, i * TASK, peer, remote, i * TASK, TASK));
        writes.add(
            TransferRequest.write(
                local, REGION / 2 + i * TASK, peer, remote, REGION / 2 + i * TASK, TASK));
      }
      long completedBefore = requester.counters().bytesCompleted();
      Batch readBatch = requester.allocateBatch(reads.size());
      Batch writeBatch = requester.allocateBatch(writes.size());
      readBatch.submit(reads);
      writeBatch.submit(writes);
      // Kill once bytes are flowing, while most of the work is still on the wire.
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () ->
                  readBatch.status().completedCount() >= 1
                      || writeBatch.status().completedCount() >= 1),
          "transfers started");
      source.kill();
      BatchStatus readStatus = readBatch.await(Duration.ofSeconds(60));
      BatchStatus writeStatus = writeBatch.await(Duration.ofSeconds(60));
      assertTrue(readStatus.done() && writeStatus.done(), "every task terminal after the death");

      long completedBytes = 0;
      int failedReads = 0;
      for (TaskResult r : readStatus.tasks()) {
        assertTrue(r.locallyDrained(), () -> "drained before reported: " + r);
        assertEquals(
            RemoteEffect.NONE, r.remoteEffect(), () -> "a READ never changes the peer: " + r);
        if (r.completed()) {
          completedBytes += r.bytes();
          long lo = r.index() * TASK;
          assertEquals(
              -1,
              Pattern.verify(local.segment(), lo, TASK, 1, lo),
              "a completed READ holds the peer's bytes");
        } else {
          failedReads++;
          assertEquals(0, r.bytes(), "a failed task counts no bytes");
          assertEquals(TaskState.FAILED, r.state());
        }
      }
      int failedWrites = 0;
      for (TaskResult r : writeStatus.tasks()) {
        assertTrue(r.locallyDrained(), () -> "drained before reported: " + r);
        if (r.completed()) {
          completedBytes += r.bytes();
          assertEquals(RemoteEffect.APPLIED, r.remoteEffect());
        } else {
          failedWrites++;
          assertEquals(0, r.bytes(), "a failed task counts no bytes");
          // UNKNOWN once any of it reached the socket; NONE only for a WRITE none of whose frames
          // was sent.
          assertTrue(
              r.remoteEffect() == RemoteEffect.UNKNOWN
                  || (r.remoteEffect() == RemoteEffect.NONE && r.detail().contains("never sent")),
              r::toString);
        }
      }
      assertTrue(failedReads + failedWrites > 0, "the kill hit work in flight");
      assertTrue(
          writeStatus.tasks().stream()
                  .anyMatch(t -> !t.completed() && t.remoteEffect() == RemoteEffect.UNKNOWN)
              || writeStatus.tasks().stream().allMatch(TaskResult::completed),
          "a WRITE cut off on the wire says UNKNOWN");
      assertEquals(
          completedBytes,
          requester.counters().bytesCompleted() - completedBefore,
          "only completed tasks' bytes are counted as transferred");
      // The survivor: WRITE sources untouched, and every guard around the READ destinations intact.
      assertEquals(
          -1,
          Pattern.verify(local.segment(), REGION / 2, REGION / 2, guard, REGION / 2),
          "the WRITE half of the survivor's region is untouched");
      readBatch.free();
      writeBatch.free();
      assertTrue(
          Await.until(Duration.ofSeconds(15), () -> requester.owed().isIdle()),
          () -> "still owed: " + requester.owed());
      assertTrue(((Registration) local).visible(), "the survivor keeps its registration");
    }
  }
}
