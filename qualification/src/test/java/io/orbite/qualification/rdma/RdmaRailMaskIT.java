package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.PolicyChoice;
import io.orbite.config.PolicyMatch;
import io.orbite.config.TransportPolicies;
import io.orbite.config.TransportPolicy;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A policy rule's {@code choose.railMask} over RDMA on the software provider with two rails (soft0,
 * soft1): the requester's per-rail byte counters prove that every slice of a rule's tasks was
 * posted on the rail its mask names, while the same tasks without a rule use both rails. A mask
 * naming no rail of this engine is refused at submit naming the rule and the mask's path, or moves
 * to the rule's next transport; so does a mask whose rail has no healthy pair. Every byte of both
 * regions is checked, payload and guards.
 */
class RdmaRailMaskIT {
  private static final long REGION = 32L << 20;
  private static final long REMOTE_SEED = 0x2a11;
  private static final long LOCAL_GUARD = 0x2a12;
  private static final long WRITE_SEED = 0x2a13;

  /** A task's placement. */
  private record Task(Op op, long localOffset, long remoteOffset, long length) {}

  private static List<Task> tasks() {
    List<Task> out = new ArrayList<>();
    for (int k = 0; k < 4; k++) {
      out.add(new Task(Op.READ, 3 + k * (2L << 20), 4096 + 5 + k * (2L << 20), (1L << 20) + 3));
      out.add(
          new Task(
              Op.WRITE,
              (10L << 20) + 1 + k * (2L << 20),
              (12L << 20) + 7 + k * (2L << 20),
              (1L << 20) + 5));
    }
    out.add(new Task(Op.READ, (20L << 20) + 9, (22L << 20) + 1, 4093));
    out.add(new Task(Op.WRITE, (21L << 20) + 5, (23L << 20) + 3, 65_537));
    return out;
  }

  private static EngineConfig requester(String name, TransportPolicy... rules) {
    return RdmaTransferIT.rdmaConfig(name).withPolicies(TransportPolicies.of(rules));
  }

  private static TransportPolicy rule(PolicyMatch match, PolicyChoice choice) {
    return new TransportPolicy(match, choice);
  }

  private static long[] rails(TransferEngine engine) {
    return new long[] {
      RdmaTransferIT.railBytes(engine, "soft0"), RdmaTransferIT.railBytes(engine, "soft1")
    };
  }

