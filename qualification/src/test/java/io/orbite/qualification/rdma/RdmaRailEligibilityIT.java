package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaPriorityMatrix;
import io.orbite.config.RdmaSelectionConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.NicLoadStats;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rail eligibility through the engine, two soft rails each side (spec 002's hard limits): a device
 * mask, strict NUMA locality and a topology file keep every byte off the excluded rail, proven by
 * the engine's rail counters and the provider's own; a priority matrix naming a device that is not
 * opened refuses the transport's start naming its JSON path, so a request naming RDMA is refused
 * with that reason and UNSPEC goes over TCP; a policy that allows no rail fails RDMA tasks
 * UNAVAILABLE before any grant or work request. Every task's bytes and both regions' guards are
 * checked.
 */
class RdmaRailEligibilityIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = (1L << 20) + 3;
  private static final long LOCAL_AT = 4099;
  private static final long REMOTE_AT = 8191;
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** A requester engine on the soft provider with {@code faults}, its selection as given. */
  private static TransferEngine requester(
      String name, SoftFaults faults, UnaryOperator<RdmaSelectionConfig> selection) {
    EngineConfig base = RdmaTransferIT.rdmaConfig(name);
    EngineConfig config =
        base.withRdma(base.rdma().withSelection(selection.apply(base.rdma().selection())));
    return FaultInjection.start(
        config,
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return faults;
          }
        });
  }

  @Test
  void aDeviceMaskKeepsEveryByteOnTheRailItAllows() {
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("mask-src"));
        TransferEngine requester =
            requester("mask-req", faults, s -> s.withDeviceMask(List.of("soft1")))) {
      long moved = roundsOverRdma(source, requester);
      assertOnlySoft1Carried(requester, faults, moved);
      NicLoadStats soft0 = nic(requester, "soft0");
      assertFalse(soft0.eligible(), soft0::toString);
      assertEquals(0, soft0.allocatedBytes(), soft0::toString);
      assertTrue(nic(requester, "soft1").eligible());
      // The source's RAILS published its two soft rails' link rates: 4x EDR, 100 Gb/s each.
      assertTrue(
          Await.until(
              WAIT,
              () ->
                  RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerLinkBytesPerSecond")
                          == 2 * 12_500_000_000L
                      && RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerRails") == 2),
          () ->
              "the peer's rails in the endpoint's owner view: "
                  + RdmaPeerIT.charge(requester, "RdmaEndpoint", "peerLinkBytesPerSecond"));
    }
  }

  @Test
  void strictNumaKeepsEveryByteOffARailKnownToSitOnAnotherNode() {
    SoftFaults faults = SoftFaults.create();
    faults.setNumaNode("soft0", 1); // soft1 stays of unknown locality: eligible, tier 1
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("numa-src"));
        TransferEngine requester = requester("numa-req", faults, s -> s.withNuma(0, true))) {
      long moved = roundsOverRdma(source, requester);
      assertOnlySoft1Carried(requester, faults, moved);
      NicLoadStats soft0 = nic(requester, "soft0");
      NicLoadStats soft1 = nic(requester, "soft1");
      assertEquals(1, soft0.numaNode(), soft0::toString);
      assertEquals(2, soft0.tier(), soft0::toString);
      assertFalse(soft0.eligible(), soft0::toString);
      assertEquals(-1, soft1.numaNode(), soft1::toString);
      assertEquals(1, soft1.tier(), soft1::toString);
      assertTrue(soft1.eligible(), soft1::toString);
    }
  }

  @Test
  void aNativeTopologyFileListsTheRailsThatMayCarryAndTheirRanks(@TempDir Path dir)
      throws IOException {
    Path topology = dir.resolve("topology.json");
    Files.writeString(
        topology,
        """
        {"nics": [{"name": "soft1", "type": 0}, {"name": "soft0", "type": 0}],
         "mems": [{"name": "*", "type": 4, "device_list": {"rank0": [], "rank1": [0]}}]}
        """);
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("file-src"));
        TransferEngine requester =
            requester("file-req", faults, s -> s.withCustomJsonPath(topology.toString()))) {
      long moved = roundsOverRdma(source, requester);
      assertOnlySoft1Carried(requester, faults, moved);
      NicLoadStats soft1 = nic(requester, "soft1");
      assertEquals(1, soft1.tier(), soft1::toString);
      assertTrue(soft1.eligible(), soft1::toString);
      assertFalse(nic(requester, "soft0").eligible());
    }
  }

  @Test
  void aMatrixNamingAnUnknownDeviceRefusesTheTransportAndRdmaRequestsWhileUnspecUsesTcp() {
    RdmaPriorityMatrix matrix =
        RdmaPriorityMatrix.parse("{\"cpu:0\": [[\"soft0\"], [\"mlx5_9\"]], \"*\": [[], []]}");
    String why =
        "rdma.selection.priorityMatrix[\"cpu:0\"][1][0]: \"mlx5_9\" is not an opened device"
            + " (opened: soft0, soft1)";
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("matrix-src"));
        TransferEngine requester =
            requester("matrix-req", faults, s -> s.withNuma(0, false).withPriorityMatrix(matrix))) {
      assertTrue(
          Await.until(WAIT, () -> transportDetail(requester).contains(why)),
          () -> "the transport names the JSON path: " + transportDetail(requester));
      Memory m = new Memory(source, requester);
      m.fill();
      Batch batch = requester.allocateBatch(2);
      TransferException refused =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(
                                  m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)
                              .withTransport(Transport.RDMA))));
      assertEquals(ErrorKind.UNAVAILABLE, refused.kind(), refused::getMessage);
      assertTrue(refused.getMessage().contains(why), refused::getMessage);
      assertEquals(0, batch.status().tasks().size(), "nothing admitted");
      m.assertUntouched();
      long tcp = requester.counters().tasksDispatched(Transport.TCP);
      long rdma = requester.counters().tasksDispatched(Transport.RDMA);
      batch.submit(
          List.of(
              TransferRequest.read(
                  m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)));
      BatchStatus s = batch.await(WAIT);
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(tcp + 1, requester.counters().tasksDispatched(Transport.TCP));
      assertEquals(rdma, requester.counters().tasksDispatched(Transport.RDMA));
      m.assertRead();
      assertEquals(0, faults.payloadBytes("soft0") + faults.payloadBytes("soft1"));
    }
  }

  @Test
  void aPolicyAllowingNoRailFailsRdmaTasksUnavailableBeforeAnyGrantAndUnspecUsesTcp() {
    SoftFaults faults = SoftFaults.create();
    faults.setNumaNode("soft0", 1);
    faults.setNumaNode("soft1", 2);
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("none-src"));
        TransferEngine requester = requester("none-req", faults, s -> s.withNuma(0, true))) {
      Memory m = new Memory(source, requester);
      m.fill();
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus failed = batch.await(WAIT);
      assertEquals(2, failed.tasks().size(), failed::toString);
      for (TaskResult r : failed.tasks()) {
        assertEquals(ErrorKind.UNAVAILABLE, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
        assertTrue(
            r.detail().contains("soft0 by rdma.selection.strictLocalNuma (on NUMA node 1")
                && r.detail().contains("soft1 by rdma.selection.strictLocalNuma (on NUMA node 2"),
            r::toString);
      }
      batch.free();
      m.assertUntouched();
      assertEquals(0, RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound"), "no grant");
      assertEquals(0, faults.payloadBytes("soft0") + faults.payloadBytes("soft1"), "no WR");
      assertTrue(
          Await.until(
              WAIT,
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "tasksRefusedByPolicy") == 2),
          "both refusals counted (the owner view re-publishes every 200 ms)");
      Batch unspec = requester.allocateBatch(1);
      long tcp = requester.counters().tasksDispatched(Transport.TCP);
      unspec.submit(
          List.of(
              TransferRequest.read(
                  m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)));
      BatchStatus s = unspec.await(WAIT);
      unspec.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(tcp + 1, requester.counters().tasksDispatched(Transport.TCP));
      m.assertRead();
    }
  }

  // ---------------------------------------------------------------- helpers

  /** Both engines' regions and the requester's segment to the source, with their patterns. */
  private static final class Memory {
    final RegisteredMemory remote;
    final RegisteredMemory local;
    final RemoteSegment peer;
    long remoteSeed;
    long localSeed;

    Memory(TransferEngine source, TransferEngine requester) {
      remote = source.allocate(REGION, Access.READ_WRITE);
      local = requester.allocate(REGION, Access.READ_WRITE);
      peer = requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
    }

    /** Fresh, different patterns over both whole regions. */
    void fill() {
      remoteSeed = System.nanoTime();
      localSeed = remoteSeed + 1;
      Pattern.fill(remote.segment(), 0, REGION, remoteSeed, 0);
      Pattern.fill(local.segment(), 0, REGION, localSeed, 0);
    }

    void assertUntouched() {
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, localSeed, 0), "local");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, remoteSeed, 0), "remote");
    }

    /** A READ of the task's range landed: exactly its bytes, nothing else on either side. */
    void assertRead() {
      assertEquals(-1, Pattern.verify(local.segment(), 0, LOCAL_AT, localSeed, 0), "before");
      assertEquals(
          -1, Pattern.verify(local.segment(), LOCAL_AT, TASK, remoteSeed, REMOTE_AT), "payload");
      long after = LOCAL_AT + TASK;
      assertEquals(
          -1, Pattern.verify(local.segment(), after, REGION - after, localSeed, after), "after");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, remoteSeed, 0), "source");
    }

    /** A WRITE of the task's range landed: exactly its bytes, nothing else on either side. */
    void assertWritten() {
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REMOTE_AT, remoteSeed, 0), "before");
      assertEquals(
          -1, Pattern.verify(remote.segment(), REMOTE_AT, TASK, localSeed, LOCAL_AT), "payload");
      long after = REMOTE_AT + TASK;
      assertEquals(
          -1, Pattern.verify(remote.segment(), after, REGION - after, remoteSeed, after), "after");
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, localSeed, 0), "requester");
    }
  }

  /**
   * Three READs then three WRITEs of {@link #TASK} bytes over RDMA (many slices each, so both rails
   * would carry them without a limit), each checked in full on both sides.
   *
   * @return the payload bytes moved
   */
  private static long roundsOverRdma(TransferEngine source, TransferEngine requester) {
    Memory m = new Memory(source, requester);
    long moved = 0;
    for (int round = 0; round < 6; round++) {
      int n = round;
      boolean read = n < 3;
      m.fill();
      Batch batch = requester.allocateBatch(1);
      TransferRequest r =
          read
              ? TransferRequest.read(
                  m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK)
              : TransferRequest.write(
                  m.local, LOCAL_AT, m.peer, m.remote.regionId(), REMOTE_AT, TASK);
      batch.submit(List.of(r.withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(WAIT);
      batch.free();
      assertTrue(s.allCompleted(), () -> "round " + n + ": " + RdmaTransferIT.firstFailure(s));
      assertEquals(TASK, s.tasks().getFirst().bytes());
      if (read) {
        m.assertRead();
      } else {
        assertEquals(RemoteEffect.APPLIED, s.tasks().getFirst().remoteEffect());
        m.assertWritten();
      }
      moved += TASK;
    }
    return moved;
  }

  private static void assertOnlySoft1Carried(
      TransferEngine requester, SoftFaults faults, long moved) {
    assertEquals(0, RdmaTransferIT.railBytes(requester, "soft0"), "soft0 carried nothing");
    assertEquals(moved, RdmaTransferIT.railBytes(requester, "soft1"), "soft1 carried it all");
    assertEquals(0, faults.payloadBytes("soft0"), "the provider moved nothing on soft0");
    assertEquals(moved, faults.payloadBytes("soft1"), "the provider's count on soft1");
  }

  private static NicLoadStats nic(TransferEngine engine, String device) {
    assertTrue(Await.until(WAIT, () -> engine.nicLoadStats().size() == 2), "both rails listed");
    return engine.nicLoadStats().stream()
        .filter(n -> n.device().equals(device))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no rail " + device + " in nicLoadStats"));
  }

  private static String transportDetail(TransferEngine engine) {
    for (OwnerView.Owner o : engine.ownerView().owners()) {
      if (o.kind().equals("RdmaTransport")) {
        return o.detail();
      }
    }
    return "";
  }
}
