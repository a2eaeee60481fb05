package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * C11 from the source's side, for three requester generations: each requester process reads
 * (checked byte for byte) and is SIGKILLed in the middle of a stream of READs. The surviving source
 * releases every loan the dead requester's lanes held (its owed figures return to zero), its memory
 * is untouched, and it serves the next generation.
 */
class RequesterDeathIT {
  private static final long REGION = 64L << 20;
  private static final long LENGTH = 4L << 20;

  @Test
  void theSurvivingSourceReleasesEachDeadRequestersLoansAndServesItsReplacement(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("surviving-source"))) {
      RegisteredMemory served = source.allocate(REGION, Access.READ);
      long seed = 77;
      Pattern.fill(served.segment(), 0, REGION, seed, 0);
      EngineProcess requester = EngineProcess.start("doomed-requester", logs, Map.of());
      try {
        // Three generations: each requester reads, is killed mid-stream, and is replaced.
        for (int generation = 1; generation <= 3; generation++) {
          long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
          requester.call("OPEN " + source.localSegment().endpoint());
          String answer =
              requester.call(
                  "READ " + local + " " + served.regionId() + " " + LENGTH + " 8 " + seed);
          assertEquals(
              String.valueOf(8 * LENGTH),
              answer,
              "generation " + generation + " reads every byte right");
          requester.call("LOOP " + local + " " + served.regionId() + " " + LENGTH);
          long before = source.counters().sourceBytesRead();
          assertTrue(
              Await.until(
                  Duration.ofSeconds(20),
                  () -> source.counters().sourceBytesRead() > before + 4 * LENGTH),
              "the requester is reading");
          requester.kill();
          assertTrue(
              Await.until(Duration.ofSeconds(20), () -> source.owed().loans() == 0),
              () -> "the source still holds loans of the dead requester: " + source.owed());
          assertTrue(source.owed().isIdle(), () -> source.owed().toString());
          assertEquals(
              -1,
              Pattern.verify(served.segment(), 0, REGION, seed, 0),
              "the source's memory is untouched");
          requester = requester.restart();
        }
        assertTrue(((Registration) served).visible(), "the survivor keeps its registration");
      } finally {
        requester.close();
      }
    }
  }
}
