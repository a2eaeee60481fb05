package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The rail circuit (C13) on a real fault: the requester's second rail loses its port (the software
 * provider's port DOWN: every WR its QPs start fails retry-exceeded). Its pair opens after the
 * failures (or at once, when the port monitor sees the port down); traffic carries on over the
 * first rail with every byte checked; once the port is back and the cooldown has passed, one trial
 * on a repaired QP reopens the pair, and the second rail carries payload again.
 */
class RdmaRailHealthIT {
  private static final long TASK = RailRounds.TASK;
  private static final int TASKS = RailRounds.TASKS;
  private static final long REGION = RailRounds.REGION;

  @Test
  void aDeadRailOpensItsCircuitTrafficMovesToTheOtherAndOneTrialReopensIt() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    EngineConfig requesterConfig =
        RdmaTransferIT.rdmaConfig("rail-requester")
            .withRdma(
                RdmaTransferIT.rdmaConfig("x").rdma().withRailPolicy(3, 10_000, 1_500, 60_000, 0));
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("rail-source"));
        TransferEngine requester = FaultInjection.start(requesterConfig, hooks)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      RailRounds t = new RailRounds(requester, local, remote, peer);

      assertEquals(0, t.failures(t.round(Op.READ, 1)), "healthy: every task completes");
      assertTrue(RdmaTransferIT.railBytes(requester, "soft1") > 0, "both rails in use");

      faults.setPortState("soft1", 1, Ibv.PORT_DOWN);
      assertTrue(
          Await.until(
              Duration.ofSeconds(30),
              () -> {
                t.round(Op.READ, 2);
                return RdmaPeerIT.charge(requester, "RdmaTransport", "railPairsOpen") >= 1;
              }),
          () -> "the dead rail's pair opened: " + owners(requester));

      // The circuit is open: every task goes over soft0 and completes, both directions checked.
      long soft1 = RdmaTransferIT.railBytes(requester, "soft1");
      for (Op op : Op.values()) {
        BatchStatus s = t.round(op, 3 + op.ordinal());
        assertEquals(0, t.failures(s), () -> op + " with the circuit open: " + s);
        t.checkLast(op);
      }
      assertEquals(
          soft1, RdmaTransferIT.railBytes(requester, "soft1"), "nothing went over the dead rail");

      faults.setPortState("soft1", 1, Ibv.PORT_ACTIVE);
      assertTrue(
          Await.until(
              Duration.ofSeconds(30),
              () -> {
                t.round(Op.READ, 5);
                return RdmaTransferIT.railBytes(requester, "soft1") > soft1
                    && RdmaPeerIT.charge(requester, "RdmaTransport", "railPairsOpen") == 0;
              }),
          () ->
              "a trial after the cooldown closed the pair and soft1 carries payload again: "
                  + owners(requester));
      assertTrue(RdmaPeerIT.charge(requester, "RdmaTransport", "qpsRepaired") >= 1);
      for (Op op : Op.values()) {
        BatchStatus s = t.round(op, 6 + op.ordinal());
        assertEquals(0, t.failures(s), () -> op + " after recovery: " + s);
        t.checkLast(op);
      }
    }
  }

  private static String owners(TransferEngine engine) {
    StringBuilder b = new StringBuilder();
    for (var o : engine.ownerView().owners()) {
      if (o.kind().startsWith("Rdma")) {
        b.append("\n  ").append(o.kind()).append(' ').append(o.state()).append(' ');
        b.append(o.charges()).append(' ').append(o.detail());
      }
    }
    return b.append("\n  lanes ").append(engine.counters().laneBytes()).toString();
  }
}