  /**
   * Runs {@code tasks} in one submission, naming {@code named} (UNSPEC: routed by the rules),
   * checks every byte of both regions and that each task completed on {@code expected}; returns the
   * bytes each rail carried meanwhile.
   */
  private static long[] run(
      TransferEngine requester,
      RegisteredMemory local,
      RegisteredMemory remote,
      RemoteSegment peer,
      List<Task> tasks,
      Transport named,
      Transport expected) {
    Pattern.fill(remote.segment(), 0, REGION, REMOTE_SEED, 0);
    Pattern.fill(local.segment(), 0, REGION, LOCAL_GUARD, 0);
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> localSpans = new ArrayList<>();
    List<Span> remoteSpans = new ArrayList<>();
    for (Task t : tasks) {
      if (t.op == Op.READ) {
        requests.add(
            TransferRequest.read(
                    local, t.localOffset, peer, remote.regionId(), t.remoteOffset, t.length)
                .withTransport(named));
        localSpans.add(new Span(t.localOffset, t.length, REMOTE_SEED, t.remoteOffset));
      } else {
        Pattern.fill(local.segment(), t.localOffset, t.length, WRITE_SEED, t.localOffset);
        requests.add(
            TransferRequest.write(
                    local, t.localOffset, peer, remote.regionId(), t.remoteOffset, t.length)
                .withTransport(named));
        localSpans.add(new Span(t.localOffset, t.length, WRITE_SEED, t.localOffset));
        remoteSpans.add(new Span(t.remoteOffset, t.length, WRITE_SEED, t.localOffset));
      }
    }
    long[] before = rails(requester);
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus s = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(s.allCompleted(), () -> RdmaTransferIT.firstFailure(s));
    for (TaskResult r : s.tasks()) {
      Task t = tasks.get(r.index());
      assertEquals(t.length, r.bytes(), r::toString);
      assertEquals(expected, r.transport(), r::toString);
      assertEquals(t.op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
      if (named == Transport.UNSPEC) {
        assertEquals(Route.POLICY, r.route(), r::toString);
      }
    }
    assertEquals(-1, RegionCheck.check(local.segment(), localSpans, LOCAL_GUARD), "local region");
    assertEquals(
        -1, RegionCheck.check(remote.segment(), remoteSpans, REMOTE_SEED), "remote region");
    long[] after = rails(requester);
    return new long[] {after[0] - before[0], after[1] - before[1]};
  }

  private static long bytes(List<Task> tasks, Op op) {
    return tasks.stream().filter(t -> t.op == op).mapToLong(Task::length).sum();
  }

  @Test
  void everySliceOfARulesTasksIsPostedOnTheRailItsMaskNames() {
    EngineConfig config =
        requester(
            "railmask-requester",
            rule(
                PolicyMatch.any().withOp(TransportPolicy.Op.READ),
                PolicyChoice.of(TransportPolicy.Transport.RDMA).withRailMask(2L)),
            rule(
                PolicyMatch.any().withOp(TransportPolicy.Op.WRITE),
                PolicyChoice.of(TransportPolicy.Transport.RDMA).withRailMask(1L)));
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("railmask-src"));
        TransferEngine requester = TransferEngine.start(config)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      List<Task> tasks = tasks();
      long total = bytes(tasks, Op.READ) + bytes(tasks, Op.WRITE);

      // Named RDMA, no rule applies: the slices spread over both rails.
      long[] spread = run(requester, local, remote, peer, tasks, Transport.RDMA, Transport.RDMA);
      assertTrue(spread[0] > 0 && spread[1] > 0, () -> "both rails carry: " + str(spread));
      assertEquals(total, spread[0] + spread[1]);

      // Routed by the rules: READs posted on soft1 (rail 1) alone, WRITEs on soft0 (rail 0) alone.
      for (int round = 0; round < 2; round++) {
        long[] masked =
            run(requester, local, remote, peer, tasks, Transport.UNSPEC, Transport.RDMA);
        assertEquals(bytes(tasks, Op.READ), masked[1], () -> "READs on rail 1: " + str(masked));
        assertEquals(bytes(tasks, Op.WRITE), masked[0], () -> "WRITEs on rail 0: " + str(masked));
      }
    }
  }

  @Test
  void aMaskNamingNoRailOfThisEngineIsRefusedNamingItsPathOrMovesToTheRulesNextTransport() {
    EngineConfig config =
        requester(
            "norail-requester",
            rule(
                PolicyMatch.any().withMaxBytes(4096),
                PolicyChoice.of(TransportPolicy.Transport.RDMA).withRailMask(4L)),
            rule(
                PolicyMatch.any(),
                PolicyChoice.of(TransportPolicy.Transport.RDMA, TransportPolicy.Transport.TCP)
                    .withRailMask(4L)));
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("norail-src"));
        TransferEngine requester = TransferEngine.start(config)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(TransferRequest.read(local, 0, peer, remote.regionId(), 0, 4096))));
      batch.free();
      assertEquals(ErrorKind.UNAVAILABLE, e.kind());
      assertTrue(
          e.getMessage().contains("rule 0 (policies[0]) chose RDMA for it, but none is available"),
          e.getMessage());
      assertTrue(
          e.getMessage()
              .contains(
                  "RDMA: policies[0].choose.railMask (4) names none of the 2 rails of this engine"
                      + " (rails 0..1)"),
          e.getMessage());

      // Rule 1 names TCP after RDMA: its tasks run there, every byte checked.
      List<Task> larger =
          List.of(
              new Task(Op.READ, 5, 4096 + 1, (1L << 20) + 3),
              new Task(Op.WRITE, (4L << 20) + 3, (6L << 20) + 5, 65_537));
      long[] moved = run(requester, local, remote, peer, larger, Transport.UNSPEC, Transport.TCP);
      assertEquals(0, moved[0] + moved[1], () -> "no rail carried them: " + str(moved));
    }
  }

  @Test
  void aRuleWhoseMaskedRailHasNoHealthyPairMovesToItsNextTransportWhileTheOtherRailWorks() {
    SoftFaults faults = SoftFaults.create();
    EngineConfig config =
        requester(
            "downrail-requester",
            rule(
                PolicyMatch.any(),
                PolicyChoice.of(TransportPolicy.Transport.RDMA, TransportPolicy.Transport.TCP)
                    .withRailMask(2L)));
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("downrail-src"));
        TransferEngine requester = FaultInjection.start(config, RdmaTransferIT.hooks(faults))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      List<Task> one = List.of(new Task(Op.READ, 11, 4096 + 13, (1L << 20) + 1));
      long[] healthy = run(requester, local, remote, peer, one, Transport.UNSPEC, Transport.RDMA);
      assertEquals(0, healthy[0], () -> "rail 1 only: " + str(healthy));
      assertEquals(one.getFirst().length(), healthy[1]);

      // soft1's port goes down: its pair opens, and the rule's RDMA is unavailable though soft0
      // still works.
      faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(requester, "RdmaTransport", "railPairsOpen") == 1),
          "soft1's pair opened");
      long[] fellBack = run(requester, local, remote, peer, one, Transport.UNSPEC, Transport.TCP);
      assertEquals(0, fellBack[0] + fellBack[1], () -> "no rail carried it: " + str(fellBack));
      long[] named = run(requester, local, remote, peer, one, Transport.RDMA, Transport.RDMA);
      assertEquals(
          one.getFirst().length(), named[0], () -> "unruled, soft0 carries it: " + str(named));
    }
  }

  private static String str(long[] rails) {
    return java.util.Arrays.toString(rails);
  }
}
