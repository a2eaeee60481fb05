package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference's fault profiles for the RDMA transport, each on the software provider with a fault
 * armed for exactly the work request a lane is about to post (through {@link
 * FaultHooks#beforeRdmaPost}): a payload completion withheld and then the peer SIGKILLed; the same
 * with the QP's destroy failing; the peer killed while grants are reserved and receives posted but
 * before any payload; a copy interrupted part-way. The requester has one rail and one lane, so
 * every slice shares one QP and its fate.
 */
class RdmaFaultsIT {
  private static final long TASK = 64 * 1024;
  private static final long REGION = 1L << 20;

  /** One rail, one lane; a short destruction window so UNQUIESCED shows within the test. */
  private static EngineConfig requesterConfig(String name) {
    EngineConfig c = RdmaTransferIT.rdmaConfig(name);
    return c.withRdma(c.rdma().withSoftwareDevices(1).withLanes(1))
        .withTimeouts(TimeoutConfig.defaults().withDestructionWindowMillis(1_000));
  }

  /** Hooks that hand the provider {@code faults} and run {@code beforePost} before each post. */
  private record Hooks(SoftFaults faults, PostHook beforePost) implements FaultHooks {
    @Override
    public Object rdmaFaults() {
      return faults;
    }

    @Override
    public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
      beforePost.before(qpNum, wrId, write);
    }
  }

  @FunctionalInterface
  private interface PostHook {
    void before(int qpNum, long wrId, boolean write);
  }

  private static int freePort() throws Exception {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void withheldPayloadCompletionsThenPeerDeathReportWriteUnknownReadNoneAndCountNoBytes(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    SoftFaults faults = SoftFaults.create();
    AtomicInteger posted = new AtomicInteger();
    Hooks hooks =
        new Hooks(
            faults,
            (qpNum, wrId, write) -> {
              faults.withholdCqe(qpNum, wrId);
              posted.incrementAndGet();
            });
    try (TransferEngine requester = FaultInjection.start(requesterConfig("lost-cqe"), hooks);
        EngineProcess source =
            EngineProcess.startAt("lost-cqe-source", logs, freePort(), RdmaPeerIT.RDMA_SOURCE)) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      long data = 41;
      long guard = 42;
      source.call("FILL " + remote + " " + data);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
      long railBytes = RdmaTransferIT.railBytes(requester, "soft0");
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote, 0, TASK).withTransport(Transport.RDMA),
              TransferRequest.write(local, 2 * TASK, peer, remote, 2 * TASK, TASK)
                  .withTransport(Transport.RDMA)));
      assertTrue(Await.until(Duration.ofSeconds(10), () -> posted.get() == 2), "both posted");
      // Both payloads ran (only their completions are withheld) before the peer dies.
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> Pattern.verify(local.segment(), 0, TASK, data, 0) == -1),
          "the READ's bytes landed");
      List<String> writeSpan = List.of(2 * TASK + " " + TASK + " " + guard + " " + 2 * TASK);
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> {
                try {
                  return source.ask("VERIFY " + remote + " " + data + " 1", writeSpan).equals("OK");
                } catch (java.io.IOException e) {
                  throw new IllegalStateException(e);
                }
              }),
          "the WRITE's bytes landed");
      int destroysBefore = faults.destroyCalls(SoftFaults.Kind.QP);
      source.kill();
      // The QP's destruction precedes the drain receipt: at the first sight of a terminal task
      // (its receipt published), the requester's QP has been destroyed already.
      int[] destroysAtReceipt = {-1};
      assertTrue(
          Await.until(
              Duration.ofSeconds(30),
              () -> {
                int destroys = faults.destroyCalls(SoftFaults.Kind.QP);
                if (batch.status().tasks().stream().anyMatch(t -> t.state().isTerminal())) {
                  destroysAtReceipt[0] = destroys;
                  return true;
                }
                return false;
              }),
          "a task ended");
      assertTrue(
          destroysAtReceipt[0] > destroysBefore,
          () ->
              "the QP was destroyed before the first receipt: "
                  + destroysBefore
                  + " destroys before the kill, "
                  + destroysAtReceipt[0]
                  + " just before a receipt was seen");
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      TaskResult read = s.tasks().get(0);
      TaskResult write = s.tasks().get(1);
      assertEquals(TaskState.FAILED, read.state(), read::toString);
      assertEquals(RemoteEffect.NONE, read.remoteEffect(), read::toString);
      assertEquals(TaskState.FAILED, write.state(), write::toString);
      assertEquals(RemoteEffect.UNKNOWN, write.remoteEffect(), write::toString);
      for (TaskResult r : List.of(read, write)) {
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
      }
      assertEquals(railBytes, RdmaTransferIT.railBytes(requester, "soft0"), "no byte counted");
      // The READ's bytes may have landed (only its completion was withheld), nowhere else.
      for (long p = 0; p < REGION; p++) {
        byte b = local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
        boolean inRead = p < TASK;
        boolean ok = b == Pattern.at(guard, p) || (inRead && b == Pattern.at(data, p));
        if (!ok) {
          throw new AssertionError("requester byte " + p + " is neither guard nor the READ's");
        }
      }
      assertTrue(requester.quarantined().isEmpty(), "the QP was destroyed: nothing kept");
    }
  }

  @Test
  void aQpWhoseDestroyFailsKeepsItsTasksUnquiescedAndItsEndpointQuarantined(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    SoftFaults faults = SoftFaults.create();
    AtomicInteger posted = new AtomicInteger();
    Hooks hooks =
        new Hooks(
            faults,
            (qpNum, wrId, write) -> {
              faults.withholdCqe(qpNum, wrId);
              posted.incrementAndGet();
            });
    try (TransferEngine requester = FaultInjection.start(requesterConfig("eio"), hooks);
        EngineProcess source =
            EngineProcess.startAt("eio-source", logs, freePort(), RdmaPeerIT.RDMA_SOURCE)) {
      long data = 21;
      long guard = 22;
      WeakReference<MemorySegment> retained =
          runUntilUnquiesced(requester, source, faults, posted, data, guard);
      // Every handle this test held (batch, registered memory, segment, remote segment, results)
      // died with that call. A control segment of the same kind, held by nothing, is collected
      // within the same bounded loop, so a retained backing is the engine's doing, not the GC's.
      ReferenceQueue<MemorySegment> collected = new ReferenceQueue<>();
      WeakReference<MemorySegment> control =
          new WeakReference<>(Arena.ofAuto().allocate(REGION, 64), collected);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (!control.refersTo(null) && System.nanoTime() - deadline < 0) {
        System.gc();
        collected.remove(100); // a bounded wait for the collector's enqueue, not a sleep
      }
      assertTrue(control.refersTo(null), "the unretained control segment was collected");
      assertFalse(retained.refersTo(null), "in the same loop, the retained one was not");
      MemorySegment still = retained.get();
      assertNotNull(still, "the UNQUIESCED task's backing is still held by the engine");
      assertEquals(-1, Pattern.verify(still, 0, TASK, data, 0), "and holds the READ's bytes");
      assertEquals(-1, Pattern.verify(still, TASK, REGION - TASK, guard, TASK), "and the guards");
    }
  }

  /**
   * The destroy_qp EIO profile up to its UNQUIESCED end, on caller-owned memory from an automatic
   * arena (the kind that the GC frees once unreachable): the READ ran, its completion withheld, the
   * requester QP's destroy failing (sticky EIO) when the source is killed. The task is UNQUIESCED,
   * not drained, {@code free()} BATCH_BUSY, the endpoint quarantined, the loan kept, and the
   * unregister answers UNQUIESCED after the destruction window. Returns a weak reference to the
   * registration's own segment (which holds the arena's memory alive); every other handle ends
   * here.
   */
  private static WeakReference<MemorySegment> runUntilUnquiesced(
      TransferEngine requester,
      EngineProcess source,
      SoftFaults faults,
      AtomicInteger posted,
      long data,
      long guard)
      throws Exception {
    long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    source.call("FILL " + remote + " " + data);
    MemorySegment backing = Arena.ofAuto().allocate(REGION, 64);
    Pattern.fill(backing, 0, REGION, guard, 0);
    RegisteredMemory local = requester.register(backing, Access.READ_WRITE);
    RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
    Batch batch = requester.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(local, 0, peer, remote, 0, TASK)
                .withTransport(Transport.RDMA)
                .withDeadline(Duration.ofSeconds(3))));
    assertTrue(Await.until(Duration.ofSeconds(10), () -> posted.get() == 1), "posted");
    assertTrue(
        Await.until(Duration.ofSeconds(10), () -> Pattern.verify(backing, 0, TASK, data, 0) == -1),
        "the READ ran; only its completion is withheld");
    faults.failNextDestroy(SoftFaults.Kind.QP, 5, true);
    int qpDestroys = faults.destroyCalls(SoftFaults.Kind.QP);
    source.kill();
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    TaskResult read = s.tasks().getFirst();
    assertEquals(TaskState.UNQUIESCED, read.state(), read::toString);
    assertFalse(read.locallyDrained(), read::toString);
    assertEquals(0, read.bytes());
    TransferException busy = assertThrows(TransferException.class, batch::free);
    assertEquals(ErrorKind.BATCH_BUSY, busy.kind(), busy::getMessage);
    assertTrue(
        Await.until(
            Duration.ofSeconds(10),
            () ->
                requester.quarantined().stream()
                    .anyMatch(q -> q.owner().startsWith("RdmaEndpoint"))),
        () -> "the endpoint is quarantined: " + requester.quarantined());
    assertTrue(requester.owed().loans() > 0, "the task's local loan is kept");
    // Its slice never drained, so its rdma.maxDirectBytes share is never returned: the owner view,
    // refreshed every 200 ms, keeps showing it.
    assertFalse(
        Await.until(
            Duration.ofSeconds(2),
            () -> RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") != TASK),
        "the undrained slice keeps its direct bytes charged");
    assertEquals(
        qpDestroys + 1, faults.destroyCalls(SoftFaults.Kind.QP), "the QP's destroy, tried once");
    TransferException unquiesced =
        assertThrows(TransferException.class, () -> requester.unregister(local));
    assertEquals(ErrorKind.UNQUIESCED, unquiesced.kind(), unquiesced::getMessage);
    assertTrue(((Registration) local).loans() > 0, "still loaned");
    assertFalse(((Registration) local).released(), "not released");
    assertEquals(
        qpDestroys + 1, faults.destroyCalls(SoftFaults.Kind.QP), "and never destroyed again");
    return new WeakReference<>(((Registration) local).segment());
  }

  @Test
  void aPeerKilledWhileGrantsAreReservedBeforeAnyPayloadFailsTheTasksDrainedWithNoEffect(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    Hooks hooks =
        new Hooks(
            SoftFaults.create(),
            (qpNum, wrId, write) -> {
              if (calls.getAndIncrement() == 0) {
                held.countDown();
                try {
                  release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    try (TransferEngine requester = FaultInjection.start(requesterConfig("reserved"), hooks);
        EngineProcess source =
            EngineProcess.startAt("reserved-source", logs, freePort(), RdmaPeerIT.RDMA_SOURCE)) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      long guard = 7;
      source.call("FILL " + remote + " " + guard);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, guard + 1, 0);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(4);
      batch.submit(
          List.of(
              TransferRequest.write(local, 0, peer, remote, 0, TASK).withTransport(Transport.RDMA),
              TransferRequest.read(local, TASK, peer, remote, TASK, TASK)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(local, 2 * TASK, peer, remote, 2 * TASK, TASK)
                  .withTransport(Transport.RDMA),
              TransferRequest.read(local, 3 * TASK, peer, remote, 3 * TASK, TASK)
                  .withTransport(Transport.RDMA)));
      // The lane is held with the first slice granted (its window bound, its receive posted).
      assertTrue(held.await(10, TimeUnit.SECONDS), "a grant arrived");
      source.kill();
      var rdma = ((PeerSegment) peer).route(Transport.RDMA, remote).channel();
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> !rdma.gate().active()),
          "the requester saw its control link end");
      release.countDown();
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      for (TaskResult r : s.tasks()) {
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
      }
      assertEquals(
          -1, Pattern.verify(local.segment(), 0, REGION, guard + 1, 0), "nothing landed here");
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaEndpoint", "qps") == 0),
          "the endpoint and its QPs were reclaimed");
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "directBytes") == 0),
          "every failed slice returned its direct bytes at its drain");
      assertTrue(requester.quarantined().isEmpty(), requester.quarantined()::toString);
    }
  }

  @Test
  void aCopyInterruptedPartWayLeavesCopiedAndUntouchedBytesAndNothingOutsideTheRange() {
    SoftFaults faults = SoftFaults.create();
    AtomicInteger calls = new AtomicInteger();
    int landed = 10_000;
    Hooks hooks =
        new Hooks(
            faults,
            (qpNum, wrId, write) -> {
              if (calls.getAndIncrement() == 0) {
                faults.interruptCopy(qpNum, wrId, landed);
              }
            });
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("err-source"));
        TransferEngine requester = FaultInjection.start(requesterConfig("err"), hooks)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 3;
      long data = 4;
      Pattern.fill(remote.segment(), 0, REGION, guard, 0);
      Pattern.fill(local.segment(), 0, REGION, data, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      long at = 4096 + 5;
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.write(local, at, peer, remote.regionId(), at, TASK)
                  .withTransport(Transport.RDMA)));
      TaskResult w = batch.await(Duration.ofSeconds(30)).tasks().getFirst();
      batch.free();
      assertEquals(TaskState.FAILED, w.state(), w::toString);
      assertEquals(RemoteEffect.UNKNOWN, w.remoteEffect(), w::toString);
      assertEquals(0, w.bytes());
      assertTrue(w.locallyDrained());
      // Exactly its first bytes landed; the rest of its range and everything around is untouched.
      for (long p = 0; p < REGION; p++) {
        byte expected = p >= at && p < at + landed ? Pattern.at(data, p) : Pattern.at(guard, p);
        byte b = remote.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
        if (b != expected) {
          throw new AssertionError("source byte " + p + ": " + b + ", expected " + expected);
        }
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, data, 0), "requester untouched");
      // The QP was retired alone and is made again on demand: the next WRITE lands in full.
      Batch again = requester.allocateBatch(1);
      again.submit(
          List.of(
              TransferRequest.write(local, at, peer, remote.regionId(), at, TASK)
                  .withTransport(Transport.RDMA)));
      TaskResult second = again.await(Duration.ofSeconds(30)).tasks().getFirst();
      again.free();
      assertEquals(TaskState.COMPLETED, second.state(), second::toString);
      assertEquals(-1, Pattern.verify(remote.segment(), at, TASK, data, at), "the retry landed");
    }
  }

  /**
   * A lane whose CQ can no longer be polled (every {@code ibv_poll_cq} of it answers {@code -EIO}
   * from the first payload post on): the lane is faulted, nothing more is posted on it, its QPs go
   * to ERR and are destroyed at once (the destroy, not a completion that can no longer be read, is
   * the native proof that their WRs are done), so its tasks fail drained, UNAVAILABLE, with no
   * effect and not against the rail pair; the tasks on the other lane complete with their bytes,
   * the next batch completes on it, the faulted lane is reclaimed (its CQ destroyed, a fresh lane
   * made) only after that, and a new endpoint's QPs on both lanes, the fresh one included, move
   * verified bytes. The owner view and the metrics figure say so.
   */
  @Test
  void aCqThatCannotBePolledFaultsItsLaneWhichIsReclaimedAfterNativeDrainWhileTheOtherCarriesOn() {
    SoftFaults faults = SoftFaults.create();
    AtomicInteger faultedQp = new AtomicInteger();
    java.util.Set<Integer> postedOn = java.util.concurrent.ConcurrentHashMap.newKeySet();
    Hooks hooks =
        new Hooks(
            faults,
            (qpNum, wrId, write) -> {
              postedOn.add(qpNum);
              if (faultedQp.compareAndSet(0, qpNum)) {
                faults.failPoll(qpNum, 5);
              }
            });
    EngineConfig c = RdmaTransferIT.rdmaConfig("poll");
    // Eight READs of their own, spread over the two lanes (merged, they would be one transfer on
    // one lane).
    EngineConfig config =
        c.withRdma(c.rdma().withSoftwareDevices(1).withLanes(2))
            .withMerge(c.merge().withEnabled(false));
    int n = 8;
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("poll-source"));
        TransferEngine other = TransferEngine.start(RdmaTransferIT.rdmaConfig("poll-other"));
        TransferEngine requester = FaultInjection.start(config, hooks)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 51;
      long guard = 52;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      int cqDestroys = faults.destroyCalls(SoftFaults.Kind.CQ);

      BatchStatus first = reads(requester, local, peer, remote.regionId(), 0, n);
      int completed = 0;
      int failed = 0;
      for (int i = 0; i < n; i++) {
        TaskResult r = first.tasks().get(i);
        long at = i * TASK;
        if (r.state() == TaskState.COMPLETED) {
          completed++;
          assertEquals(TASK, r.bytes(), r::toString);
          assertEquals(-1, Pattern.verify(local.segment(), at, TASK, data, at), r::toString);
        } else {
          failed++;
          assertEquals(TaskState.FAILED, r.state(), r::toString);
          assertEquals(ErrorKind.UNAVAILABLE, r.errorKind(), r::toString);
          assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
          assertEquals(0, r.bytes(), r::toString);
          assertTrue(r.locallyDrained(), r::toString);
          // A READ whose payload ran before its QP was destroyed may have landed, nowhere else.
          for (long p = at; p < at + TASK; p++) {
            byte b = local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
            if (b != Pattern.at(guard, p) && b != Pattern.at(data, p)) {
              throw new AssertionError("byte " + p + " of a failed READ is neither guard nor data");
            }
          }
        }
      }
      assertTrue(failed >= 1, () -> "the faulted lane's tasks failed: " + first);
      assertTrue(completed >= 1, () -> "the other lane's tasks completed: " + first);
      assertTrue(
          first.tasks().stream()
              .filter(r -> r.state() == TaskState.FAILED)
              .allMatch(r -> r.detail().contains("ibv_poll_cq on soft0 failed: errno 5")),
          () -> "each failure names the lane's fault: " + first);
      assertEquals(
          -1,
          Pattern.verify(local.segment(), n * TASK, REGION - n * TASK, guard, n * TASK),
          "nothing outside the READs' ranges changed");

      // The rail pair stayed closed: the next batch completes whole, on the live lane.
      BatchStatus second = reads(requester, local, peer, remote.regionId(), n, n);
      assertTrue(second.allCompleted(), second::toString);
      assertEquals(
          -1,
          Pattern.verify(local.segment(), n * TASK, n * TASK, data, n * TASK),
          "the second batch's bytes");

      assertTrue(
          Await.until(
              Duration.ofSeconds(15),
              () -> RdmaPeerIT.charge(requester, "RdmaContext", "lanesReplaced") == 1),
          () -> "the faulted lane is replaced: " + requester.ownerView());
      assertEquals(1, RdmaPeerIT.charge(requester, "RdmaContext", "lanesFaulted"));
      // The lane's owner actor (one per index, kept across the replacement) polls the fresh lane.
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  requester.ownerView().owners().stream()
                          .filter(o -> o.kind().equals("CqLane"))
                          .filter(o -> o.charges().get("replaced") == 1)
                          .filter(o -> o.charges().get("faults") == 1)
                          .filter(o -> o.state() == OwnerState.ACTIVE)
                          .filter(o -> o.path().matches(".*/context-soft0/lane-[01]"))
                          .count()
                      == 1),
          () ->
              "one CqLane owner replaced its lane and polls the fresh one: "
                  + requester.ownerView());
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  requester.ownerView().owners().stream()
                      .anyMatch(
                          o ->
                              o.kind().equals("RdmaContext")
                                  && o.detail().contains("1 faulted lane(s) replaced"))),
          () -> "the context's detail says so: " + requester.ownerView());
      assertEquals(0, RdmaPeerIT.charge(requester, "RdmaContext", "lanesKept"));
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "lanesFaulted") == 1),
          "the transport's figure (the rdma_lanes_faulted metric) counts it");
      assertEquals(
          cqDestroys + 1, faults.destroyCalls(SoftFaults.Kind.CQ), "its CQ was destroyed, once");
      assertTrue(requester.quarantined().isEmpty(), requester.quarantined()::toString);

      // A new endpoint makes one QP on each lane, the fresh one included: both carry bytes.
      RegisteredMemory otherRemote = other.allocate(REGION, Access.READ_WRITE);
      long otherData = 53;
      Pattern.fill(otherRemote.segment(), 0, REGION, otherData, 0);
      RemoteSegment otherPeer =
          requester.openSegment(other.localSegment().endpoint(), Duration.ofSeconds(20));
      postedOn.clear();
      BatchStatus third = reads(requester, local, otherPeer, otherRemote.regionId(), 0, n);
      assertTrue(third.allCompleted(), third::toString);
      assertEquals(2, postedOn.size(), () -> "both lanes' QPs posted: " + postedOn);
      assertEquals(-1, Pattern.verify(local.segment(), 0, n * TASK, otherData, 0), "third batch");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 2 * n * TASK, REGION - 2 * n * TASK, guard, 2 * n * TASK),
          "the rest untouched");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "sources untouched");
      assertEquals(-1, Pattern.verify(otherRemote.segment(), 0, REGION, otherData, 0));
      // The reclaimed lane owes nothing at close: no endpoint, context or lane is kept.
      requester.close(Duration.ofSeconds(30));
      assertTrue(requester.quarantined().isEmpty(), requester.quarantined()::toString);
      assertEquals(cqDestroys + 3, faults.destroyCalls(SoftFaults.Kind.CQ), "no CQ twice");
    }
  }

  /** {@code count} READs of {@code TASK} bytes from task {@code from} on, over RDMA, awaited. */
  private static BatchStatus reads(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      long regionId,
      int from,
      int count) {
    List<TransferRequest> reads = new java.util.ArrayList<>();
    for (int i = from; i < from + count; i++) {
      reads.add(
          TransferRequest.read(local, i * TASK, peer, regionId, i * TASK, TASK)
              .withTransport(Transport.RDMA));
    }
    Batch batch = requester.allocateBatch(count);
    batch.submit(reads);
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    return s;
  }
}
