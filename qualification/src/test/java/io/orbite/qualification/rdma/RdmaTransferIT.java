package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Access;
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
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * READ and WRITE over the RDMA transport between two engines of this JVM on the software provider
 * (each engine its own provider and devices, so every byte crosses a socket): two rails, three
 * lanes each. Every test checks both whole regions: each task's destination range holds exactly its
 * source's bytes, every other byte its guard, and the other side is untouched.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RdmaTransferIT {
  private static final long PAYLOAD = (4L << 20) + 1;
  private static final int PARENTS = 16;
  private static final long STRIDE = PAYLOAD + 4099;
  private static final long REGION = STRIDE * PARENTS + 8192;

  private TransferEngine source;
  private TransferEngine requester;
  private RegisteredMemory remote;
  private RegisteredMemory local;
  private RemoteSegment peer;

  /** Hooks that hand {@code faults} to the engine's software provider, and nothing else. */
  public static io.orbite.engine.fault.FaultHooks hooks(
      io.orbite.nativebind.verbs.soft.SoftFaults faults) {
    return new io.orbite.engine.fault.FaultHooks() {
      @Override
      public Object rdmaFaults() {
        return faults;
      }
    };
  }

  static EngineConfig rdmaConfig(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(2).withLanes(3));
  }

  @BeforeAll
  void start() {
    source = TransferEngine.start(rdmaConfig("rdma-source"));
    requester = TransferEngine.start(rdmaConfig("rdma-requester"));
    remote = source.allocate(REGION, Access.READ_WRITE);
    local = requester.allocate(REGION, Access.READ_WRITE);
    peer = requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
  }

  @AfterAll
  void stop() {
    try {
      requester.close(Duration.ofSeconds(20));
    } finally {
      source.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void sixteenParentsOfFourMiBPlusOneMoveExactlyOverBothRailsForThreeRoundsEachWay() {
    long railBytesBefore = railBytes(requester, "soft0") + railBytes(requester, "soft1");
    long expected = 0;
    for (int round = 0; round < 3; round++) {
      for (Op op : Op.values()) {
        long guard = 0x5eed_0000L + round * 2 + op.ordinal();
        long data = 0xda7a_0000L + round * 2 + op.ordinal();
        RegisteredMemory dst = op == Op.READ ? local : remote;
        RegisteredMemory src = op == Op.READ ? remote : local;
        Pattern.fill(dst.segment(), 0, REGION, guard, 0);
        Pattern.fill(src.segment(), 0, REGION, data, 0);
        List<TransferRequest> requests = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        for (int i = 0; i < PARENTS; i++) {
          long localOffset = 3 + i * STRIDE;
          long remoteOffset = 4096 + 11 + i * STRIDE;
          TransferRequest r =
              op == Op.READ
                  ? TransferRequest.read(
                      local, localOffset, peer, remote.regionId(), remoteOffset, PAYLOAD)
                  : TransferRequest.write(
                      local, localOffset, peer, remote.regionId(), remoteOffset, PAYLOAD);
          requests.add(r.withTransport(Transport.RDMA));
          spans.add(
              op == Op.READ
                  ? new Span(localOffset, PAYLOAD, data, remoteOffset)
                  : new Span(remoteOffset, PAYLOAD, data, localOffset));
        }
        Batch batch = requester.allocateBatch(PARENTS);
        batch.submit(requests);
        BatchStatus s = batch.await(Duration.ofSeconds(120));
        batch.free();
        int n = round;
        assertTrue(s.allCompleted(), () -> op + " round " + n + ": " + firstFailure(s));
        for (TaskResult t : s.tasks()) {
          assertEquals(PAYLOAD, t.bytes(), "task " + t.index() + " bytes");
          assertEquals(op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, t.remoteEffect());
        }
        assertEquals(
            -1,
            RegionCheck.check(dst.segment(), spans, guard),
            op + " round " + round + ": destination region");
        assertEquals(
            -1,
            Pattern.verify(src.segment(), 0, REGION, data, 0),
            op + " round " + round + ": the side the bytes came from is untouched");
        expected += PARENTS * PAYLOAD;
      }
    }
    long soft0 = railBytes(requester, "soft0");
    long soft1 = railBytes(requester, "soft1");
    assertTrue(soft0 > 0 && soft1 > 0, () -> "both rails carry payload: " + soft0 + " / " + soft1);
    assertEquals(expected, soft0 + soft1 - railBytesBefore, "rail counters sum to the payload");
    // nicLoadStats: both rails seen, every byte assigned to one and none left charged.
    long moved = expected;
    assertTrue(
        io.orbite.qualification.Await.until(
            Duration.ofSeconds(2),
            () -> {
              List<io.orbite.engine.NicLoadStats> nics = requester.nicLoadStats();
              return nics.size() == 2
                  && nics.stream().allMatch(n -> n.chargedBytes() == 0 && n.allocatedBytes() > 0)
                  && nics.stream().mapToLong(io.orbite.engine.NicLoadStats::completedBytes).sum()
                      >= moved;
            }),
        () -> "nicLoadStats: " + requester.nicLoadStats());
    for (io.orbite.engine.NicLoadStats n : requester.nicLoadStats()) {
      assertTrue(
          n.selectionBytesPerSecond() >= n.linkBytesPerSecond() / 10
              && n.selectionBytesPerSecond() <= n.linkBytesPerSecond() * 10,
          n::toString);
    }
  }

  @Test
  void smallAndUnalignedTransfersTouchOnlyTheirBytes() {
    for (Op op : Op.values()) {
      long guard = 77 + op.ordinal();
      long data = 99 + op.ordinal();
      RegisteredMemory dst = op == Op.READ ? local : remote;
      RegisteredMemory src = op == Op.READ ? remote : local;
      Pattern.fill(dst.segment(), 0, REGION, guard, 0);
      Pattern.fill(src.segment(), 0, REGION, data, 0);
      long[][] tasks = {
        {1, 2, 1}, {4093, 7, 4101}, {100_003, 200_001, 65_537}, {1 << 20, 3L << 20, 200_000}
      };
      List<TransferRequest> requests = new ArrayList<>();
      List<Span> spans = new ArrayList<>();
      for (long[] t : tasks) {
        requests.add(
            (op == Op.READ
                    ? TransferRequest.read(local, t[0], peer, remote.regionId(), t[1], t[2])
                    : TransferRequest.write(local, t[0], peer, remote.regionId(), t[1], t[2]))
                .withTransport(Transport.RDMA));
        spans.add(
            op == Op.READ ? new Span(t[0], t[2], data, t[1]) : new Span(t[1], t[2], data, t[0]));
      }
      Batch batch = requester.allocateBatch(tasks.length);
      batch.submit(requests);
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), () -> op + ": " + firstFailure(s));
      assertEquals(-1, RegionCheck.check(dst.segment(), spans, guard), op + ": destination");
      assertEquals(-1, Pattern.verify(src.segment(), 0, REGION, data, 0), op + ": source side");
    }
  }

  static long railBytes(TransferEngine engine, String device) {
    Map<String, Long> lanes = engine.counters().laneBytes();
    return lanes.getOrDefault("rdma/" + device, 0L);
  }

  static String firstFailure(BatchStatus s) {
    return s.tasks().stream()
        .filter(t -> t.errorKind() != null)
        .findFirst()
        .map(TaskResult::toString)
        .orElse("none failed, state " + s);
  }
}
