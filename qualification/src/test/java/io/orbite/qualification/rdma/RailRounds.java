package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Rounds of 16 tasks of 256 KiB (four slices each) over RDMA between two engines, and their byte
 * checks: the rail tests' common traffic ({@code RdmaRailHealthIT}, {@code RdmaRouteRecoveryIT}).
 */
final class RailRounds {
  static final long TASK = 256 * 1024;
  static final int TASKS = 16;
  static final long STRIDE = TASK + 4096 + 7;
  static final long REGION = STRIDE * TASKS + 8192;

  private final TransferEngine requester;
  private final RegisteredMemory local;
  private final RegisteredMemory remote;
  private final RemoteSegment peer;
  private long lastGuard;
  private long lastData;

  RailRounds(
      TransferEngine requester,
      RegisteredMemory local,
      RegisteredMemory remote,
      RemoteSegment peer) {
    this.requester = requester;
    this.local = local;
    this.remote = remote;
    this.peer = peer;
  }

  BatchStatus round(Op op, long seed) {
    lastGuard = seed * 2;
    lastData = seed * 2 + 1;
    RegisteredMemory dst = op == Op.READ ? local : remote;
    RegisteredMemory src = op == Op.READ ? remote : local;
    Pattern.fill(dst.segment(), 0, REGION, lastGuard, 0);
    Pattern.fill(src.segment(), 0, REGION, lastData, 0);
    List<TransferRequest> requests = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      long at = 1 + i * STRIDE;
      requests.add(
          (op == Op.READ
                  ? TransferRequest.read(local, at, peer, remote.regionId(), at, TASK)
                  : TransferRequest.write(local, at, peer, remote.regionId(), at, TASK))
              .withTransport(Transport.RDMA));
    }
    Batch batch = requester.allocateBatch(TASKS);
    batch.submit(requests);
    BatchStatus s = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertFailuresAreClean(s, op);
    return s;
  }

  /** A failed task moved nothing, drained, and (READ) changed nothing remotely. */
  void assertFailuresAreClean(BatchStatus s, Op op) {
    for (TaskResult r : s.tasks()) {
      if (r.errorKind() != null) {
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
        if (op == Op.READ) {
          assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        }
      }
    }
  }

  long failures(BatchStatus s) {
    return s.tasks().stream().filter(r -> r.errorKind() != null).count();
  }

  /** The last round completed every task: its destination holds them and its guards. */
  void checkLast(Op op) {
    RegisteredMemory dst = op == Op.READ ? local : remote;
    RegisteredMemory src = op == Op.READ ? remote : local;
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      long at = 1 + i * STRIDE;
      spans.add(new Span(at, TASK, lastData, at));
    }
    assertEquals(
        -1, RegionCheck.check(dst.segment(), spans, lastGuard), op + ": destination region");
    assertEquals(
        -1, Pattern.verify(src.segment(), 0, REGION, lastData, 0), op + ": source untouched");
  }
}
