package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
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
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * C5 over SHM: a copy thread held (by a fault hook) just before it copies a task, past the task's
 * deadline and the destruction window. The engine cannot stop a memcpy, so it must never report the
 * task FAILED and drained while the copy may still come: the task is UNQUIESCED, not drained, its
 * loan and charges kept, {@code free()} answers BATCH_BUSY. When the copy is let go late, the bytes
 * land (the report had said they might), and only then does the task read drained. Both regions are
 * checked in full, the source's in its own process.
 */
class ShmHeldCopyIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;
  private static final long LOCAL_AT = 4096 + 7;
  private static final long REMOTE_AT = 8192 + 3;
  private static final long WINDOW_MILLIS = 1500;

  @Test
  void aReadHeldInItsCopyIsNeverReportedDrainedBeforeTheCopyLetsGo(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    run(logs, TransferRequest::read, 0x31, 0x32, true);
  }

  @Test
  void aWriteHeldInItsCopyIsUnknownAndNeverReportedDrainedBeforeTheCopyLetsGo(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    run(logs, TransferRequest::write, 0x33, 0x34, false);
  }

  @FunctionalInterface
  private interface Make {
    TransferRequest make(
        RegisteredMemory local,
        long localOffset,
        RemoteSegment peer,
        long regionId,
        long remoteOffset,
        long length);
  }

  private static void run(Path logs, Make make, long sourceSeed, long localSeed, boolean read)
      throws Exception {
    HeldWorker hook = HeldWorker.atSharedCopy();
    EngineConfig config = EngineConfig.defaults().withName("shm-held");
    config = config.withTimeouts(config.timeouts().withDestructionWindowMillis(WINDOW_MILLIS));
    try (EngineProcess source = EngineProcess.start("shm-held-source", logs, ShmPeer.SHM_SOURCE);
        TransferEngine requester = FaultInjection.start(config, hook)) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " " + sourceSeed);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, localSeed, 0);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));

      try {
        Batch batch = requester.allocateBatch(1);
        hook.arm();
        batch.submit(
            List.of(
                make.make(local, LOCAL_AT, peer, remote, REMOTE_AT, TASK)
                    .withTransport(Transport.SHM)
                    .withDeadline(Duration.ofMillis(300))));
        hook.awaitHeld(Duration.ofSeconds(20));

        // While the copy is held, no report may say the memory is free: sample until the batch
        // gives up.
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        BatchStatus s;
        do {
          s = batch.status();
          TaskResult t = s.tasks().getFirst();
          assertFalse(t.locallyDrained(), () -> "reported drained while its copy is held: " + t);
          assertTrue(
              t.state() == TaskState.PENDING || t.state() == TaskState.UNQUIESCED, t::toString);
        } while (!s.done() && System.nanoTime() < deadline);
        TaskResult t = s.tasks().getFirst();
        assertEquals(TaskState.UNQUIESCED, t.state(), t::toString);
        assertEquals(ErrorKind.UNQUIESCED, t.errorKind(), t::toString);
        assertEquals(0, t.bytes());
        assertEquals(
            read ? RemoteEffect.NONE : RemoteEffect.UNKNOWN, t.remoteEffect(), t::toString);
        assertEquals(
            ErrorKind.BATCH_BUSY, assertThrows(TransferException.class, batch::free).kind());
        assertTrue(
            requester.quarantined().stream().anyMatch(q -> q.kind() == QuarantinedOwner.Kind.BATCH),
            requester.quarantined()::toString);
        assertTrue(((Registration) local).loans() >= 1, "the held task keeps its loan");
        // Nothing was copied yet, either way.
        assertEquals(
            -1,
            RegionCheck.check(local.segment(), List.of(), localSeed),
            "requester region while held");
        ShmPeer.assertRemoteRegion(
            source, remote, sourceSeed, List.of(), "source region while held");

        hook.release();
        assertTrue(
            Await.until(
                Duration.ofSeconds(20), () -> batch.status().tasks().getFirst().locallyDrained()),
            "the late receipt proves the drain");
        TaskResult late = batch.status().tasks().getFirst();
        assertEquals(
            TaskState.UNQUIESCED, late.state(), "a reported outcome never changes: " + late);
        assertEquals(0, late.bytes());
        // The copy that was held has run: its bytes landed, and nothing outside its range moved.
        if (read) {
          assertEquals(
              -1,
              RegionCheck.check(
                  local.segment(),
                  List.of(new Span(LOCAL_AT, TASK, sourceSeed, REMOTE_AT)),
                  localSeed),
              "requester region after the late copy");
          ShmPeer.assertRemoteRegion(
              source, remote, sourceSeed, List.of(), "source region (a READ changes nothing)");
        } else {
          assertEquals(
              -1,
              RegionCheck.check(local.segment(), List.of(), localSeed),
              "requester region (a WRITE reads it)");
          ShmPeer.assertRemoteRegion(
              source,
              remote,
              sourceSeed,
              List.of(new Span(REMOTE_AT, TASK, localSeed, LOCAL_AT)),
              "source region after the late copy");
        }
        batch.free();
        assertTrue(
            Await.until(Duration.ofSeconds(10), () -> requester.owed().isIdle()),
            requester.owed()::toString);
        assertEquals(0, ((Registration) local).loans());
      } finally {
        hook.release(); // a failed check must not leave the copy thread held through the close
      }
    }
  }
}
