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
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * C5 and C6 when one connection breaks while the peer lives: a hook resets one requester lane just
 * as a READ payload is about to land. With tcp.retryReadOnOtherLane (the default) that lane's READ
 * frames are sent once more on the other lane after it drained them, and the READ completes with
 * the peer's bytes; a WRITE on that lane is never sent twice (the source applies it at most once).
 * With the option off, the READ fails PEER_LOST after drain with nothing counted.
 */
class LaneRetryIT {
  private static final long REGION = 16L << 20;
  private static final long READ_AT = 4096 + 5;
  private static final long READ = (4L << 20) + 11;
  private static final long WRITE_AT = (8L << 20) + 3;
  private static final long WRITE = 4L << 20;

  /** Breaks the first lane that is about to receive a READ payload, once. */
  private static final class BreakOnce implements FaultHooks {
    final AtomicBoolean fired = new AtomicBoolean();

    @Override
    public void beforeReadPayload(String lane) throws IOException {
      if (fired.compareAndSet(false, true)) {
        throw new IOException("test hook: connection reset on " + lane);
      }
    }
  }

  private static BatchStatus readAndWrite(boolean retry) {
    BreakOnce hook = new BreakOnce();
    EngineConfig d = EngineConfig.defaults();
    EngineConfig requesterConfig =
        d.withName("retrying").withTcp(d.tcp().withRetryReadOnOtherLane(retry));
    try (TransferEngine source = TransferEngine.start(d.withName("retry-source"));
        TransferEngine requester = FaultInjection.start(requesterConfig, hook)) {
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, 51);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, 52);
      Pattern.fill(local.segment(), WRITE_AT, WRITE, 53, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, READ_AT, peer, remote.regionId(), 1000, READ),
              TransferRequest.write(local, WRITE_AT, peer, remote.regionId(), WRITE_AT, WRITE)));
      BatchStatus status = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(hook.fired.get(), "the hook broke a lane");
      assertTrue(status.done());

      TaskResult read = status.tasks().get(0);
      TaskResult write = status.tasks().get(1);
      assertTrue(read.locallyDrained() && write.locallyDrained(), status::toString);
      if (retry) {
        assertEquals(TaskState.COMPLETED, read.state(), read::toString);
        assertEquals(READ, read.bytes());
        assertTrue(requester.counters().readRetries() >= 1, "the READ's frames were sent again");
      } else {
        assertEquals(ErrorKind.PEER_LOST, read.errorKind(), read::toString);
        assertEquals(0, read.bytes(), "a failed task's bytes are never counted");
        assertEquals(RemoteEffect.NONE, read.remoteEffect());
        assertEquals(0, requester.counters().readRetries());
      }
      // The READ's range: the peer's bytes where it completed; outside it, the local guards.
      List<Span> localSpans = new java.util.ArrayList<>();
      if (read.completed()) {
        localSpans.add(new Span(READ_AT, READ, 51, 1000));
      }
      localSpans.add(new Span(WRITE_AT, WRITE, 53, 0));
      if (!read.completed()) {
        // A failed READ may have landed in part before the break: check the guards around it only.
        assertEquals(
            -1, Pattern.verify(local.segment(), 0, READ_AT, 52, 0), "guard before the READ");
        assertEquals(
            -1,
            Pattern.verify(
                local.segment(), READ_AT + READ, WRITE_AT - READ_AT - READ, 52, READ_AT + READ),
            "guard after the READ");
        assertEquals(-1, Pattern.verify(local.segment(), WRITE_AT, WRITE, 53, 0));
      } else {
        EnginePair.assertRegion(local.segment(), localSpans, 52, "the requester's region");
      }

      // The WRITE ran at most once: the source applied no more bytes than one WRITE holds.
      long applied = source.counters().sourceBytesWritten();
      assertTrue(applied <= WRITE, "the WRITE was applied at most once: " + applied + " B");
      if (write.completed()) {
        assertEquals(RemoteEffect.APPLIED, write.remoteEffect());
        EnginePair.assertRegion(
            remote.segment(), List.of(new Span(WRITE_AT, WRITE, 53, 0)), 51, "the source's region");
      } else {
        // A failed WRITE split over both lanes may have had its slices on the healthy lane applied
        // and acknowledged (APPLIED), those on the broken lane sent and never acknowledged
        // (UNKNOWN) or never sent. Each byte of its range is the source's own or the WRITE's, and
        // the WRITE's bytes there are no more than the source applied.
        long landed = landedWriteBytes(remote.segment());
        assertTrue(
            landed <= applied, "bytes of the WRITE found: " + landed + " > applied " + applied);
        switch (write.remoteEffect()) {
          case NONE -> {
            assertEquals(0, applied, write::toString);
            assertEquals(
                -1, Pattern.verify(remote.segment(), WRITE_AT, WRITE, 51, WRITE_AT), "untouched");
          }
          case APPLIED -> assertTrue(landed > 0, () -> "APPLIED but nothing landed: " + write);
          case UNKNOWN -> {}
        }
        assertEquals(
            -1, Pattern.verify(remote.segment(), 0, WRITE_AT, 51, 0), "source before the WRITE");
        assertEquals(
            -1,
            Pattern.verify(
                remote.segment(),
                WRITE_AT + WRITE,
                REGION - WRITE_AT - WRITE,
                51,
                WRITE_AT + WRITE),
            "source after the WRITE");
      }
      return status;
    }
  }

  /**
   * Counts the bytes of the WRITE's range that hold the WRITE's pattern where it differs from the
   * source's own, failing on any byte that is neither.
   */
  private static long landedWriteBytes(MemorySegment seg) {
    long landed = 0;
    for (long p = WRITE_AT; p < WRITE_AT + WRITE; p++) {
      byte b = seg.get(ValueLayout.JAVA_BYTE, p);
      byte own = Pattern.at(51, p);
      byte written = Pattern.at(53, p - WRITE_AT);
      if (b != own && b != written) {
        throw new AssertionError("source byte at " + p + " is neither its own nor the WRITE's");
      }
      if (b == written && written != own) {
        landed++;
      }
    }
    return landed;
  }

  @Test
  void aReadWhoseLaneBreaksIsSentOnceMoreOnAnotherLane() {
    readAndWrite(true);
  }

  @Test
  void withoutRetryTheReadFailsPeerLostAfterDrain() {
    readAndWrite(false);
  }
}
