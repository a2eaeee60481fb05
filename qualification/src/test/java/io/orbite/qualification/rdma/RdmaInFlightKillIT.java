package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineCounters;
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
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.ReadRanges;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A source process SIGKILLed with 320 slices in flight over two rails of three lanes each (the
 * software provider on both sides): 20 READs and 20 WRITEs of 512 KiB (eight 64 KiB slices each),
 * interleaved in one batch. The requester's {@code beforeRdmaPost} hook stalls the wire of every QP
 * it is about to post on ({@link SoftFaults#stallWire}), so each QP's first payloads are posted and
 * held before they leave and the rest of the slices wait in the post queues. That all 320 are in
 * flight at the kill is read from counters, not assumed: the transport dispatched 320 slices, the
 * engine counts 40 tasks and 20 MiB in flight, every slice still holds its direct-bytes share, the
 * six QPs were posted on, and neither the engine's rails nor the provider moved a byte; both
 * regions are checked whole just before the kill.
 *
 * <p>After the kill every task is checked: {@code FAILED} {@code PEER_LOST}, 0 bytes, drained, a
 * READ {@code NONE}, a WRITE {@code UNKNOWN} only if a WRITE payload was posted (at most one per
 * posted WRITE slice) and {@code NONE} otherwise; or {@code COMPLETED} with its bytes and its
 * effect. The requester's region is checked byte for byte (a failed READ's range holds its stale
 * bytes or the source's, a completed one the source's, every WRITE range and guard unchanged), and
 * the requester drains: the batch frees, no endpoint owner is left in the owner view, no QP, no
 * direct bytes, no parent reserved, its loans back where they were, nothing quarantined. A fresh
 * source process at the same endpoint then serves a verified READ.
 */
class RdmaInFlightKillIT {
  private static final long SLICE = 64 * 1024;
  private static final long TASK = 8 * SLICE;
  private static final int TASKS = 40;
  private static final int SLICES = TASKS * (int) (TASK / SLICE);
  private static final long BASE = 4099;
  private static final long STRIDE = TASK + 4099;
  private static final long REGION = BASE + STRIDE * TASKS + 8192;

  @Test
  void aSourceKilledWith320SlicesInFlightFailsEachPeerLostDrainedAndAFreshSourceServes(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    SoftFaults faults = SoftFaults.create();
    AtomicBoolean stalling = new AtomicBoolean(true);
    Set<Integer> stalledQps = ConcurrentHashMap.newKeySet();
    AtomicInteger writePosts = new AtomicInteger();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }

          @Override
          public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
            if (stalling.get()) {
              faults.stallWire(qpNum); // posted, then held before it leaves: no byte, no CQE
              stalledQps.add(qpNum);
              if (write) {
                writePosts.incrementAndGet();
              }
            }
          }
        };
    int port;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    try (TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("inflight-requester"), hooks);
        EngineProcess first =
            EngineProcess.startAt("inflight-source", logs, port, RdmaPeerIT.RDMA_SOURCE)) {
      EngineProcess source = first;
      try {
        long data = 0x5eed_41L;
        long own = 0x5eed_42L;
        long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
        source.call("FILL " + remote + " " + data);
        RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
        Pattern.fill(local.segment(), 0, REGION, own, 0);
        RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
        long loansIdle = requester.owed().loans();
        EngineCounters c0 = requester.counters();
        long slices0 = RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched");
        long rails0 = railBytes(requester);
        long provider0 = faults.payloadBytes("soft0") + faults.payloadBytes("soft1");

        List<TransferRequest> requests = new ArrayList<>();
        for (int i = 0; i < TASKS; i++) {
          long at = BASE + i * STRIDE;
          requests.add(
              (isRead(i)
                      ? TransferRequest.read(local, at, peer, remote, at, TASK)
                      : TransferRequest.write(local, at, peer, remote, at, TASK))
                  .withTransport(Transport.RDMA));
        }
        Batch batch = requester.allocateBatch(TASKS);
        batch.submit(requests);

        // In flight at the kill, from counters: every slice dispatched, none drained (each still
        // holds its direct-bytes share), every QP of the 2 x 3 posted on and stalled, no byte
        // moved.
        assertTrue(
            Await.until(
                Duration.ofSeconds(30),
                () ->
                    RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched") - slices0
                            == SLICES
                        && stalledQps.size() == 6),
            () ->
                "320 slices dispatched, six QPs posted on: "
                    + (RdmaPeerIT.charge(requester, "RdmaTransport", "slicesDispatched") - slices0)
                    + " slices, QPs "
                    + stalledQps);
        assertTrue(SLICES >= 256);
        assertEquals(
            TASKS * TASK,
            RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes"),
            "every slice still holds its share of the direct bytes: none drained");
        assertEquals(TASKS, RdmaPeerIT.charge(requester, "RdmaTransport", "parentsReserved"));
        assertEquals(TASKS, requester.owed().tasksInFlight(), requester.owed()::toString);
        assertEquals(TASKS * TASK, requester.owed().bytesInFlight(), requester.owed()::toString);
        EngineCounters c1 = requester.counters();
        assertEquals(c0.tasksCompleted(), c1.tasksCompleted(), "no task ended before the kill");
        assertEquals(c0.tasksFailed(), c1.tasksFailed(), "no task ended before the kill");
        assertEquals(rails0, railBytes(requester), "no byte confirmed before the kill");
        assertEquals(
            provider0,
            faults.payloadBytes("soft0") + faults.payloadBytes("soft1"),
            "the provider moved no byte before the kill");
        assertTrue(
            batch.status().tasks().stream().noneMatch(t -> t.state().isTerminal()),
            batch.status()::toString);
        assertEquals(
            -1, Pattern.verify(local.segment(), 0, REGION, own, 0), "requester: nothing landed");
        assertEquals(
            "OK",
            source.ask("VERIFY " + remote + " " + data + " 0", List.of()),
            "source: nothing landed");

        source.kill();
        BatchStatus s = batch.await(Duration.ofSeconds(60));
        assertEquals(TASKS, s.tasks().size());
        int unknownWrites = 0;
        List<long[]> reads = new ArrayList<>();
        for (TaskResult t : s.tasks()) {
          boolean read = isRead(t.index());
          assertTrue(t.locallyDrained(), t::toString);
          if (t.state() == TaskState.COMPLETED) {
            assertEquals(TASK, t.bytes(), t::toString);
            assertEquals(read ? RemoteEffect.NONE : RemoteEffect.APPLIED, t.remoteEffect());
          } else {
            assertEquals(TaskState.FAILED, t.state(), t::toString);
            assertEquals(ErrorKind.PEER_LOST, t.errorKind(), t::toString);
            assertEquals(0, t.bytes(), t::toString);
            if (read || t.remoteEffect() == RemoteEffect.NONE) {
              assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
            } else {
              assertEquals(RemoteEffect.UNKNOWN, t.remoteEffect(), t::toString);
              unknownWrites++;
            }
          }
          if (read) {
            reads.add(
                new long[] {
                  BASE + t.index() * STRIDE, TASK, t.state() == TaskState.COMPLETED ? 1 : 0
                });
          }
        }
        int posted = writePosts.get();
        assertTrue(
            unknownWrites <= posted && (posted == 0 || unknownWrites > 0),
            "a WRITE is UNKNOWN exactly when a payload of it was posted: "
                + unknownWrites
                + " UNKNOWN, "
                + posted
                + " WRITE payloads posted");
        // Failed READ ranges: stale or the source's bytes; completed ones the source's; WRITE
        // ranges (the WRITEs' own bytes) and guards unchanged.
        assertEquals(-1, ReadRanges.check(local.segment(), own, data, reads), "requester region");

        batch.free();
        assertTrue(
            Await.until(
                Duration.ofSeconds(30),
                () ->
                    requester.ownerView().owners().stream()
                            .noneMatch(o -> o.kind().equals("RdmaEndpoint"))
                        && RdmaPeerIT.charge(requester, "CqLane", "qps") == 0
                        && RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0
                        && RdmaPeerIT.charge(requester, "RdmaTransport", "parentsReserved") == 0
                        && requester.owed().loans() == loansIdle
                        && requester.owed().tasksInFlight() == 0),
            () -> "the requester drained: " + requester.owed() + " " + requester.ownerView());
        assertTrue(requester.quarantined().isEmpty(), () -> "" + requester.quarantined());

        stalling.set(false);
        stalledQps.forEach(faults::releaseWire);
        source = source.restart();
        freshSourceServesAVerifiedRead(requester, local, source);
      } finally {
        source.close();
      }
    }
  }

  /** Even tasks READ, odd ones WRITE. */
  private static boolean isRead(int task) {
    return task % 2 == 0;
  }

  private static long railBytes(TransferEngine engine) {
    return RdmaTransferIT.railBytes(engine, "soft0") + RdmaTransferIT.railBytes(engine, "soft1");
  }

  /** Four READs of 512 KiB from the replacement, the requester's whole region checked. */
  private static void freshSourceServesAVerifiedRead(
      TransferEngine requester, RegisteredMemory local, EngineProcess source) throws Exception {
    long data = 0x5eed_43L;
    long guard = 0x5eed_44L;
    long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    source.call("FILL " + remote + " " + data);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      long at = BASE + i * STRIDE;
      requests.add(
          TransferRequest.read(local, at, peer, remote, at, TASK).withTransport(Transport.RDMA));
      spans.add(new Span(at, TASK, data, at));
    }
    Batch batch = requester.allocateBatch(4);
    batch.submit(requests);
    BatchStatus s = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(s.allCompleted(), () -> "the fresh source: " + RdmaTransferIT.firstFailure(s));
    for (TaskResult t : s.tasks()) {
      assertEquals(TASK, t.bytes(), t::toString);
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
    }
    assertEquals(
        -1, RegionCheck.check(local.segment(), spans, guard), "the fresh source's READs landed");
    assertEquals("OK", source.ask("VERIFY " + remote + " " + data + " 0", List.of()));
  }
}
