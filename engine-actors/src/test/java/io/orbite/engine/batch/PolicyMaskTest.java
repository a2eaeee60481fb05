package io.orbite.engine.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.BudgetConfig;
import io.orbite.config.PolicyChoice;
import io.orbite.config.PolicyMatch;
import io.orbite.config.TransportPolicies;
import io.orbite.config.TransportPolicy;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
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
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A policy rule's lane and rail masks on the engine's side: the routing step takes a transport for
 * a masked rule only when its channel can honour the mask (else the rule's next transport, else a
 * refusal naming the mask's path), and the mask travels on the task's work to the transport, across
 * a failover to TCP too. What the transports do with it is theirs to test (TCP's lanes, RDMA's
 * rails, with bytes).
 */
class PolicyMaskTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(ManualTime.config().withFallback(ConfigFactory.load()));

  private static final long REGION = 9;

  @AfterAll
  static void shutDown() {
    testKit.shutdownTestKit();
  }

  /** A channel of {@code units} lanes or rails that records its work; healthy ones as told. */
  private static final class MaskedChannel implements PeerChannel {
    final Transport transport;
    final int units;
    final ChannelGate gate;
    final List<TaskWork> work = new CopyOnWriteArrayList<>();
    long healthyUnits;

    MaskedChannel(Transport transport, int units) {
      this.transport = transport;
      this.units = units;
      this.healthyUnits = (1L << units) - 1;
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
      return healthyUnits != 0 && gate.active();
    }

    @Override
    public String maskRefusal(long mask) {
      if ((mask & ((1L << units) - 1)) == 0) {
        return "names none of the " + units + " units";
      }
      return (mask & healthyUnits) == 0 ? "names no healthy unit" : null;
    }

    @Override
    public void fence(long newerEpoch, String reason) {}
  }

  private final MaskedChannel tcp = new MaskedChannel(Transport.TCP, 2);
  private final MaskedChannel rdma = new MaskedChannel(Transport.RDMA, 2);

  private final Registration local =
      new Registration(7, Arena.ofAuto().allocate(1 << 20), Access.READ_WRITE, null);

  private PeerSegment segment() {
    return new PeerSegment(
            tcp.peer(), List.of(new RemoteRegion(REGION, 1 << 20, Access.READ_WRITE)), tcp)
        .withChannel(rdma, null);
  }

  private TransferRequest read(PeerSegment peer, long length) {
    return TransferRequest.read(local, 0, peer, REGION, 0, length);
  }

  private static TransportSelector selector(PolicyChoice... choices) {
    TransportPolicy[] rules = new TransportPolicy[choices.length];
    for (int i = 0; i < choices.length; i++) {
      // Rule i matches tasks of i + 1 bytes and up; the last one every task.
      rules[i] =
          new TransportPolicy(
              i + 1 < choices.length ? PolicyMatch.any().withMaxBytes(i + 1) : PolicyMatch.any(),
              choices[i]);
    }
    return TransportSelector.compile(TransportPolicies.of(rules));
  }

  @Test
  void aRailMaskWhoseRailsCannotRunMovesToTheRulesNextTransport() {
    PeerSegment peer = segment();
    TransportSelector s =
        selector(
            PolicyChoice.of(TransportPolicy.Transport.RDMA, TransportPolicy.Transport.TCP)
                .withRailMask(2L));
    RequestValidator.Routed r = RequestValidator.validate(List.of(read(peer, 8)), s);
    assertSame(rdma, r.routings()[0].channel(), "rail 1 is healthy");
    assertEquals(Route.POLICY, r.routings()[0].route());
    assertEquals(2L, r.railMask(0));
    assertEquals(TaskWork.ANY, r.laneMask(0));
    rdma.healthyUnits = 0b01;
    r = RequestValidator.validate(List.of(read(peer, 8)), s);
    assertSame(tcp, r.routings()[0].channel(), "rail 0 alone is healthy: not the rule's");
    assertEquals(0, r.rule(0));
  }

  @Test
  void whenNoTransportCanHonourTheMaskTheRefusalNamesTheRuleAndTheMasksPath() {
    PeerSegment peer = segment();
    TransportSelector s =
        selector(
            PolicyChoice.of(TransportPolicy.Transport.TCP),
            PolicyChoice.of(TransportPolicy.Transport.RDMA).withRailMask(4L));
    TransferException e =
        assertThrows(
            TransferException.class,
            () -> RequestValidator.validate(List.of(read(peer, 1), read(peer, 8)), s));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertEquals(
        "UNAVAILABLE: task 1: rule 1 (policies[1]) chose RDMA for it, but none is available to "
            + peer.label()
            + ": RDMA: policies[1].choose.railMask (4) names none of the 2 units",
        e.getMessage());
    TransportSelector lanes =
        selector(
            PolicyChoice.of(TransportPolicy.Transport.SHM, TransportPolicy.Transport.TCP)
                .withLaneMask(Long.MIN_VALUE));
    e =
        assertThrows(
            TransferException.class,
            () -> RequestValidator.validate(List.of(read(peer, 8)), lanes));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(
        e.getMessage()
            .endsWith(
                "TCP: policies[0].choose.laneMask (9223372036854775808) names none of the 2"
                    + " units"),
        e.getMessage());
  }

  // ---- through a batch --------------------------------------------------------------------------

  private final EngineTally counters = new EngineTally();
  private final OwnerBoard board = new OwnerBoard();
  private final AdmissionGate gate = new AdmissionGate(BudgetConfig.defaults());
  private long lease;

  private BatchCore submit(List<TransferRequest> requests, TransportSelector selector) {
    String name = "mask-" + System.nanoTime();
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
  void theMasksTravelOnTheWorkAndTheLaneMaskStaysAcrossAFailoverToTcp() {
    PeerSegment peer = segment();
    TransportSelector s =
        selector(
            PolicyChoice.of(TransportPolicy.Transport.TCP).withLaneMask(1L),
            PolicyChoice.of(TransportPolicy.Transport.RDMA, TransportPolicy.Transport.TCP)
                .withRailMask(2L)
                .withLaneMask(2L));
    BatchCore core =
        submit(
            List.of(read(peer, 1), read(peer, 8), read(peer, 8).withTransport(Transport.TCP)), s);
    assertEquals(2, tcp.work.size());
    TaskWork first = tcp.work.get(0);
    assertEquals(0, first.taskIndex());
    assertEquals(1L, first.laneMask(), "rule 0's lanes");
    assertEquals(TaskWork.ANY, first.railMask());
    TaskWork named = tcp.work.get(1);
    assertEquals(2, named.taskIndex());
    assertEquals(TaskWork.ANY, named.laneMask(), "a named transport: no rule, no mask");
    assertEquals(1, rdma.work.size());
    TaskWork second = rdma.work.getFirst();
    assertEquals(2L, second.railMask());
    assertEquals(2L, second.laneMask());
    // RDMA fails it drained, nothing posted: it fails over to the TCP the rule lists, its lanes
    // still the rule's.
    second
        .sink()
        .deliver(
            Receipts.of(Receipt.failed(1, ErrorKind.UNAVAILABLE, RemoteEffect.NONE, "closed")));
    assertEquals(3, tcp.work.size());
    TaskWork moved = tcp.work.get(2);
    assertEquals(1, moved.taskIndex());
    assertEquals(2L, moved.laneMask(), "rule 1's lane mask, on TCP after the failover");
    for (TaskWork w : tcp.work) {
      w.sink().deliver(Receipts.of(Receipt.ok(w.taskIndex(), w.lengthBytes(), RemoteEffect.NONE)));
    }
    List<TaskResult> results = core.status(lease).tasks();
    for (TaskResult r : results) {
      assertEquals(TaskState.COMPLETED, r.state(), r::toString);
    }
    assertEquals(Route.FAILED_OVER, results.get(1).route());
    assertEquals(1, results.get(1).rule());
    core.free(lease);
  }
}
