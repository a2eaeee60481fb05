package io.orbite.qualification.contract.suite;

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
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.contract.EnginePair;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contract checks every transport passes the same way, file included, through the public API
 * only: one subclass per transport names it on every request ({@link
 * TransferRequest#withTransport}) and supplies the far regions. Each check names its contracts in
 * its display name (docs/contracts.md, "The cross-transport suite"), checks every byte of both
 * sides (payload and guards), and the status fields: state, bytes, error kind, remote effect, drain
 * and the transport the task ran on. The engines are shared by the checks of a class, which leave
 * them as they found them; a check that ends an engine starts its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class CrossTransportSuite {
  static final Duration WAIT = Duration.ofSeconds(30);

  /** Bytes of the requester's region, and at least those of {@link #data}. */
  static final long LOCAL_BYTES = 4L << 20;

  /** The requester's {@code budgets.maxTasksInFlight}: C9 submits one task more. */
  static final int TASK_BUDGET = 64;

  /** C4's sizes: one byte, a page, a 64 KiB block and 3, a MiB and an odd tail. */
  private static final long[] SIZES = {1, 4096, 65_536 + 3, (1L << 20) + 7};

  /** The transport every request of the suite names. */
  final Transport transport;

  TransferEngine requester;
  RegisteredMemory local;

  /** A region granting READ_WRITE of at least {@link #LOCAL_BYTES}; set by {@link #start()}. */
  Far data;

  /** A region the requester may only READ; set by {@link #start()}. */
  Far readOnly;

  /** A region the requester may only WRITE; set by {@link #start()}. */
  Far writeOnly;

  /** A directory of the class: child engines' logs, files; kept when a check fails. */
  Path dir;

  private long seeds = 0x5eed_0000L;

  CrossTransportSuite(Transport transport) {
    this.transport = transport;
  }

  /**
   * This transport's requester configuration (its budgets are the suite's); {@code name} names the
   * engine.
   */
  abstract EngineConfig transportConfig(String name);

  /**
   * Starts what serves the far regions and the shared requester, and sets {@link #data}, {@link
   * #readOnly} and {@link #writeOnly}; returns the requester.
   */
  abstract TransferEngine start() throws Exception;

  /** Ends what {@link #start()} started. */
  abstract void stop() throws Exception;

  /** {@link #data}'s segment, opened from another requester engine. */
  abstract RemoteSegment reachData(TransferEngine other) throws Exception;

  /** A requester engine of this transport that the check ends itself (C8). */
  TransferEngine startOwnRequester(String name) {
    return TransferEngine.start(config(name));
  }

  /** {@link #transportConfig} with the suite's budgets. */
  final EngineConfig config(String name) {
    EngineConfig c = transportConfig(name);
    return c.withBudgets(c.budgets().withMaxTasksInFlight(TASK_BUDGET));
  }

  @BeforeAll
  final void startAll(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path classDir) throws Exception {
    dir = classDir;
    requester = start();
    local = requester.allocate(LOCAL_BYTES, Access.READ_WRITE);
  }

  @AfterAll
  final void stopAll() throws Exception {
    try {
      if (requester != null) {
        requester.close(WAIT);
      }
    } finally {
      stop();
    }
  }

  /** A fresh pattern seed: no two fills of a class share one. */
  final long seed() {
    return seeds++;
  }

  /** A check's two patterns: one the far region holds, the other the requester's region. */
  record Fill(long payload, long guard) {}

  /** Fills {@code far} with a fresh pattern, and the requester's region with another. */
  final Fill fill(Far far) throws IOException {
    Fill f = new Fill(seed(), seed());
    far.fill(f.payload());
    Pattern.fill(local.segment(), 0, LOCAL_BYTES, f.guard(), 0);
    return f;
  }

  /**
   * One READ of {@code far}'s {@code [remoteAt, +length)} into the requester's region at {@code
   * localAt}, after {@link #fill}: it completes, and the requester's region holds exactly it.
   */
  final void readExactly(Far far, Fill f, long localAt, long remoteAt, long length, String what) {
    List<TransferRequest> read = List.of(request(Op.READ, local, localAt, far, remoteAt, length));
    assertCompleted(run(requester, read), read);
    EnginePair.assertRegion(
        local.segment(),
        List.of(new Span(localAt, length, f.payload(), remoteAt)),
        f.guard(),
        what);
  }

  @Test
  @DisplayName(
      "C4, C12: READs and WRITEs of 1 B, 4 KiB, 64 KiB + 3 and 1 MiB + 7 at unaligned offsets,"
          + " alone and together, complete with exactly their bytes; no guard changes on either"
          + " side")
  void c4c12EverySizeAtUnalignedOffsetsMovesExactlyItsBytes() throws Exception {
    for (Op op : Op.values()) {
      for (long size : SIZES) {
        moveAndCheck(op, new long[] {size});
      }
      moveAndCheck(op, SIZES);
    }
  }

  /** One batch of {@code op} of {@code sizes}, both whole regions checked after it. */
  private void moveAndCheck(Op op, long[] sizes) throws Exception {
    Far far = data;
    Fill f = fill(far);
    // READ: the far region holds the payload; WRITE: the requester's region, the far one guards.
    long payload = op == Op.READ ? f.payload() : f.guard();
    long guard = op == Op.READ ? f.guard() : f.payload();
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> landed = new ArrayList<>();
    long localAt = 3;
    long remoteAt = 4099;
    for (long size : sizes) {
      requests.add(request(op, local, localAt, far, remoteAt, size));
      landed.add(
          op == Op.READ
              ? new Span(localAt, size, payload, remoteAt)
              : new Span(remoteAt, size, payload, localAt));
      localAt += size + 13;
      remoteAt += size + 11;
    }
    assertCompleted(run(requester, requests), requests);
    String what = op + " of " + sizes.length + " task(s) from " + sizes[0] + " B";
    if (op == Op.READ) {
      EnginePair.assertRegion(local.segment(), landed, guard, what + ": the requester's region");
      far.assertHolds(List.of(), payload, what + ": untouched");
    } else {
      far.assertHolds(landed, guard, what);
      EnginePair.assertRegion(
          local.segment(), List.of(), payload, what + ": the requester's region untouched");
    }
  }

  @Test
  @DisplayName(
      "C4, C12: 48 adjacent 4 KiB READs and WRITEs at unaligned offsets travel merged (not on"
          + " FILE), each task keeps its own result, and the two whose destination another task"
          + " of the submission overlaps are not merged; no guard changes on either side")
  void c4c12AdjacentTasksAreMergedAndEachKeepsItsResult() throws Exception {
    int tasks = 48;
    long size = 4096;
    for (Op op : Op.values()) {
      Far far = data;
      Fill f = fill(far);
      long payload = op == Op.READ ? f.payload() : f.guard();
      long guard = op == Op.READ ? f.guard() : f.payload();
      List<TransferRequest> requests = new ArrayList<>();
      long localAt = 5;
      long remoteAt = 8195;
      for (int k = 0; k < tasks; k++) {
        requests.add(request(op, local, localAt + k * size, far, remoteAt + k * size, size));
      }
      // One more task over the end of task 10's destination and the start of task 11's, moving
      // the same bytes they move there (so whichever lands last, the bytes are known): tasks 10
      // and 11 keep transfers of their own, the other 46 merge.
      long shift = 10 * size + 100;
      requests.add(request(op, local, localAt + shift, far, remoteAt + shift, size));
      long mergedBefore = requester.counters().tasksMerged();
      assertCompleted(run(requester, requests), requests);
      long merged = requester.counters().tasksMerged() - mergedBefore;
      assertEquals(
          transport == Transport.FILE ? 0 : tasks - 2,
          merged,
          () -> op + ": tasks merged (the file transport merges none)");
      String what = op + " of " + tasks + " adjacent 4 KiB tasks";
      if (op == Op.READ) {
        EnginePair.assertRegion(
            local.segment(),
            List.of(new Span(localAt, tasks * size, payload, remoteAt)),
            guard,
            what + ": the requester's region");
        far.assertHolds(List.of(), payload, what + ": untouched");
      } else {
        far.assertHolds(List.of(new Span(remoteAt, tasks * size, payload, localAt)), guard, what);
        EnginePair.assertRegion(
            local.segment(), List.of(), payload, what + ": the requester's region untouched");
      }
    }
  }

  @Test
  @DisplayName(
      "C2: a range past a region's end is refused INVALID_ARGUMENT before a byte moves, both"
          + " regions untouched")
  void c2ARangePastTheRegionEndIsRefusedBeforeAByteMoves() throws Exception {
    Fill f = fill(data);
    long end = data.lengthBytes();
    for (Op op : Op.values()) {
      assertRefused(
          requester,
          List.of(request(op, local, 5, data, end - 100, 101)),
          ErrorKind.INVALID_ARGUMENT,
          op + " one byte past the end");
      assertRefused(
          requester,
          List.of(request(op, local, 5, data, end, 1)),
          ErrorKind.INVALID_ARGUMENT,
          op + " starting at the end");
    }
    data.assertHolds(List.of(), f.payload(), "after the refusals");
    EnginePair.assertRegion(local.segment(), List.of(), f.guard(), "the requester's region");
  }

  @Test
  @DisplayName(
      "C2: a WRITE into a READ-only region and a READ from a WRITE-only one are refused"
          + " PERMISSION_DENIED before a byte moves, every region untouched")
  void c2AWrongDirectionIsRefusedPermissionDeniedBeforeAByteMoves() throws Exception {
    Fill f = fill(readOnly);
    long writeOnlySeed = seed();
    writeOnly.fill(writeOnlySeed);
    assertRefused(
        requester,
        List.of(request(Op.WRITE, local, 7, readOnly, 3, 4096)),
        ErrorKind.PERMISSION_DENIED,
        "WRITE into a READ-only region");
    assertRefused(
        requester,
        List.of(request(Op.READ, local, 7, writeOnly, 3, 4096)),
        ErrorKind.PERMISSION_DENIED,
        "READ from a WRITE-only region");
    readOnly.assertHolds(List.of(), f.payload(), "the READ-only region");
    writeOnly.assertHolds(List.of(), writeOnlySeed, "the WRITE-only region");
    EnginePair.assertRegion(local.segment(), List.of(), f.guard(), "the requester's region");
  }

  @Test
  @DisplayName(
      "C9: a submission of one task more than maxTasksInFlight is refused RESOURCE_EXHAUSTED"
          + " before any side effect; one at the budget moves exactly its bytes")
  void c9ASubmissionBeyondTheTaskBudgetIsRefusedBeforeAnySideEffect() throws Exception {
    Fill f = fill(data);
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> landed = new ArrayList<>();
    for (int i = 0; i <= TASK_BUDGET; i++) {
      reads.add(request(Op.READ, local, 1 + i * 1009L, data, 2 + i * 1013L, 1000));
      landed.add(new Span(1 + i * 1009L, 1000, f.payload(), 2 + i * 1013L));
    }
    Batch batch = requester.allocateBatch(TASK_BUDGET + 1);
    try {
      assertRefused(batch, reads, ErrorKind.RESOURCE_EXHAUSTED, "one task over the budget");
      EnginePair.assertRegion(local.segment(), List.of(), f.guard(), "after the refusal");
      data.assertHolds(List.of(), f.payload(), "after the refusal");
    } finally {
      batch.free();
    }
    List<TransferRequest> atBudget = reads.subList(0, TASK_BUDGET);
    assertCompleted(run(requester, atBudget), atBudget);
    EnginePair.assertRegion(
        local.segment(), landed.subList(0, TASK_BUDGET), f.guard(), "the READs at the budget");
    data.assertHolds(List.of(), f.payload(), "after the READs");
  }

  @Test
  @DisplayName(
      "C8: after closeRequester the work admitted before it has finished with its bytes, and"
          + " submissions are refused UNAVAILABLE with nothing moved")
  void c8AfterCloseRequesterSubmissionsAreRefusedUnavailable() throws Exception {
    Far far = data;
    long payload = seed();
    long guard = seed();
    far.fill(payload);
    TransferEngine closing = startOwnRequester(getClass().getSimpleName() + "-closing");
    try {
      RegisteredMemory mine = closing.allocate(LOCAL_BYTES, Access.READ_WRITE);
      Pattern.fill(mine.segment(), 0, LOCAL_BYTES, guard, 0);
      RemoteSegment segment = reachData(closing);
      List<TransferRequest> reads = new ArrayList<>();
      List<Span> landed = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        long length = (256L << 10) + i;
        long at = 5 + i * (length + 4096);
        reads.add(request(Op.READ, mine, at, segment, far.regionId(), 3 + at, length));
        landed.add(new Span(at, length, payload, 3 + at));
      }
      Batch admitted = closing.allocateBatch(reads.size());
      Batch later = closing.allocateBatch(2);
      admitted.submit(reads);
      closing.closeRequester(WAIT);
      BatchStatus s = admitted.status();
      assertTrue(s.done(), () -> "admitted work finished before closeRequester returned: " + s);
      assertCompleted(s, reads);
      EnginePair.assertRegion(mine.segment(), landed, guard, "the admitted READs");

      assertRefused(
          later,
          List.of(
              request(Op.READ, mine, 0, segment, far.regionId(), 0, 4096),
              request(Op.WRITE, mine, 8192, segment, far.regionId(), 8192, 4096)),
          ErrorKind.UNAVAILABLE,
          "a submission after closeRequester");
      TransferException batch =
          assertThrows(TransferException.class, () -> closing.allocateBatch(1));
      assertEquals(ErrorKind.UNAVAILABLE, batch.kind(), batch::getMessage);
      EnginePair.assertRegion(mine.segment(), landed, guard, "after the refusals");
      far.assertHolds(List.of(), payload, "after the refusals");
      admitted.free();
      later.free();
    } finally {
      closing.close(WAIT);
    }
  }

  /** A request of {@code op} naming this suite's transport. */
  final TransferRequest request(
      Op op, RegisteredMemory mine, long localOffset, Far far, long remoteOffset, long length) {
    return request(op, mine, localOffset, far.segment(), far.regionId(), remoteOffset, length);
  }

  /** A request of {@code op} naming this suite's transport. */
  final TransferRequest request(
      Op op,
      RegisteredMemory mine,
      long localOffset,
      RemoteSegment segment,
      long regionId,
      long remoteOffset,
      long length) {
    TransferRequest r =
        op == Op.READ
            ? TransferRequest.read(mine, localOffset, segment, regionId, remoteOffset, length)
            : TransferRequest.write(mine, localOffset, segment, regionId, remoteOffset, length);
    return r.withTransport(transport);
  }

  /** Runs {@code requests} in one batch of their own until every task is terminal. */
  static BatchStatus run(TransferEngine engine, List<TransferRequest> requests) {
    Batch batch = engine.allocateBatch(requests.size());
    try {
      batch.submit(requests);
      BatchStatus s = batch.await(WAIT);
      assertTrue(s.done(), () -> "not every task ended within " + WAIT + ": " + s);
      return s;
    } finally {
      batch.free();
    }
  }

  /**
   * Every task COMPLETED with exactly its length confirmed, drained, the effect of its direction,
   * on this suite's transport.
   */
  final void assertCompleted(BatchStatus s, List<TransferRequest> requests) {
    assertEquals(requests.size(), s.tasks().size(), s::toString);
    for (TaskResult t : s.tasks()) {
      TransferRequest r = requests.get(t.index());
      assertEquals(TaskState.COMPLETED, t.state(), t::toString);
      assertEquals(r.lengthBytes(), t.bytes(), t::toString);
      assertEquals(
          r.op() == Op.READ ? RemoteEffect.NONE : RemoteEffect.APPLIED,
          t.remoteEffect(),
          t::toString);
      assertTrue(t.locallyDrained(), t::toString);
      assertEquals(transport, t.transport(), () -> "the transport asked for: " + t);
    }
  }

  /**
   * {@code requests} are refused {@code kind} before a byte moves: at submit, with nothing
   * admitted, or each task FAILED {@code kind} with 0 bytes, no remote effect, drained.
   */
  static void assertRefused(
      TransferEngine engine, List<TransferRequest> requests, ErrorKind kind, String what) {
    Batch batch = engine.allocateBatch(requests.size());
    try {
      assertRefused(batch, requests, kind, what);
    } finally {
      batch.free();
    }
  }

  /** {@link #assertRefused(TransferEngine, List, ErrorKind, String)} in {@code batch}. */
  static void assertRefused(
      Batch batch, List<TransferRequest> requests, ErrorKind kind, String what) {
    int before = batch.status().tasks().size();
    try {
      batch.submit(requests);
    } catch (TransferException e) {
      assertEquals(kind, e.kind(), () -> what + ": refused at submit " + e.kind() + ": " + e);
      assertEquals(before, batch.status().tasks().size(), what + ": nothing admitted");
      return;
    }
    BatchStatus s = batch.await(WAIT);
    assertTrue(s.done(), () -> what + ": not every task ended within " + WAIT + ": " + s);
    for (TaskResult t : s.tasks().subList(before, s.tasks().size())) {
      assertEquals(TaskState.FAILED, t.state(), () -> what + ": " + t);
      assertEquals(kind, t.errorKind(), () -> what + ": " + t);
      assertEquals(0, t.bytes(), () -> what + ": " + t);
      assertEquals(RemoteEffect.NONE, t.remoteEffect(), () -> what + ": " + t);
      assertTrue(t.locallyDrained(), () -> what + ": " + t);
    }
  }
}
