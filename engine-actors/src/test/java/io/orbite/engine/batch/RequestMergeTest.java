package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.PolicyChoice;
import io.orbite.config.PolicyMatch;
import io.orbite.config.TransportPolicies;
import io.orbite.config.TransportPolicy;
import io.orbite.engine.Access;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Request merging ({@link RequestMerger}): adjacent tasks of a submission travel as one physical
 * transfer up to the channel's limit, each task keeps its own result, a failed transfer fails every
 * task in it with the transfer's effect, and tasks whose destinations overlap are never merged, so
 * that the bytes that land last are the ones they would have been unmerged. The channel here moves
 * real bytes between two memory segments, in the order it was handed the work, and every test
 * checks both regions byte for byte, guards included.
 */
class RequestMergeTest {
  static {
    org.slf4j.LoggerFactory.getLogger(RequestMergeTest.class);
  }

  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));

  private static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final long REGION = 9;
  private static final long SPAN = 1 << 20;
  private static final byte LOCAL_GUARD = (byte) 0xA5;

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private final MemorySegment localBytes = Arena.ofAuto().allocate(SPAN);
  private final MemorySegment remoteBytes = Arena.ofAuto().allocate(SPAN);
  private final Registration local = new Registration(7, localBytes, Access.READ_WRITE, null);
  private long lease;
  private int batches;

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** The remote byte at {@code p}: a pattern no two nearby positions share. */
  private static byte remoteAt(long p) {
    return (byte) (p * 131 + (p >>> 8) * 7 + 1);
  }

  /** The byte a WRITE's source holds at local position {@code p}. */
  private static byte localAt(long p) {
    return (byte) (p * 17 + (p >>> 8) * 3 + 5);
  }

  /**
   * A channel that takes work up to {@code limit} bytes per merged transfer and, when told to, runs
   * each in the order it was handed over: a READ copies remote bytes into local memory, a WRITE the
   * other way.
   */
  private final class CopyChannel extends QuietTcpChannel {
    final List<TaskWork> taken = new ArrayList<>();
    final long limit;

    CopyChannel(long limit) {
      this.limit = limit;
    }

    @Override
    public long mergeLimitBytes() {
      return limit;
    }

    @Override
    public int dispatch(TaskWork w) {
      taken.add(w);
      return 1;
    }

    void runAll() {
      for (TaskWork w : taken) {
        if (w.op() == Op.READ) {
          MemorySegment.copy(
              remoteBytes, w.remoteOffset(), w.local(), w.localOffset(), w.lengthBytes());
        } else {
          MemorySegment.copy(
              w.local(), w.localOffset(), remoteBytes, w.remoteOffset(), w.lengthBytes());
        }
        w.sink()
            .deliver(
                Receipts.of(
                    Receipt.ok(
                        w.taskIndex(),
                        w.lengthBytes(),
                        w.op() == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE)));
      }
    }
  }

  /** A task's placement. */
  private record Place(Op op, long localOffset, long remoteOffset, long length) {}

  private BatchCore submit(CopyChannel channel, List<Place> places) {
    return submit(channel, places, null);
  }

  /** Submits {@code places}, routed by {@code selector}'s rules when it is not null. */
  private BatchCore submit(CopyChannel channel, List<Place> places, TransportSelector selector) {
    for (long p = 0; p < SPAN; p++) {
      localBytes.set(ValueLayout.JAVA_BYTE, p, localAt(p));
      remoteBytes.set(ValueLayout.JAVA_BYTE, p, remoteAt(p));
    }
    for (Place place : places) {
      if (place.op == Op.READ) {
        localBytes.asSlice(place.localOffset, place.length).fill(LOCAL_GUARD);
      }
    }
    RemoteSegment peer =
        new PeerSegment(
            channel.peer(), List.of(new RemoteRegion(REGION, SPAN, Access.READ_WRITE)), channel);
    String name = "merge-" + ++batches;
    BatchCore core =
        new BatchCore(
            name,
            places.size(),
            gate,
            counters,
            board,
            DEADLINE,
            DEADLINE,
            new QuarantineLedger(),
            r -> {});
    ActorRef<BatchActor.Command> actor =
        testKit.spawn(BatchActor.create(core, board, System::nanoTime), name);
    core.bind(actor);
    assertTrue(gate.tryBatch().granted());
    List<TransferRequest> requests = new ArrayList<>();
    for (Place p : places) {
      requests.add(
          (p.op == Op.READ
                  ? TransferRequest.read(
                      local, p.localOffset, peer, REGION, p.remoteOffset, p.length)
                  : TransferRequest.write(
                      local, p.localOffset, peer, REGION, p.remoteOffset, p.length))
              .withDeadline(DEADLINE));
    }
    lease = core.lease();
    RequestValidator.Routed routed =
        selector == null ? Routings.of(requests) : RequestValidator.validate(requests, selector);
    core.dispatch(core.admit(lease, requests, routed, System.nanoTime()));
    return core;
  }

  /** What both regions must hold after {@code places} ran one by one, in submission order. */
  private void assertBytesAsIfUnmerged(List<Place> places) {
    byte[] wantLocal = new byte[(int) SPAN];
    byte[] wantRemote = new byte[(int) SPAN];
    for (int p = 0; p < SPAN; p++) {
      wantLocal[p] = localAt(p);
      wantRemote[p] = remoteAt(p);
    }
    for (Place place : places) {
      if (place.op == Op.READ) {
        for (long k = 0; k < place.length; k++) {
          wantLocal[(int) (place.localOffset + k)] = wantRemote[(int) (place.remoteOffset + k)];
        }
      } else {
        for (long k = 0; k < place.length; k++) {
          wantRemote[(int) (place.remoteOffset + k)] = wantLocal[(int) (place.localOffset + k)];
        }
      }
    }
    for (int p = 0; p < SPAN; p++) {
      int at = p;
      assertEquals(wantLocal[p], localBytes.get(ValueLayout.JAVA_BYTE, p), () -> "local " + at);
      assertEquals(wantRemote[p], remoteBytes.get(ValueLayout.JAVA_BYTE, p), () -> "remote " + at);
    }
  }

  private static List<Place> adjacent(Op op, int tasks, long length, long localAt, long remoteAt) {
    List<Place> out = new ArrayList<>();
    for (int k = 0; k < tasks; k++) {
      out.add(new Place(op, localAt + k * length, remoteAt + k * length, length));
    }
    return out;
  }

  @Test
  void adjacentReadsTravelAsOneTransferAndEachTaskKeepsItsResult() {
    CopyChannel channel = new CopyChannel(64 << 10);
    List<Place> places = adjacent(Op.READ, 16, 4096, 4099, 70_001);
    BatchCore core = submit(channel, places);
    assertEquals(1, channel.taken.size(), "16 adjacent 4 KiB READs in one 64 KiB transfer");
    TaskWork w = channel.taken.get(0);
    assertEquals(0, w.taskIndex());
    assertEquals(64 << 10, w.lengthBytes());
    assertEquals(4099, w.localOffset());
    assertEquals(70_001, w.remoteOffset());
    assertEquals(16, local.loans(), "every task holds its loan until its transfer ends");
    channel.runAll();
    BatchStatus status = core.status(lease);
    assertTrue(status.allCompleted(), status::toString);
    for (int k = 0; k < 16; k++) {
      TaskResult r = status.tasks().get(k);
      assertEquals(k, r.index());
      assertEquals(4096, r.bytes(), r::toString);
      assertEquals(Transport.TCP, r.transport());
    }
    assertEquals(0, local.loans());
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
    assertEquals(16, counters.snapshot().tasksMerged());
    assertEquals(1, counters.snapshot().mergedTransfers());
    assertBytesAsIfUnmerged(places);
  }

  @Test
  void aMergedTransferStopsAtTheChannelsLimitAndAWriteRunMergesToo() {
    CopyChannel channel = new CopyChannel(10 << 10);
    List<Place> places = adjacent(Op.WRITE, 9, 4096, 0, 200_000);
    BatchCore core = submit(channel, places);
    // 10 KiB holds two 4 KiB tasks: 4 transfers of two, and the ninth alone.
    assertEquals(
        List.of(8192L, 8192L, 8192L, 8192L, 4096L),
        channel.taken.stream().map(TaskWork::lengthBytes).toList());
    assertEquals(List.of(0, 2, 4, 6, 8), channel.taken.stream().map(TaskWork::taskIndex).toList());
    channel.runAll();
    BatchStatus status = core.status(lease);
    assertTrue(status.allCompleted(), status::toString);
    status.tasks().forEach(r -> assertEquals(RemoteEffect.APPLIED, r.remoteEffect()));
    assertBytesAsIfUnmerged(places);
  }

  @Test
  void tasksWithDifferentLaneMasksAreNotMergedAndAMergedTransferKeepsItsMask() {
    CopyChannel channel = new CopyChannel(64 << 10);
    // Rule 0 keeps 4 KiB tasks on lane 0, rule 1 larger ones on lane 1: the four READs continue
    // each other, but the run breaks where the mask changes.
    TransportSelector byMask =
        TransportSelector.compile(
            TransportPolicies.of(
                new TransportPolicy(
                    PolicyMatch.any().withMaxBytes(4096),
                    PolicyChoice.of(TransportPolicy.Transport.TCP).withLaneMask(1L)),
                new TransportPolicy(
                    PolicyMatch.any(),
                    PolicyChoice.of(TransportPolicy.Transport.TCP).withLaneMask(2L))));
    List<Place> places =
        List.of(
            new Place(Op.READ, 100, 5000, 4096),
            new Place(Op.READ, 4196, 9096, 4096),
            new Place(Op.READ, 8292, 13_192, 8192),
            new Place(Op.READ, 16_484, 21_384, 8192));
    BatchCore core = submit(channel, places, byMask);
    assertEquals(
        List.of(8192L, 16_384L), channel.taken.stream().map(TaskWork::lengthBytes).toList());
    assertEquals(List.of(0, 2), channel.taken.stream().map(TaskWork::taskIndex).toList());
    assertEquals(List.of(1L, 2L), channel.taken.stream().map(TaskWork::laneMask).toList());
    channel.runAll();
    BatchStatus status = core.status(lease);
    assertTrue(status.allCompleted(), status::toString);
    for (TaskResult r : status.tasks()) {
      assertEquals(r.index() < 2 ? 0 : 1, r.rule(), r::toString);
      assertEquals(places.get(r.index()).length(), r.bytes(), r::toString);
    }
    assertBytesAsIfUnmerged(places);
  }

  @Test
  void aChannelWithoutALimitAndTasksThatDoNotContinueEachOtherAreNotMerged() {
    CopyChannel none = new CopyChannel(0);
    List<Place> places = adjacent(Op.READ, 4, 512, 0, 0);
    BatchCore core = submit(none, places);
    assertEquals(4, none.taken.size(), "merge.enabled=false or a channel that never merges");
    none.runAll();
    assertTrue(core.status(lease).allCompleted());
    assertBytesAsIfUnmerged(places);

    CopyChannel channel = new CopyChannel(1 << 20);
    List<Place> mixed =
        List.of(
            new Place(Op.READ, 0, 0, 100),
            new Place(Op.READ, 100, 300, 100), // the remote side does not continue
            new Place(Op.WRITE, 200, 400, 100), // another op
            new Place(Op.READ, 400, 600, 100), // the local side jumps
            new Place(Op.READ, 500, 700, 100)); // continues the previous one: merged
    core = submit(channel, mixed);
    assertEquals(List.of(0, 1, 2, 3), channel.taken.stream().map(TaskWork::taskIndex).toList());
    assertEquals(200, channel.taken.get(3).lengthBytes());
    channel.runAll();
    assertTrue(core.status(lease).allCompleted());
    assertBytesAsIfUnmerged(mixed);
  }

  @Test
  void overlappingDestinationsAreNeverMergedAndTheLastBytesLandLast() {
    CopyChannel channel = new CopyChannel(1 << 20);
    // Tasks 0-3 are adjacent on both sides, but task 5 READs into task 1's local range, and task 4
    // continues task 3 and overlaps nothing.
    List<Place> places =
        List.of(
            new Place(Op.READ, 1000, 5000, 1000),
            new Place(Op.READ, 2000, 6000, 1000),
            new Place(Op.READ, 3000, 7000, 1000),
            new Place(Op.READ, 4000, 8000, 1000),
            new Place(Op.READ, 5000, 9000, 1000),
            new Place(Op.READ, 2500, 300_000, 10));
    BatchCore core = submit(channel, places);
    // 0 and 1 overlap task 5: alone. 2, 3 and 4 merge. 5 alone, handed over last.
    assertEquals(List.of(0, 1, 2, 5), channel.taken.stream().map(TaskWork::taskIndex).toList());
    assertEquals(3000, channel.taken.get(2).lengthBytes());
    channel.runAll();
    assertTrue(core.status(lease).allCompleted());
    assertBytesAsIfUnmerged(places);
    // Two WRITEs to the same remote bytes never merge either.
    CopyChannel writes = new CopyChannel(1 << 20);
    List<Place> twice =
        List.of(
            new Place(Op.WRITE, 0, 10_000, 100),
            new Place(Op.WRITE, 100, 10_100, 100),
            new Place(Op.WRITE, 200, 10_050, 100));
    core = submit(writes, twice);
    assertEquals(3, writes.taken.size());
    writes.runAll();
    assertTrue(core.status(lease).allCompleted());
    assertBytesAsIfUnmerged(twice);
  }

  @Test
  void aMergedTransferThatFailsPartWayFailsEveryTaskInItWithItsEffect() {
    CopyChannel channel = new CopyChannel(1 << 20);
    List<Place> places = new ArrayList<>(adjacent(Op.WRITE, 4, 4096, 0, 0));
    places.add(new Place(Op.WRITE, 100_000, 100_000, 4096)); // on its own
    BatchCore core = submit(channel, places);
    assertEquals(2, channel.taken.size());
    TaskWork merged = channel.taken.get(0);
    assertEquals(4 * 4096, merged.lengthBytes());
    // Half of the merged transfer reached the peer, then its connection broke.
    MemorySegment.copy(local.segment(), 0, remoteBytes, 0, 2 * 4096 + 17);
    merged
        .sink()
        .deliver(
            Receipts.of(
                Receipt.failed(
                    0, ErrorKind.PEER_LOST, RemoteEffect.UNKNOWN, "connection reset mid-frame")));
    TaskWork alone = channel.taken.get(1);
    MemorySegment.copy(local.segment(), 100_000, remoteBytes, 100_000, 4096);
    alone.sink().deliver(Receipts.of(Receipt.ok(4, 4096, RemoteEffect.APPLIED)));
    BatchStatus status = core.status(lease);
    assertTrue(status.done());
    for (int k = 0; k < 4; k++) {
      TaskResult r = status.tasks().get(k);
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(ErrorKind.PEER_LOST, r.errorKind(), r::toString);
      assertEquals(RemoteEffect.UNKNOWN, r.remoteEffect(), "never replayed: " + r);
      assertEquals(0, r.bytes(), "failed bytes are never counted: " + r);
      assertTrue(r.locallyDrained(), r::toString);
      if (k > 0) {
        assertTrue(r.detail().contains("merged with tasks 0..3"), r.detail());
      }
    }
    TaskResult last = status.tasks().get(4);
    assertTrue(last.completed(), last::toString);
    assertEquals(RemoteEffect.APPLIED, last.remoteEffect());
    assertEquals(0, local.loans(), "every loan is back");
    assertEquals(new Budgets.Usage(1, 0, 0, 0), gate.usage());
    // The local side of a WRITE is untouched; the remote holds what reached it and nothing else.
    for (long p = 0; p < SPAN; p++) {
      byte want =
          p < 2 * 4096 + 17 || (p >= 100_000 && p < 100_000 + 4096) ? localAt(p) : remoteAt(p);
      assertEquals(localAt(p), localBytes.get(ValueLayout.JAVA_BYTE, p));
      assertEquals(want, remoteBytes.get(ValueLayout.JAVA_BYTE, p));
    }
  }
}
