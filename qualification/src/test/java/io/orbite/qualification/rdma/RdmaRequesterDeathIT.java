package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The other half of the reference's peer-restart profile: the requester, in another process,
 * SIGKILLed mid-traffic for three generations while this source engine survives. Its RDMA session
 * ends, every window it held is released with its loan, its persistent MR stays, and the next
 * generation's READs (UNSPEC, which picks RDMA between two RDMA engines) land verified in the
 * child.
 */
class RdmaRequesterDeathIT {
  private static final long REGION = 8L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void aRequesterKilledMidTrafficLeavesNoGrantOrLoanBehindAndTheSourcesMrsStay(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("survivor-src"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 91;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      long mrs = -1;
      for (int generation = 1; generation <= 3; generation++) {
        long bound = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");
        try (EngineProcess requester =
            EngineProcess.start("rdma-requester-" + generation, logs, RdmaPeerIT.RDMA_SOURCE)) {
          long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
          requester.call("OPEN " + source.localSegment().endpoint());
          assertEquals(
              "OK " + 8 * TASK,
              "OK "
                  + requester.call(
                      "READ " + local + " " + remote.regionId() + " " + TASK + " 8 " + data),
              "generation " + generation + ": eight READs landed, verified in the child");
          requester.call("LOOP " + local + " " + remote.regionId() + " " + TASK);
          long before = RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound");
          assertTrue(
              Await.until(
                  Duration.ofSeconds(10),
                  () -> RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") > before + 8),
              "traffic in flight when the requester dies");
          requester.kill();
        }
        assertTrue(
            RdmaPeerIT.charge(source, "RdmaTransport", "grantsBound") > bound,
            "the READs went over RDMA");
        assertTrue(
            Await.until(
                Duration.ofSeconds(20),
                () ->
                    source.owed().loans() == 0
                        && RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 0
                        && RdmaPeerIT.charge(source, "RdmaTransport", "sourceSessions") == 0),
            () ->
                "every window and loan came back: loans "
                    + source.owed().loans()
                    + ", "
                    + source.ownerView().owners());
        long now = RdmaPeerIT.charge(source, "RdmaContext", "mrsRegistered");
        if (mrs < 0) {
          mrs = now;
        } else {
          assertEquals(mrs, now, "the source's MRs stay: made once");
        }
        assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source untouched");
        assertTrue(source.quarantined().isEmpty(), source.quarantined()::toString);
      }
    }
  }
}
