package io.orbite.qualification.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.wire.Description;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The multi-process fault harness: engine processes that can be frozen (SIGSTOP), resumed
 * (SIGCONT), killed (SIGKILL) and replaced at the same endpoint by a fresh incarnation.
 */
class EngineProcessIT {
  private static Description describe(String endpoint, int timeoutMillis) {
    String[] hostPort = endpoint.split(":");
    return DescribeClient.describe(
        InetSocketAddress.createUnresolved(hostPort[0], Integer.parseInt(hostPort[1])),
        timeoutMillis);
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void aStoppedEngineAnswersNothingUntilResumed(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess engine = EngineProcess.start("frozen", logs, Map.of())) {
      assertEquals(engine.epoch(), describe(engine.endpoint(), 5000).epoch());
      engine.stop();
      TransferException e =
          assertThrows(TransferException.class, () -> describe(engine.endpoint(), 500));
      assertEquals(ErrorKind.TIMEOUT, e.kind(), e::getMessage);
      engine.resume();
      assertEquals(engine.epoch(), describe(engine.endpoint(), 5000).epoch());
    }
  }

  @Test
  void aKilledEngineIsReplacedAtTheSameEndpointWithAFreshEpoch(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port = freePort();
    EngineProcess first = EngineProcess.startAt("restarted", logs, port, Map.of());
    EngineProcess second = null;
    try {
      assertTrue(first.endpoint().endsWith(":" + port), first.endpoint());
      long firstEpoch = describe(first.endpoint(), 5000).epoch();
      first.kill();
      assertFalse(first.alive());
      second = first.restart();
      assertEquals(2, second.generation());
      assertEquals(first.endpoint(), second.endpoint(), "same endpoint");
      assertNotEquals(firstEpoch, second.epoch(), "a fresh epoch");
      assertEquals(second.epoch(), describe(second.endpoint(), 5000).epoch());
      assertThrows(IllegalStateException.class, second::restart, "only a dead engine is restarted");
    } finally {
      first.close();
      if (second != null) {
        second.close();
      }
    }
  }
}
