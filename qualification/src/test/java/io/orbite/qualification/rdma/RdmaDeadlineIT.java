package io.orbite.qualification.rdma;

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
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Request deadlines on the RDMA transport, as on TCP: a slice whose deadline passes before it is
 * sent fails {@code TIMEOUT}, effect {@code NONE}, nothing moved; a slice whose payload is still on
 * the wire past its deadline (its completion withheld) has its QP retired, and fails {@code
 * TIMEOUT} only once the QP's destruction proved its drain: a READ {@code NONE}, a WRITE {@code
 * UNKNOWN} (C5, C6), never {@code UNQUIESCED}. The requester has one rail and one lane, so every
 * slice shares one QP.
 */
class RdmaDeadlineIT {
  private static final long TASK = 64 * 1024;
  private static final long REGION = 1L << 20;

  private static EngineConfig oneLane(String name) {
    EngineConfig c = RdmaTransferIT.rdmaConfig(name);
    return c.withRdma(c.rdma().withSoftwareDevices(1).withLanes(1));
  }

  @Test
  void aSliceWhoseDeadlinePassesBeforeItIsSentFailsTimeoutAndMovesNothing() throws Exception {
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("late-source"));
        TransferEngine requester = FaultInjection.start(oneLane("late-requester"), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 51;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 52;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      // The first READ holds the only lane inside its post.
      Batch first = requester.allocateBatch(1);
      first.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      Batch late = requester.allocateBatch(1);
      try {
        assertTrue(hold.awaitFirstPost(), "the first READ is about to post");
        // The second, with a 200 ms deadline, is queued on that lane behind it.
        long submitted = System.nanoTime();
        late.submit(
            List.of(
                TransferRequest.read(local, 2 * TASK, peer, remote.regionId(), 2 * TASK, TASK)
                    .withTransport(Transport.RDMA)
                    .withDeadline(Duration.ofMillis(200))));
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> System.nanoTime() - submitted > Duration.ofMillis(400).toNanos()),
            "its deadline passed while the lane was held");
      } finally {
        hold.letGo();
      }
      BatchStatus ok = first.await(Duration.ofSeconds(30));
      first.free();
      assertTrue(ok.allCompleted(), ok::toString);
      BatchStatus s = late.await(Duration.ofSeconds(30));
      late.free();
      TaskResult r = s.tasks().getFirst();
      assertEquals(ErrorKind.TIMEOUT, r.errorKind(), r::toString);
      assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertTrue(r.locallyDrained(), r::toString);
      assertTrue(r.detail().contains("never sent"), r::toString);

      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "the first READ");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK),
          "the late READ's range and all else untouched");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 0
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0
                      && RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") == 1),
          () ->
              "both reservations ended, every charge back, one window ever bound (the first"
                  + " READ's): "
                  + source.ownerView());
    }
  }

  @Test
  void aTaskWaitingForItsChargesPastItsDeadlineFailsTimeoutWhileTheOneAheadIsStillHeld()
      throws Exception {
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("wait-source"));
        TransferEngine requester =
            FaultInjection.start(RdmaCleanupIT.withMaxGrants(oneLane("wait-requester"), 1), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 71;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 72;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      // The first READ holds this engine's only parent unit, its post held.
      Batch first = requester.allocateBatch(1);
      first.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)));
      TaskResult r;
      try {
        assertTrue(hold.awaitFirstPost(), "the first READ is about to post");
        Batch waiting = requester.allocateBatch(1);
        waiting.submit(
            List.of(
                TransferRequest.read(local, 2 * TASK, peer, remote.regionId(), 2 * TASK, TASK)
                    .withTransport(Transport.RDMA)
                    .withDeadline(Duration.ofMillis(300))));
        // It fails while the first is still held: not when its turn would have come.
        BatchStatus s = waiting.await(Duration.ofSeconds(5));
        assertTrue(s.done(), s::toString);
        waiting.free();
        r = s.tasks().getFirst();
      } finally {
        hold.letGo();
      }
      assertEquals(ErrorKind.TIMEOUT, r.errorKind(), r::toString);
      assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertTrue(r.locallyDrained(), r::toString);
      assertTrue(r.detail().contains("rdma.maxGrants (never sent)"), r::toString);
      BatchStatus ok = first.await(Duration.ofSeconds(30));
      first.free();
      assertTrue(ok.allCompleted(), ok::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "the first READ");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK),
          "the late READ's range and all else untouched");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  RdmaPeerIT.charge(requester, "RdmaTransport", "tasksPastDeadline") == 1
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "parentsReserved") == 0
                      && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0
                      && RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") == 1),
          () -> "counted once, every charge back, one window ever bound: " + requester.ownerView());
    }
  }

  @Test
  void aSliceStillOnTheWirePastItsDeadlineHasItsQpRetiredThenFailsTimeoutWithItsEffect()
      throws Exception {
    SoftFaults faults = SoftFaults.create();
    AtomicInteger posted = new AtomicInteger();
    java.util.concurrent.atomic.AtomicBoolean withhold =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }

          @Override
          public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
            if (withhold.get()) {
              faults.withholdCqe(qpNum, wrId); // the payload happens; its completion never comes
            }
            posted.incrementAndGet();
          }
        };
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("wire-source"));
        TransferEngine requester = FaultInjection.start(oneLane("wire-requester"), hooks)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 61;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 62;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      long written = 63;
      Pattern.fill(local.segment(), 2 * TASK, TASK, written, 2 * TASK);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long failedBefore = RdmaPeerIT.charge(requester, "RdmaTransport", "qpsFailed");

      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA)
                  .withDeadline(Duration.ofSeconds(1)),
              TransferRequest.write(local, 2 * TASK, peer, remote.regionId(), 2 * TASK, TASK)
                  .withTransport(Transport.RDMA)
                  .withDeadline(Duration.ofSeconds(1))));
      assertTrue(Await.until(Duration.ofSeconds(10), () -> posted.get() == 2), "both posted");
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      TaskResult read = s.tasks().get(0);
      TaskResult write = s.tasks().get(1);
      for (TaskResult r : List.of(read, write)) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.TIMEOUT, r.errorKind(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
        assertTrue(
            r.detail().contains("deadline passed with its payload on the wire"), r::toString);
      }
      assertEquals(RemoteEffect.NONE, read.remoteEffect(), read::toString);
      assertEquals(RemoteEffect.UNKNOWN, write.remoteEffect(), write::toString);
      assertTrue(
          RdmaPeerIT.charge(requester, "RdmaTransport", "qpsFailed") > failedBefore,
          "the QP was retired");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "slicesPastDeadline") >= 1),
          "counted");
      assertTrue(requester.quarantined().isEmpty(), "the QP was destroyed: nothing kept");

      // Requester: the READ's bytes may have landed (only its completion was withheld), the
      // WRITE's source is unchanged, nothing else moved.
      expectEach(local.segment(), 0, TASK, guard, data, "requester READ range");
      assertEquals(-1, Pattern.verify(local.segment(), TASK, TASK, guard, TASK), "gap");
      assertEquals(
          -1, Pattern.verify(local.segment(), 2 * TASK, TASK, written, 2 * TASK), "WRITE source");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 3 * TASK, REGION - 3 * TASK, guard, 3 * TASK),
          "after");
      // Source: the WRITE's range holds its old or its new bytes, nothing else changed.
      assertEquals(-1, Pattern.verify(remote.segment(), 0, 2 * TASK, data, 0), "source before");
      expectEach(remote.segment(), 2 * TASK, TASK, data, written, "source WRITE range");
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), 3 * TASK, REGION - 3 * TASK, data, 3 * TASK),
          "source after");

      // The endpoint repairs its QP: a READ with the default deadline lands whole.
      withhold.set(false);
      Batch again = requester.allocateBatch(1);
      again.submit(
          List.of(
              TransferRequest.read(local, 4 * TASK, peer, remote.regionId(), 4 * TASK, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus ok = again.await(Duration.ofSeconds(30));
      again.free();
      assertTrue(ok.allCompleted(), ok::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 4 * TASK, TASK, data, 4 * TASK), "landed");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 5 * TASK, REGION - 5 * TASK, guard, 5 * TASK),
          "guard after it");
    }
  }

  /** Each byte of {@code [at, at + length)} is pattern {@code a}'s or pattern {@code b}'s. */
  private static void expectEach(
      MemorySegment m, long at, long length, long a, long b, String what) {
    for (long p = at; p < at + length; p++) {
      byte v = m.get(ValueLayout.JAVA_BYTE, p);
      if (v != Pattern.at(a, p) && v != Pattern.at(b, p)) {
        throw new AssertionError(what + ": byte " + p + " is neither pattern");
      }
    }
  }
}
