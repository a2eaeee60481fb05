package io.orbite.qualification.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.ShmConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A source counts what it served over SHM though it never sees those copies (issue 38): a requester
 * process copies out of and into the source's memory over SHM, and its TCP lanes' keepalives report
 * the bytes; the source's ledger then shows exactly the SHM READ and WRITE bytes under that
 * requester, beside nothing over TCP. The bytes themselves are checked on both sides.
 */
class ShmServedIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 256 * 1024;
  private static final int TASKS = 8;

  @Test
  void theSourceCountsTheShmBytesItsRequesterReportsOnItsKeepalives(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    EngineConfig config =
        EngineConfig.defaults()
            .withName("shm-served-source")
            .withShm(ShmConfig.defaults().withEnabled(true));
    try (TransferEngine source = TransferEngine.start(config);
        EngineProcess requester =
            EngineProcess.start(
                "shm-served-requester",
                logs,
                Map.of(
                    "ORBITE_CONF",
                    "{\"shm\":{\"enabled\":true},\"tcp\":{\"keepaliveIntervalMillis\":100,"
                        + "\"livenessTimeoutMillis\":2000}}"))) {
      RegisteredMemory served = source.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(served.segment(), 0, REGION, 11, 0);
      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      requester.call("FILL " + local + " 12");
      requester.call("OPEN " + source.localSegment().endpoint());
      // READs: the source's [0, 2 MiB) into the requester's [0, 2 MiB).
      assertEquals(
          Long.toString(TASKS * TASK),
          requester.call(
              "XFER READ SHM "
                  + local
                  + " "
                  + TASKS
                  + " "
                  + TASK
                  + " "
                  + TASK
                  + " 0 "
                  + served.regionId()
                  + " 0"));
      assertEquals(
          "OK",
          requester.ask("VERIFY " + local + " 12 1", List.of("0 " + TASKS * TASK + " 11 0")),
          "the requester's region: the READs' bytes, guards elsewhere");
      // WRITEs: the requester's [2 MiB, 3 MiB) into the source's [2 MiB, 3 MiB).
      long half = TASKS / 2;
      long at = TASKS * TASK;
      assertEquals(
          Long.toString(half * TASK),
          requester.call(
              "XFER WRITE SHM "
                  + local
                  + " "
                  + half
                  + " "
                  + TASK
                  + " "
                  + TASK
                  + " "
                  + at
                  + " "
                  + served.regionId()
                  + " "
                  + at));
      assertEquals(-1, Pattern.verify(served.segment(), 0, at, 11, 0), "source before the WRITEs");
      assertEquals(
          -1, Pattern.verify(served.segment(), at, half * TASK, 12, at), "the WRITEs' bytes");
      long end = at + half * TASK;
      assertEquals(-1, Pattern.verify(served.segment(), end, REGION - end, 11, end), "guard");

      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () ->
                  source.sourceLedger().bytes(Transport.SHM, Op.READ) == TASKS * TASK
                      && source.sourceLedger().bytes(Transport.SHM, Op.WRITE) == half * TASK),
          () -> "the keepalives reported the SHM bytes: " + source.sourceLedger());
      SourceLedger ledger = source.sourceLedger();
      assertEquals(0, ledger.bytes(Transport.TCP, Op.READ), ledger::toString);
      assertEquals(0, ledger.bytes(Transport.TCP, Op.WRITE), ledger::toString);
      assertTrue(
          ledger.served().stream()
              .anyMatch(s -> s.transport() == Transport.SHM && !s.requester().isEmpty()),
          ledger::toString);
    }
  }
}
