package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tcp.sourceIdleTimeoutMillis} with real processes: a source whose requester's lanes took no
 * data request for the timeout closes them (its keepalives do not count), counts each, and holds no
 * loan; the requester's lanes reconnect by themselves, and its next transfers through the same
 * segment, in both directions, reach it again and are checked byte for byte on both sides.
 */
class SourceIdleCloseIT {
  private static final long REGION = 2L << 20;
  private static final long IDLE_MILLIS = 2_000;

  private static long tcpEndpoints(EngineProcess requester) {
    try {
      return Long.parseLong(requester.call("CHARGE TcpTransport endpoints"));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static long counter(EngineProcess p, String name) {
    try {
      for (String kv : p.call("COUNTERS").split("\\s+")) {
        if (kv.startsWith(name + "=")) {
          return Long.parseLong(kv.substring(name.length() + 1));
        }
      }
      throw new AssertionError("no counter " + name);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void idleSourceLanesCloseReturningTheirLoansAndTheNextTransfersReachTheSourceAgain(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    EngineConfig config =
        EngineConfig.defaults()
            .withName("idle-closing-source")
            .withTcp(TcpConfig.defaults().withSourceIdleTimeoutMillis(IDLE_MILLIS));
    try (TransferEngine source = TransferEngine.start(config);
        EngineProcess requester = EngineProcess.start("idle-requester", logs, Map.of())) {
      RegisteredMemory served = source.allocate(REGION, Access.READ_WRITE);
      long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
      requester.call("OPEN " + source.localSegment().endpoint());
      ProcessRounds.readAndWrite(requester, local, served, 0x1d1e);
      assertEquals(0, source.counters().sourceIdleCloses(), "busy lanes stay open");

      // Both lanes go quiet: each is closed once the timeout passed.
      int lanes = TcpConfig.DEFAULT_LANES;
      assertTrue(
          Await.until(
              Duration.ofSeconds(10).plusMillis(IDLE_MILLIS),
              () -> source.counters().sourceIdleCloses() >= lanes),
          () -> "idle closes: " + source.counters().sourceIdleCloses());
      assertEquals(0, source.owed().loans(), () -> source.owed().toString());
      assertEquals(0, source.counters().sourceIncarnationsFenced());

      // The requester's lanes kept sending keepalives all along (every 500 ms): they do not count
      // as requests. Its lanes reconnect by themselves, and the same segment, with no reopen,
      // reaches the source again.
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> counter(requester, "lanesRestored") >= lanes),
          "the requester's lanes reconnected");
      assertEquals(1, tcpEndpoints(requester), "the same endpoint, not a fresh one");
      ProcessRounds.readAndWrite(requester, local, served, 0x2d2e);
      assertEquals(0, source.owed().loans(), () -> source.owed().toString());
    }
  }
}
