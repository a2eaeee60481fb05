package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.PolicyChoice;
import io.orbite.config.PolicyMatch;
import io.orbite.config.TransportPolicies;
import io.orbite.config.TransportPolicy;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Priority;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.Route;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The transport selector: which rule matches (first match, each condition), what the routing step
 * then chooses (the rule's transports in order of availability, and a refusal naming the rule when
 * none is available), what it leaves alone (a named transport, no match, no policies), and what a
 * batch records and does with the choice: the rule index on the result, the priority, and a
 * failover only to a TCP the rule lists. And that routing with policies allocates no object per
 * task.
 */
class TransportSelectorTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));

  private static final long REGION = 9;
  private static final long OTHER_REGION = 10;
  private static final long SMALL = 64 * 1024;

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** A channel that records what it is handed and owes one receipt per task. */
  private static final class FakeChannel implements PeerChannel {
    final Transport transport;
    final ChannelGate gate;
    final List<TaskWork> work = new CopyOnWriteArrayList<>();
    boolean healthy = true;

    FakeChannel(Transport transport) {
      this.transport = transport;
      this.gate = new ChannelGate("the fake " + transport + " channel");
    }

    @Override
    public SegmentDescriptor peer() {
      return new SegmentDescriptor("10.0.3.4", 7000, 0x5e1fL);
    }

    @Override
    public Transport transport() {
      return transport;
    }

    @Override
    public int dispatch(TaskWork task) {
      work.add(task);
      return 1;
    }

    @Override
    public void flush() {}

    @Override
    public ChannelGate gate() {
      return gate;
    }

    @Override
    public boolean healthy() {
      return healthy && gate.active();
    }

    @Override
    public void fence(long newerEpoch, String reason) {}
  }

  private final FakeChannel tcp = new FakeChannel(Transport.TCP);
  private final FakeChannel shm = new FakeChannel(Transport.SHM);
  private final FakeChannel rdma = new FakeChannel(Transport.RDMA);

  /** Caller-owned (REGISTERED) local memory. */
  private final Registration local =
      new Registration(7, Arena.ofAuto().allocate(4 << 20), Access.READ_WRITE, null);

  /** A segment over TCP whose SHM way reaches {@link #REGION} only, and an RDMA way. */
  private PeerSegment segment() {
    List<RemoteRegion> regions =
        List.of(
            new RemoteRegion(REGION, 4 << 20, Access.READ_WRITE),
            new RemoteRegion(OTHER_REGION, 4 << 20, Access.READ_WRITE));
    return new PeerSegment(tcp.peer(), regions, tcp)
        .withChannel(shm, new long[] {REGION})
        .withChannel(rdma, null);
  }

  private static TransportPolicy rule(PolicyMatch match, TransportPolicy.Transport... order) {
    return new TransportPolicy(match, PolicyChoice.of(order[0], tail(order)));
  }

  private static TransportPolicy.Transport[] tail(TransportPolicy.Transport[] order) {
    return java.util.Arrays.copyOfRange(order, 1, order.length);
  }

  private static TransportSelector selector(TransportPolicy... rules) {
    return TransportSelector.compile(TransportPolicies.of(rules));
  }

  /** "size <= 64 KiB -> SHM, larger -> TCP". */
  private static TransportSelector bySize() {
    return selector(
        rule(PolicyMatch.any().withMaxBytes(SMALL), TransportPolicy.Transport.SHM),
        rule(PolicyMatch.any().withMinBytes(SMALL + 1), TransportPolicy.Transport.TCP));
  }

  private TransferRequest read(PeerSegment peer, long region, long length) {
    return TransferRequest.read(local, 0, peer, region, 0, length);
  }

  // ---- matching ---------------------------------------------------------------------------------

  @Test
  void theFirstRuleWhoseEveryConditionHoldsMatches() {
    TransportSelector s =
        selector(
            rule(
                PolicyMatch.any().withOp(TransportPolicy.Op.WRITE).withMaxBytes(100),
                TransportPolicy.Transport.SHM),
            rule(
                PolicyMatch.any().withPriority(TransportPolicy.Priority.LOW),
                TransportPolicy.Transport.TCP),
            rule(
                PolicyMatch.any().withMemory(TransportPolicy.Memory.SHARED),
                TransportPolicy.Transport.SHM),
            rule(
                PolicyMatch.any().withMinBytes(1000).withMaxBytes(2000),
                TransportPolicy.Transport.RDMA));
    long all = -1L;
    int registered = TransportPolicy.Memory.REGISTERED.ordinal();
    int shared = TransportPolicy.Memory.SHARED.ordinal();
    assertEquals(0, s.match(io.orbite.engine.Op.WRITE, 100, Priority.LOW, shared, all));
    assertEquals(1, s.match(io.orbite.engine.Op.WRITE, 101, Priority.LOW, shared, all));
    assertEquals(1, s.match(io.orbite.engine.Op.READ, 100, Priority.LOW, shared, all));
    assertEquals(2, s.match(io.orbite.engine.Op.READ, 100, Priority.HIGH, shared, all));
    assertEquals(3, s.match(io.orbite.engine.Op.READ, 1000, Priority.HIGH, registered, all));
    assertEquals(3, s.match(io.orbite.engine.Op.READ, 2000, Priority.MEDIUM, registered, all));
    assertEquals(-1, s.match(io.orbite.engine.Op.READ, 2001, Priority.HIGH, registered, all));
    assertEquals(-1, s.match(io.orbite.engine.Op.READ, 999, Priority.HIGH, registered, all));
    assertEquals(
        3, s.match(io.orbite.engine.Op.WRITE, 1000, Priority.HIGH, shared, 0b1000), "peer mask");
    assertEquals(-1, s.match(io.orbite.engine.Op.WRITE, 1000, Priority.HIGH, shared, 0b0011));
  }

  @Test
  void thePeerPatternIsMatchedAgainstTheSegmentsEndpoint() {
    TransportSelector s =
        selector(
            rule(PolicyMatch.any().withPeer("10.0.*:*"), TransportPolicy.Transport.SHM),
            rule(PolicyMatch.any().withPeer("*:7001"), TransportPolicy.Transport.SHM),
            rule(PolicyMatch.any(), TransportPolicy.Transport.TCP));
    assertEquals(0b101, s.peerMask(segment()), "10.0.3.4:7000");
  }

  @Test
  void theMemoryKindIsWhatTheRegistrationSays() {
    SharedBacking memfd =
        new SharedBacking() {
          @Override
          public int fd() {
            return 3;
          }

          @Override
          public long inode() {
            return 1;
          }

          @Override
          public long offset() {
            return 0;
          }

          @Override
          public boolean tryFence() {
            return true;
          }
        };
    var segment = Arena.ofAuto().allocate(64);
    assertEquals(TransportPolicy.Memory.REGISTERED.ordinal(), TransportSelector.memoryKind(local));
    assertEquals(
        TransportPolicy.Memory.ALLOCATED.ordinal(),
        TransportSelector.memoryKind(
            new Registration(1, segment, Access.READ_WRITE, Arena.ofShared())));
    assertEquals(
        TransportPolicy.Memory.SHARED.ordinal(),
        TransportSelector.memoryKind(
            new Registration(1, segment, Access.READ_WRITE, Arena.ofShared(), memfd)));
  }

  // ---- routing ----------------------------------------------------------------------------------

  @Test
  void smallGoesShmAndLargeGoesTcpEachNamingItsRule() {
    PeerSegment peer = segment();
    RequestValidator.Routed routed =
        RequestValidator.validate(
            List.of(read(peer, REGION, SMALL), read(peer, REGION, SMALL + 1)), bySize());
    assertSame(shm, routed.routings()[0].channel());
    assertEquals(Route.POLICY, routed.routings()[0].route());
    assertEquals(0, routed.rule(0));
    assertSame(tcp, routed.routings()[1].channel());
    assertEquals(Route.POLICY, routed.routings()[1].route());
    assertEquals(1, routed.rule(1));
  }

  @Test
  void aNamedTransportANonMatchingRequestAndNoPoliciesKeepTodaysRouting() {
    PeerSegment peer = segment();
    TransportSelector onlySmall =
        selector(rule(PolicyMatch.any().withMaxBytes(SMALL), TransportPolicy.Transport.TCP));
    RequestValidator.Routed routed =
        RequestValidator.validate(
            List.of(
                read(peer, REGION, SMALL).withTransport(Transport.SHM),
                read(peer, REGION, SMALL + 1)),
            onlySmall);
    assertSame(shm, routed.routings()[0].channel(), "named SHM: the rule says TCP, not heard");
    assertEquals(Route.REQUESTED, routed.routings()[0].route());
    assertEquals(-1, routed.rule(0));
    assertSame(shm, routed.routings()[1].channel(), "no rule matched: UNSPEC as before");
    assertEquals(Route.SHM_SAME_HOST, routed.routings()[1].route());
    assertEquals(-1, routed.rule(1));
    assertNull(routed.rules(), "no rule chose any task: no array");
    RequestValidator.Routed plain =
        RequestValidator.validate(List.of(read(peer, REGION, SMALL)), TransportSelector.NONE);
    assertEquals(Route.SHM_SAME_HOST, plain.routings()[0].route());
    assertEquals(-1, plain.rule(0));
  }

  @Test
  void theRulesTransportsAreTriedInOrderOfAvailability() {
    PeerSegment peer = segment();
    TransportSelector s =
        selector(
            rule(
                PolicyMatch.any(),
                TransportPolicy.Transport.SHM,
                TransportPolicy.Transport.RDMA,
                TransportPolicy.Transport.TCP));
    // SHM does not reach the other region; RDMA does.
    RequestValidator.Routed r = RequestValidator.validate(List.of(read(peer, OTHER_REGION, 1)), s);
    assertSame(rdma, r.routings()[0].channel());
    // RDMA without a healthy rail pair: TCP.
    rdma.healthy = false;
    r = RequestValidator.validate(List.of(read(peer, OTHER_REGION, 1)), s);
    assertSame(tcp, r.routings()[0].channel());
    assertEquals(Route.POLICY, r.routings()[0].route());
    // SHM closed: RDMA unhealthy, so TCP, for the region SHM reaches too.
    shm.gate.close(ChannelGate.Why.LOCAL_CLOSE, "test");
    r = RequestValidator.validate(List.of(read(peer, REGION, 1)), s);
    assertSame(tcp, r.routings()[0].channel());
  }

  @Test
  void whenNoneOfTheRulesTransportsIsAvailableTheRefusalNamesTheRuleAndEachReason() {
    PeerSegment peer = segment();
    rdma.healthy = false;
    TransportSelector s =
        selector(
            rule(PolicyMatch.any().withMinBytes(2), TransportPolicy.Transport.TCP),
            rule(PolicyMatch.any(), TransportPolicy.Transport.SHM, TransportPolicy.Transport.RDMA));
    TransferException e =
        assertThrows(
            TransferException.class,
            () ->
                RequestValidator.validate(
                    List.of(read(peer, REGION, 2), read(peer, OTHER_REGION, 1)), s));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    String m = e.getMessage();
    assertTrue(
        m.contains("task 1: rule 1 (policies[1]) chose SHM, RDMA for it, but none is available"),
        m);
    assertTrue(m.contains("SHM: region 10 is not exported through SHM"), m);
    assertTrue(m.contains("RDMA: no rail pair to the peer is healthy now (C13)"), m);
  }

  // ---- through a batch --------------------------------------------------------------------------

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private int batches;
  private long lease;

  private BatchCore submit(List<TransferRequest> requests, TransportSelector selector) {
    String name = "policy-" + ++batches;
    BatchCore core =
        new BatchCore(
            name,
            8,
            gate,
            counters,
            board,
            Duration.ofSeconds(10),
            Duration.ofSeconds(10),
            new QuarantineLedger(),
            Runnable::run,
            1);
    ActorRef<BatchActor.Command> actor =
        testKit.spawn(BatchActor.create(core, board, System::nanoTime), name);
    core.bind(actor);
    assertTrue(gate.tryBatch().granted());
    lease = core.lease();
    core.dispatch(
        core.admit(
            lease, requests, RequestValidator.validate(requests, selector), System.nanoTime()));
    return core;
  }

  @Test
  void everyTaskResultRecordsItsRuleAndARulesPriorityReplacesOnlyTheDefault() {
    PeerSegment peer = segment();
    TransportSelector s =
        selector(
            new TransportPolicy(
                PolicyMatch.any().withMaxBytes(SMALL),
                PolicyChoice.of(TransportPolicy.Transport.SHM)
                    .withPriority(TransportPolicy.Priority.LOW)),
            rule(PolicyMatch.any(), TransportPolicy.Transport.TCP));
    List<TransferRequest> requests =
        List.of(
            read(peer, REGION, SMALL),
            read(peer, REGION, SMALL).withPriority(Priority.MEDIUM),
            read(peer, REGION, SMALL + 1),
            read(peer, REGION, 8).withTransport(Transport.TCP));
    BatchCore core = submit(requests, s);
    assertEquals(2, shm.work.size());
    assertEquals(Priority.LOW, shm.work.get(0).priority(), "HIGH, the default: the rule's LOW");
    assertEquals(Priority.MEDIUM, shm.work.get(1).priority(), "set by the request: kept");
    assertEquals(2, tcp.work.size());
    assertEquals(Priority.HIGH, tcp.work.get(0).priority(), "rule 1 gives no priority");
    for (TaskWork w : shm.work) {
      w.sink().deliver(Receipts.of(Receipt.ok(w.taskIndex(), w.lengthBytes(), RemoteEffect.NONE)));
    }
    for (TaskWork w : tcp.work) {
      w.sink().deliver(Receipts.of(Receipt.ok(w.taskIndex(), w.lengthBytes(), RemoteEffect.NONE)));
    }
    List<TaskResult> results = core.status(lease).tasks();
    int[] rules = {0, 0, 1, TaskResult.NO_RULE};
    Transport[] transports = {Transport.SHM, Transport.SHM, Transport.TCP, Transport.TCP};
    Route[] routes = {Route.POLICY, Route.POLICY, Route.POLICY, Route.REQUESTED};
    for (TaskResult r : results) {
      assertEquals(TaskState.COMPLETED, r.state(), r::toString);
      assertEquals(rules[r.index()], r.rule(), r::toString);
      assertEquals(transports[r.index()], r.transport(), r::toString);
      assertEquals(routes[r.index()], r.route(), r::toString);
    }
    core.free(lease);
  }

  @Test
  void aTaskARuleSentToShmFailsOverToTcpOnlyWhenTheRuleListsTcpAfterIt() {
    PeerSegment peer = segment();
    BatchCore shmOnly =
        submit(
            List.of(read(peer, REGION, 8)),
            selector(rule(PolicyMatch.any(), TransportPolicy.Transport.SHM)));
    TaskWork w = shm.work.getFirst();
    w.sink()
        .deliver(
            Receipts.of(Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "closed")));
    TaskResult r = shmOnly.status(lease).tasks().getFirst();
    assertEquals(TaskState.FAILED, r.state(), r::toString);
    assertEquals(Transport.SHM, r.transport());
    assertEquals(0, r.rule());
    assertTrue(tcp.work.isEmpty(), "the rule said SHM only: not moved to TCP");
    shmOnly.free(lease);

    BatchCore shmThenTcp =
        submit(
            List.of(read(peer, REGION, 8)),
            selector(
                rule(
                    PolicyMatch.any(),
                    TransportPolicy.Transport.SHM,
                    TransportPolicy.Transport.TCP)));
    w = shm.work.get(1);
    w.sink()
        .deliver(
            Receipts.of(Receipt.failed(0, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "closed")));
    assertEquals(1, tcp.work.size(), "failed over to the TCP the rule lists");
    tcp.work.getFirst().sink().deliver(Receipts.of(Receipt.ok(0, 8, RemoteEffect.NONE)));
    r = shmThenTcp.status(lease).tasks().getFirst();
    assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    assertEquals(Transport.TCP, r.transport());
    assertEquals(Route.FAILED_OVER, r.route());
    assertEquals(0, r.rule(), "the rule that chose its transport, across the failover");
    shmThenTcp.free(lease);
  }

  @Test
  void theEngineConfigsPoliciesCompile() {
    EngineConfig c =
        EngineConfig.fromJson(
            "{\"policies\":[{\"match\":{\"maxBytes\":65536},"
                + "\"choose\":{\"transports\":[\"SHM\",\"TCP\"]}}]}");
    TransportSelector s = TransportSelector.compile(c.policies());
    assertTrue(s.active());
    assertFalse(TransportSelector.NONE.active());
    assertTrue(s.mayFailOver(0, Transport.SHM));
    assertFalse(s.mayFailOver(0, Transport.TCP), "TCP is the last resort");
    assertTrue(s.mayFailOver(-1, Transport.SHM), "no rule: as before");
  }

  // ---- cost -------------------------------------------------------------------------------------

  @Test
  void routingThousandsOfTasksWithPoliciesAllocatesNoObjectPerTask() throws Exception {
    PeerSegment peer = segment();
    int n = 4096;
    List<TransferRequest> requests = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      requests.add(read(peer, REGION, i % 2 == 0 ? SMALL : SMALL + 1));
    }
    TransportSelector s =
        selector(
            rule(
                PolicyMatch.any().withPeer("10.0.*:*").withMaxBytes(1),
                TransportPolicy.Transport.TCP),
            rule(PolicyMatch.any().withMaxBytes(SMALL), TransportPolicy.Transport.SHM),
            rule(PolicyMatch.any().withMinBytes(SMALL + 1), TransportPolicy.Transport.TCP));
    for (int i = 0; i < 200; i++) {
      RequestValidator.validate(requests, s);
      RequestValidator.validate(requests, TransportSelector.NONE);
    }
    long before = allocatedBytes();
    RequestValidator.validate(requests, TransportSelector.NONE);
    long without = allocatedBytes() - before;
    before = allocatedBytes();
    RequestValidator.Routed routed = RequestValidator.validate(requests, s);
    long with = allocatedBytes() - before;
    assertEquals(2, routed.rule(n - 1));
    // One short per task in one array, the endpoint text once, the selection state once: an
    // object per task (16 B or more) would exceed this by far.
    long extra = with - without;
    assertTrue(extra <= 2L * n + 1024, () -> extra + " B more with policies, for " + n + " tasks");
  }

  /** This thread's allocated bytes (reflective: see PostQueueTest). */
  private static long allocatedBytes() throws Exception {
    Object bean =
        Class.forName("java.lang.management.ManagementFactory")
            .getMethod("getThreadMXBean")
            .invoke(null);
    return (long)
        Class.forName("com.sun.management.ThreadMXBean")
            .getMethod("getCurrentThreadAllocatedBytes")
            .invoke(bean);
  }
}
