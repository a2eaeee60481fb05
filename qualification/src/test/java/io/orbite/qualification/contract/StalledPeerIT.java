package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A SIGSTOPped source: tasks on the wire hit their deadline and fail TIMEOUT only after the lane
 * blocked on the frozen peer has been closed (drained); nothing lands on the requester; after
 * SIGCONT the source's whole region is checked against what the WRITE reported, and a fresh open
 * reaches the same incarnation again.
 */
class StalledPeerIT {
  private static final long REGION = 16L << 20;

  @Test
  void tasksAgainstAFrozenPeerTimeOutAfterDrainAndTheEngineRecovers(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("patient"));
        EngineProcess source = EngineProcess.start("frozen-source", logs, Map.of())) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 5");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 6, 0);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));

      source.stop();
      Batch batch = requester.allocateBatch(4);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote, 0, 4 << 20)
                  .withDeadline(Duration.ofSeconds(1)),
              TransferRequest.read(local, 8 << 20, peer, remote, 8 << 20, 4096)
                  .withDeadline(Duration.ofSeconds(1)),
              TransferRequest.write(local, 12 << 20, peer, remote, 12 << 20, 1 << 20)
                  .withDeadline(Duration.ofSeconds(1))));
      BatchStatus status = batch.await(Duration.ofSeconds(30));
      assertTrue(status.done(), "every task terminal although the peer is frozen");
      for (TaskResult r : status.tasks()) {
        assertEquals(ErrorKind.TIMEOUT, r.errorKind(), r::toString);
        assertTrue(r.locallyDrained(), () -> "reported only after drain: " + r);
        assertEquals(0, r.bytes());
      }
      assertEquals(
          RemoteEffect.NONE, status.tasks().get(0).remoteEffect(), "a READ never changes the peer");
      assertEquals(
          RemoteEffect.NONE, status.tasks().get(1).remoteEffect(), "a READ never changes the peer");
      TaskResult write = status.tasks().get(2);
      batch.free();
      // The requester's whole region: nothing landed (the peer was frozen before anything was
      // asked).
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, REGION, 6, 0),
          "no READ byte landed, the WRITE source is intact");

      source.resume();
      // Once thawed, the source reads whatever of the WRITE its kernel had buffered, then finds the
      // lanes closed. Wait until no source lane holds the region, then check every byte of it:
      // outside the WRITE's range its own pattern; inside, each byte its own or the requester's (a
      // WRITE cut off on the wire may land in part: a prefix of each of its frames).
      assertTrue(
          Await.until(Duration.ofSeconds(20), () -> "0".equals(call(source, "LOANS"))),
          "the thawed source's lanes let go of the region");
      String check =
          source.ask("ONEOF " + remote + " 5 6 " + (12 << 20) + " " + (1 << 20), List.of());
      assertTrue(
          check.startsWith("OK "), () -> "the source's whole region after the thaw: " + check);
      long landed = Long.parseLong(check.substring(3));
      // What the WRITE reported agrees with the source's bytes: it reached the source's socket
      // unacknowledged, so UNKNOWN, which allows any part of it to have landed; never NONE.
      assertEquals(
          RemoteEffect.UNKNOWN,
          write.remoteEffect(),
          () -> write + "; " + landed + " B landed at the source");
      RemoteSegment again = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertEquals(peer.descriptor(), again.descriptor(), "the same incarnation, reached again");
      Batch after = requester.allocateBatch(1);
      after.submit(List.of(TransferRequest.read(local, 0, again, remote, 0, 1 << 20)));
      assertTrue(after.await(Duration.ofSeconds(30)).allCompleted());
      after.free();
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, 1 << 20, 5, 0),
          "the peer's bytes, after recovery");
    }
  }

  private static String call(EngineProcess p, String command) {
    try {
      return p.call(command);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
