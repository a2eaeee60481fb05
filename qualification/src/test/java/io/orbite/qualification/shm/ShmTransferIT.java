package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * READ and WRITE over SHM between this JVM (the requester) and a source engine process on the same
 * host that exports its allocations (C4, C12): after every batch both regions are checked in full,
 * payload and guard bytes. Transport selection is proven by the per-transport counters: UNSPEC goes
 * through SHM to engine-allocated memory of a same-host peer and through TCP to caller-owned
 * memory; an explicit SHM request that SHM cannot serve is refused UNAVAILABLE before anything is
 * charged.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ShmTransferIT {
  /** Static: a PER_CLASS instance field is injected only after {@code @BeforeAll} needs it. */
  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  static Path logs;

  private static final long REGION = 32L << 20;
  private EngineProcess source;
  private TransferEngine requester;
  private long remote;
  private long extern;
  private RegisteredMemory local;
  private RemoteSegment peer;
  private final Random random = new Random(4242);

  @BeforeAll
  void start() throws Exception {
    source = EngineProcess.start("shm-source", logs, ShmPeer.SHM_SOURCE);
    remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    extern = Long.parseLong(source.call("EXTERN " + REGION + " READ_WRITE"));
    requester = TransferEngine.start(EngineConfig.defaults().withName("shm-requester"));
    local = requester.allocate(REGION, Access.READ_WRITE);
    peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
  }

  @AfterAll
  void stop() {
    try {
      if (requester != null) {
        requester.close(Duration.ofSeconds(20));
      }
    } finally {
      if (source != null) {
        source.close();
      }
    }
  }

  private record Task(long localOffset, long remoteOffset, long length) {}

  private static final List<Task> MIXED =
      List.of(
          new Task(4093, 7, 4096 + 5),
          new Task(9_000, 9_001, 1),
          new Task(100_003, 65_537, (1L << 20) + 13),
          new Task(2_000_001, 3_000_017, 10L << 20),
          new Task(20_000_000, 19_999_999, 65_536));

  @Test
  void shmReadsOfMixedSizesAtUnalignedOffsetsMoveExactlyTheirBytes() throws Exception {
    runAndCheck(Op.READ, Transport.SHM, remote, MIXED, Transport.SHM);
  }

  @Test
  void shmWritesOfMixedSizesAtUnalignedOffsetsMoveExactlyTheirBytes() throws Exception {
    runAndCheck(Op.WRITE, Transport.SHM, remote, MIXED, Transport.SHM);
  }

  @Test
  void unspecPicksShmForASameHostPeerAndTheSourceServesNothingOverTcp() throws Exception {
    assertTrue(peer.sharedReachable(remote), () -> "SHM reachable: " + peer);
    Map<String, Long> before = ShmPeer.counters(source);
    long readBefore = requester.counters().shmBytesRead();
    long writtenBefore = requester.counters().shmBytesWritten();
    runAndCheck(Op.READ, Transport.UNSPEC, remote, MIXED, Transport.SHM);
    runAndCheck(Op.WRITE, Transport.UNSPEC, remote, MIXED, Transport.SHM);
    long total = MIXED.stream().mapToLong(Task::length).sum();
    assertEquals(
        total, requester.counters().shmBytesRead() - readBefore, "READ bytes copied through SHM");
    assertEquals(
        total,
        requester.counters().shmBytesWritten() - writtenBefore,
        "WRITE bytes copied through SHM");
    Map<String, Long> after = ShmPeer.counters(source);
    assertEquals(
        before.get("sourceBytesRead"),
        after.get("sourceBytesRead"),
        "the source's TCP lanes served no READ");
    assertEquals(
        before.get("sourceBytesWritten"), after.get("sourceBytesWritten"), "nor any WRITE");
  }

  @Test
  void callerOwnedMemoryOfTheSourceIsReachedOverTcpAndRefusedToExplicitShm() throws Exception {
    assertTrue(!peer.sharedReachable(extern), "caller-owned memory is never exported");
    runAndCheck(Op.READ, Transport.UNSPEC, extern, MIXED.subList(0, 3), Transport.TCP);
    runAndCheck(Op.WRITE, Transport.UNSPEC, extern, MIXED.subList(0, 3), Transport.TCP);
    refusedBeforeAnyByteMoves(peer, extern, "not exported through SHM");
  }

  @Test
  void explicitShmToAPeerThatExportsNothingFailsUnavailableBeforeAnyByteMoves() {
    try (TransferEngine plain =
        TransferEngine.start(EngineConfig.defaults().withName("plain-source"))) {
      RegisteredMemory theirs = plain.allocate(1 << 20, Access.READ_WRITE);
      RemoteSegment plainPeer =
          requester.openSegment(plain.localSegment().endpoint(), Duration.ofSeconds(10));
      assertEquals(
          "the peer exports no memory through SHM",
          plainPeer.unreachableBecause(Transport.SHM, theirs.regionId()),
          "a source without shm.enabled publishes no SHM part");
      refusedBeforeAnyByteMoves(plainPeer, theirs.regionId(), "exports no memory through SHM");
    }
  }

  /**
   * An explicit SHM READ and WRITE are refused at submit: UNAVAILABLE, nothing charged, local bytes
   * untouched.
   */
  private void refusedBeforeAnyByteMoves(RemoteSegment target, long regionId, String why) {
    long guard = random.nextLong();
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    long shmBefore = requester.counters().tasksDispatched(Transport.SHM);
    for (Op op : Op.values()) {
      TransferRequest r =
          (op == Op.READ
                  ? TransferRequest.read(local, 0, target, regionId, 0, 4096)
                  : TransferRequest.write(local, 0, target, regionId, 0, 4096))
              .withTransport(Transport.SHM);
      Batch batch = requester.allocateBatch(1);
      TransferException e = assertThrows(TransferException.class, () -> batch.submit(List.of(r)));
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e.getMessage());
      assertTrue(e.getMessage().contains(why), e.getMessage());
      assertTrue(e.getMessage().contains("transport SHM"), e.getMessage());
      batch.free();
    }
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "local region untouched");
    assertEquals(
        shmBefore, requester.counters().tasksDispatched(Transport.SHM), "nothing dispatched");
    assertEquals(0, requester.owed().tasksInFlight(), "nothing charged");
  }

  /**
   * Runs {@code tasks} as one batch over {@code transport} and checks both regions in full, and
   * that every task was dispatched to {@code expected}.
   */
  private void runAndCheck(
      Op op, Transport transport, long remoteRegion, List<Task> tasks, Transport expected)
      throws Exception {
    long srcSeed = random.nextLong();
    long dstGuard = random.nextLong();
    if (op == Op.READ) {
      source.call("FILL " + remoteRegion + " " + srcSeed);
      Pattern.fill(local.segment(), 0, REGION, dstGuard, 0);
    } else {
      source.call("FILL " + remoteRegion + " " + dstGuard);
      Pattern.fill(local.segment(), 0, REGION, srcSeed, 0);
    }
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (Task t : tasks) {
      TransferRequest r =
          op == Op.READ
              ? TransferRequest.read(
                  local, t.localOffset(), peer, remoteRegion, t.remoteOffset(), t.length())
              : TransferRequest.write(
                  local, t.localOffset(), peer, remoteRegion, t.remoteOffset(), t.length());
      requests.add(r.withTransport(transport));
      spans.add(
          op == Op.READ
              ? new Span(t.localOffset(), t.length(), srcSeed, t.remoteOffset())
              : new Span(t.remoteOffset(), t.length(), srcSeed, t.localOffset()));
    }
    long expectedBefore = requester.counters().tasksDispatched(expected);
    Transport other = expected == Transport.SHM ? Transport.TCP : Transport.SHM;
    long otherBefore = requester.counters().tasksDispatched(other);
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus status = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(status.done(), "batch drained");
    for (TaskResult r : status.tasks()) {
      assertTrue(r.completed(), () -> "task " + r);
      assertEquals(
          tasks.get(r.index()).length(), r.bytes(), "confirmed bytes of task " + r.index());
      assertEquals(op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
    }
    assertEquals(
        tasks.size(),
        requester.counters().tasksDispatched(expected) - expectedBefore,
        "every task went through " + expected);
    assertEquals(
        otherBefore, requester.counters().tasksDispatched(other), "no task went through " + other);
    if (op == Op.READ) {
      assertEquals(
          -1,
          RegionCheck.check(local.segment(), spans, dstGuard),
          "READ: local payload and guards");
      ShmPeer.assertRemoteRegion(
          source, remoteRegion, srcSeed, List.of(), "READ: source region untouched");
    } else {
      ShmPeer.assertRemoteRegion(
          source, remoteRegion, dstGuard, spans, "WRITE: remote payload and guards");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, REGION, srcSeed, 0),
          "WRITE: local region untouched");
    }
  }
}
