package io.orbite.qualification.contract.suite;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.adversary.Bytes;
import io.orbite.qualification.contract.EnginePair;
import io.orbite.qualification.contract.HeldWorker;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The checks of {@link CrossTransportSuite} against a source engine in a child process, and those
 * only a peer has: unregister (C1), a restart (C3), a SIGKILLed peer (C5, C6, C11, C18) and cancel.
 * The shared source serves the non-destructive checks; a restart or a death gets a source process
 * of its own.
 *
 * <p>A check that needs work to wait at a known point holds the requester's worker of this
 * transport in a fault hook ({@link HeldWorker}, the one fault hook of the suite, see {@link
 * #startRequester}). The requester has one lane, so the held worker is the only one.
 */
abstract class PeerTransportSuite extends CrossTransportSuite {
  /** Bytes of each region of the shared source. */
  private static final long SOURCE_BYTES = LOCAL_BYTES;

  /** C5's tasks: READs and WRITEs of this size, enough to keep lanes and socket buffers busy. */
  private static final long DEATH_TASK = 2L << 20;

  private static final int DEATH_TASKS = 16;

  /** The pilot READ that a hold catches, and cancel's tasks (above SHM's caller-copy size). */
  private static final long PILOT = 1L << 20;

  private static final long CANCEL_TASK = (100L << 10) + 3;

  /** The environment of every source process: its ORBITE_CONF for this transport. */
  private final Map<String, String> sourceEnv;

  /** Holds this transport's requester worker where it is about to move a task's bytes. */
  final HeldWorker hold;

  EngineProcess source;
  RemoteSegment peer;
  private Far doomed;

  /**
   * The source processes that C3 restarts and C5 kills, started with the shared one so that their
   * start-up overlaps the other checks (a child JVM takes seconds to start on two cores).
   */
  private CompletableFuture<EngineProcess> toRestart;

  private CompletableFuture<EngineProcess> toKill;

  PeerTransportSuite(Transport transport, Map<String, String> sourceEnv, HeldWorker hold) {
    super(transport);
    this.sourceEnv = sourceEnv;
    this.hold = hold;
  }

  /**
   * Whether C5 stalls work by holding the requester's worker rather than stopping the source: a
   * stopped (SIGSTOP) source answers nothing, which keeps TCP and RDMA work in flight, but an SHM
   * copy needs no answer from its peer.
   */
  boolean stallsByHold() {
    return false;
  }

  @Override
  final TransferEngine start() throws Exception {
    String name = getClass().getSimpleName();
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    // At a port of its own, which its replacement takes.
    toRestart =
        inBackground(() -> EngineProcess.startAt(name + "-restarted", dir, port, sourceEnv));
    toKill = inBackground(() -> EngineProcess.start(name + "-victim", dir, sourceEnv));
    source = EngineProcess.start(name + "-source", dir, sourceEnv);
    long dataId = alloc(source, SOURCE_BYTES, Access.READ_WRITE);
    long readOnlyId = alloc(source, 64L << 10, Access.READ);
    long writeOnlyId = alloc(source, 64L << 10, Access.WRITE);
    long doomedId = alloc(source, 1L << 20, Access.READ_WRITE);
    TransferEngine engine = startRequester(config(name + "-requester"));
    peer = engine.openSegment(source.endpoint(), WAIT);
    data = new Far.OfProcess(source, dataId, SOURCE_BYTES, peer);
    readOnly = new Far.OfProcess(source, readOnlyId, 64L << 10, peer);
    writeOnly = new Far.OfProcess(source, writeOnlyId, 64L << 10, peer);
    doomed = new Far.OfProcess(source, doomedId, 1L << 20, peer);
    return engine;
  }

  /**
   * The one use of a fault hook in the suite: the shared requester starts with {@link #hold}, which
   * does nothing until a check arms it.
   */
  private TransferEngine startRequester(EngineConfig config) {
    return FaultInjection.start(config, hold);
  }

  @Override
  final void stop() {
    try {
      killOnceStarted(toRestart);
      killOnceStarted(toKill);
    } finally {
      if (source != null) {
        source.close();
      }
    }
  }

  /** Kills the process {@code p} starts (again, if its check killed it), once it has started. */
  private static void killOnceStarted(CompletableFuture<EngineProcess> p) {
    if (p != null) {
      p.thenAccept(EngineProcess::kill).exceptionally(e -> null).join();
    }
  }

  /** Starts a source process on a thread of its own. */
  private static CompletableFuture<EngineProcess> inBackground(Callable<EngineProcess> start) {
    CompletableFuture<EngineProcess> f = new CompletableFuture<>();
    Thread.ofVirtual()
        .start(
            () -> {
              try {
                f.complete(start.call());
              } catch (Exception | Error e) {
                f.completeExceptionally(e);
              }
            });
    return f;
  }

  /** The process {@code p} started, once it is ready. */
  private static EngineProcess ready(CompletableFuture<EngineProcess> p) throws Exception {
    try {
      return p.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  @Override
  final RemoteSegment reachData(TransferEngine other) {
    return other.openSegment(source.endpoint(), WAIT);
  }

  private static long alloc(EngineProcess p, long bytes, Access access) throws IOException {
    return Long.parseLong(p.call("ALLOC " + bytes + " " + access));
  }

  @Test
  @DisplayName(
      "C1: once the source unregisters a region, a READ and a WRITE of it fail PERMISSION_DENIED"
          + " with 0 bytes, no effect, drained, and the requester's region untouched")
  void c1ARegionTheSourceUnregisteredIsRefusedPermissionDenied() throws Exception {
    Fill f = fill(doomed);
    // A READ first, so that whatever this transport prepares for the region (a mapping, a grant)
    // exists when the region goes.
    readExactly(doomed, f, 1, 2, 300_000, "the READ before the unregister");

    source.call("UNREGISTER " + doomed.regionId());
    Pattern.fill(local.segment(), 0, LOCAL_BYTES, f.guard(), 0);
    assertAll(
        () ->
            assertRefused(
                requester,
                List.of(request(Op.READ, local, 1, doomed, 2, 300_000)),
                ErrorKind.PERMISSION_DENIED,
                "READ of an unregistered region"),
        () ->
            assertRefused(
                requester,
                List.of(request(Op.WRITE, local, 400_000, doomed, 2, 300_000)),
                ErrorKind.PERMISSION_DENIED,
                "WRITE into an unregistered region"));
    EnginePair.assertRegion(local.segment(), List.of(), f.guard(), "the requester's region");
  }

  @Test
  @DisplayName(
      "C3: a source restarted at its endpoint: after a fresh open the old segment's READ and"
          + " WRITE fail EPOCH_MISMATCH with 0 bytes, no effect, drained, nothing landed; the"
          + " fresh segment moves exact bytes")
  void c3ARestartedSourceFencesTheOldSegmentAndAFreshOpenWorks() throws Exception {
    EngineProcess first = ready(toRestart);
    EngineProcess second = null;
    try {
      long oldRegion = alloc(first, SOURCE_BYTES, Access.READ_WRITE);
      RemoteSegment old = requester.openSegment(first.endpoint(), WAIT);
      Far before = new Far.OfProcess(first, oldRegion, SOURCE_BYTES, old);
      readExactly(before, fill(before), 3, 5, PILOT, "the READ before the restart");

      first.kill();
      second = first.restart();
      assertNotEquals(first.epoch(), second.epoch(), "a fresh epoch");
      long newRegion = alloc(second, SOURCE_BYTES, Access.READ_WRITE);
      RemoteSegment fresh = requester.openSegment(second.endpoint(), WAIT);
      assertEquals(second.epoch(), fresh.descriptor().epoch());
      Far after = new Far.OfProcess(second, newRegion, SOURCE_BYTES, fresh);
      Fill f = fill(after);
      assertAll(
          () ->
              assertRefused(
                  requester,
                  List.of(request(Op.READ, local, 3, before, 5, PILOT)),
                  ErrorKind.EPOCH_MISMATCH,
                  "READ through the old segment"),
          () ->
              assertRefused(
                  requester,
                  List.of(request(Op.WRITE, local, 3, before, 5, PILOT)),
                  ErrorKind.EPOCH_MISMATCH,
                  "WRITE through the old segment"));
      EnginePair.assertRegion(local.segment(), List.of(), f.guard(), "after the stale submissions");
      after.assertHolds(List.of(), f.payload(), "the replacement after the stale submissions");

      readExactly(after, f, 7, 11, PILOT, "the READ through the fresh segment");
      List<TransferRequest> write =
          List.of(request(Op.WRITE, local, 7, after, 2 * PILOT + 1, PILOT));
      assertCompleted(run(requester, write), write);
      after.assertHolds(
          List.of(new Span(2 * PILOT + 1, PILOT, f.payload(), 11)),
          f.payload(),
          "the WRITE through the fresh segment");
    } finally {
      first.kill();
      if (second != null) {
        second.kill();
      }
    }
  }

  @Test
  @DisplayName(
      "C5, C6, C11, C18: a source SIGKILLed with READs and WRITEs in flight, not restarted: every"
          + " one FAILED PEER_LOST, 0 bytes, drained, a READ no effect, a WRITE never APPLIED;"
          + " no guard changed; the next submission on the segment fails PEER_LOST too")
  void c5c6c11c18ASourceKilledWithWorkInFlightFailsItPeerLost() throws Exception {
    long half = DEATH_TASKS * (DEATH_TASK + 4096);
    EngineProcess victim = ready(toKill);
    try {
      long remote = alloc(victim, 2 * half, Access.READ_WRITE);
      RemoteSegment segment = requester.openSegment(victim.endpoint(), WAIT);
      Far far = new Far.OfProcess(victim, remote, 2 * half, segment);
      Fill f = fill(far);
      // READs land in the first half of a region of their own; WRITEs are sent from the second.
      RegisteredMemory mine = requester.allocate(2 * half, Access.READ_WRITE);
      long writeSeed = seed();
      Pattern.fill(mine.segment(), 0, half, f.guard(), 0);
      Pattern.fill(mine.segment(), half, half, writeSeed, half);
      List<TransferRequest> reads = new ArrayList<>();
      List<TransferRequest> writes = new ArrayList<>();
      for (int i = 0; i < DEATH_TASKS; i++) {
        long at = 1 + i * (DEATH_TASK + 4096);
        reads.add(request(Op.READ, mine, at, far, at + 2, DEATH_TASK));
        writes.add(request(Op.WRITE, mine, half + at, far, half + at, DEATH_TASK));
      }

      // The pilot, into the shared region, is what a hold catches; otherwise it shows bytes
      // flowing before the source is stopped.
      List<TransferRequest> pilotRead = List.of(request(Op.READ, local, 1, far, 3, PILOT));
      Batch pilot = requester.allocateBatch(1);
      Batch readBatch = requester.allocateBatch(DEATH_TASKS);
      Batch writeBatch = requester.allocateBatch(DEATH_TASKS);
      try {
        if (stallsByHold()) {
          hold.arm();
        }
        pilot.submit(pilotRead);
        if (stallsByHold()) {
          hold.awaitHeld(WAIT);
        } else {
          assertCompleted(pilot.await(WAIT), pilotRead);
          victim.stop();
        }
        readBatch.submit(reads);
        writeBatch.submit(writes);
        victim.kill();
      } finally {
        hold.release();
      }
      BatchStatus pilotStatus = pilot.await(WAIT);
      BatchStatus readStatus = readBatch.await(WAIT);
      BatchStatus writeStatus = writeBatch.await(WAIT);
      assertTrue(
          pilotStatus.done() && readStatus.done() && writeStatus.done(),
          () -> "every task ended: " + pilotStatus + " " + readStatus + " " + writeStatus);
      TaskResult p = pilotStatus.tasks().getFirst();
      if (p.completed()) {
        EnginePair.assertRegion(
            local.segment(), List.of(new Span(1, PILOT, f.payload(), 3)), f.guard(), "the pilot");
      } else {
        assertPeerLost(p, Op.READ, pilotStatus);
      }

      List<TaskResult> writesBefore = writeStatus.tasks();
      assertAll(
          () -> readStatus.tasks().forEach(t -> assertPeerLost(t, Op.READ, readStatus)),
          () -> writeStatus.tasks().forEach(t -> assertPeerLost(t, Op.WRITE, writeStatus)),
          () ->
              assertRefused(
                  requester,
                  List.of(
                      request(Op.READ, mine, 1, far, 2, 4096),
                      request(Op.WRITE, mine, half + 1, far, half + 1, 4096)),
                  ErrorKind.PEER_LOST,
                  "a submission on the dead peer's segment"),
          () -> {
            // Each READ range holds its guard or the dead source's bytes, every other byte of
            // the READ half its guard; the WRITE half is what it was. After the new submission
            // too.
            for (TransferRequest r : reads) {
              Bytes.assertEachByteIsOneOf(
                  mine.segment(),
                  r.localOffset(),
                  r.lengthBytes(),
                  f.guard(),
                  r.localOffset(),
                  f.payload(),
                  r.remoteOffset(),
                  "failed READ " + reads.indexOf(r));
              Pattern.fill(
                  mine.segment(), r.localOffset(), r.lengthBytes(), f.guard(), r.localOffset());
            }
            EnginePair.assertRegion(
                mine.segment().asSlice(0, half), List.of(), f.guard(), "the READ half's guards");
            assertEquals(
                -1,
                Pattern.verify(mine.segment(), half, half, writeSeed, half),
                "the WRITE half is untouched");
          },
          () ->
              assertEquals(
                  writesBefore,
                  writeBatch.status().tasks(),
                  "a failed WRITE's result stays as reported: never replayed into APPLIED"),
          this::theSurvivorStillReadsFromTheSharedSource);
      pilot.free();
      readBatch.free();
      writeBatch.free();
    } finally {
      victim.kill();
    }
  }

  /** C11: after a peer's death the requester, its registrations and its other peers carry on. */
  private void theSurvivorStillReadsFromTheSharedSource() throws IOException {
    readExactly(data, fill(data), 9, 13, PILOT, "the survivor's READ from its other peer");
  }

  /**
   * {@code t}, a task of {@code batch}, failed because its peer died: PEER_LOST after drain, 0
   * bytes; a READ changed nothing at the peer, and a WRITE is never APPLIED (UNKNOWN once it may
   * have reached the peer).
   */
  private void assertPeerLost(TaskResult t, Op op, BatchStatus batch) {
    Supplier<String> what = () -> op + ": " + t + "; the batch's tasks ended " + outcomes(batch);
    assertEquals(TaskState.FAILED, t.state(), what);
    assertEquals(ErrorKind.PEER_LOST, t.errorKind(), what);
    assertEquals(0, t.bytes(), what);
    assertTrue(t.locallyDrained(), what);
    if (op == Op.READ) {
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), what);
    } else {
      assertNotEquals(RemoteEffect.APPLIED, t.remoteEffect(), what);
    }
    assertEquals(transport, t.transport(), what);
  }

  /** How many tasks of {@code s} ended in each state, kind and effect: for failure messages. */
  private static Map<String, Long> outcomes(BatchStatus s) {
    return s.tasks().stream()
        .collect(
            Collectors.groupingBy(
                t -> t.state() + " " + t.errorKind() + " " + t.remoteEffect(),
                TreeMap::new,
                Collectors.counting()));
  }

  @Test
  @DisplayName(
      "C5: Batch.cancel() while the batch's tasks wait behind a held worker: every one ends"
          + " CANCELLED with 0 bytes, no effect, drained, and neither side changes")
  void c5CancelledTasksThatWereNeverSentEndCancelledAndMoveNothing() throws Exception {
    Fill f = fill(data);
    List<TransferRequest> pilotRead = List.of(request(Op.READ, local, 1, data, 3, PILOT));
    // READs into the requester's region after the pilot's range, WRITEs into the far region
    // after the range the READs come from.
    List<TransferRequest> tasks = new ArrayList<>();
    long stride = CANCEL_TASK + 4096;
    for (int i = 0; i < 8; i++) {
      long at = PILOT + 4096 + i * stride;
      tasks.add(request(Op.READ, local, at, data, at + 5, CANCEL_TASK));
      tasks.add(request(Op.WRITE, local, at, data, 2 * PILOT + i * stride, CANCEL_TASK));
    }
    Batch pilot = requester.allocateBatch(1);
    Batch cancelled = requester.allocateBatch(tasks.size());
    try {
      hold.arm();
      pilot.submit(pilotRead);
      hold.awaitHeld(WAIT);
      cancelled.submit(tasks);
      cancelled.cancel();
    } finally {
      hold.release();
    }
    assertCompleted(pilot.await(WAIT), pilotRead);
    BatchStatus s = cancelled.await(WAIT);
    assertTrue(s.done(), s::toString);
    for (TaskResult t : s.tasks()) {
      assertEquals(TaskState.FAILED, t.state(), t::toString);
      assertEquals(ErrorKind.CANCELLED, t.errorKind(), t::toString);
      assertEquals(0, t.bytes(), t::toString);
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
      assertTrue(t.locallyDrained(), t::toString);
    }
    EnginePair.assertRegion(
        local.segment(),
        List.of(new Span(1, PILOT, f.payload(), 3)),
        f.guard(),
        "the pilot landed; no cancelled READ did");
    data.assertHolds(List.of(), f.payload(), "no cancelled WRITE landed");
    pilot.free();
    cancelled.free();
  }
}
