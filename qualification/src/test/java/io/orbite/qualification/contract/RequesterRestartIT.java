package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * A requester restarted with the same identity and a new epoch, seen from the source: the old
 * incarnation's lanes are closed (fenced) by the new one's HELLO, drain, and return their loans
 * before the new incarnation's first transfer completes; the new one's READs and WRITEs are then
 * checked byte for byte on both sides, guards included.
 *
 * <p>The old incarnation's lanes are the test's own raw lanes with the requester's identity: a
 * process that dies on this host has its sockets closed by the kernel, so only lanes whose end
 * never reached the source (a host that died, a FIN lost with a link) stay open for a new
 * incarnation to fence. One of them holds a loan: a READ whose answer it never reads.
 */
class RequesterRestartIT {
  private static final long REGION = 4L << 20;
  private static final long HELD_BYTES = 16L << 20;
  private static final String NAME = "restarting-requester";

  @Test
  void theNewIncarnationsHelloFencesTheOldLanesAndTheirLoansReturnBeforeItsFirstTransfer(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    try (TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("fencing-source"))) {
      RegisteredMemory served = source.allocate(REGION, Access.READ_WRITE);
      Registration held = (Registration) source.allocate(HELD_BYTES, Access.READ);
      long sourceEpoch = source.localSegment().epoch();

      // The old incarnation: two lanes, the second with a READ of 16 MiB it never reads.
      EngineIdentity identity = new EngineIdentity(NAME, "127.0.0.1", port);
      List<RawLane> old = new ArrayList<>();
      for (int lane = 0; lane < 2; lane++) {
        RawLane raw = RawLane.connect(source.localSegment(), 64 * 1024);
        old.add(raw);
        FrameHeader ack = raw.hello(sourceEpoch, 0x01dL, lane, identity);
        assertEquals(FrameType.HELLO_ACK, ack.type());
        assertEquals(0, ack.status(), "the old incarnation's lane " + lane + " accepted");
      }
      old.get(1)
          .send(
              RawLane.header(
                  FrameType.READ_REQUEST, 0, 0, 9, sourceEpoch, held.regionId(), 0, HELD_BYTES));
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> held.loans() == 1),
          () -> "the old lane holds its loan: " + held.loans());

      try (EngineProcess requester = EngineProcess.startAt(NAME, logs, port, Map.of())) {
        assertEquals(identity.host() + ":" + port, requester.endpoint(), "the same identity");
        long local = Long.parseLong(requester.call("ALLOC " + REGION + " READ_WRITE"));
        requester.call("OPEN " + source.localSegment().endpoint());
        // The open's lanes were answered only once the old lanes had ended: no wait here.
        assertEquals(0, held.loans(), "the old incarnation's loan is back");
        assertEquals(0, ((Registration) served).loans());
        assertEquals(2, source.counters().sourceIncarnationsFenced());
        for (RawLane raw : old) {
          assertTrue(raw.awaitClosed(Duration.ofSeconds(10)).closed(), "an old lane was closed");
          raw.close();
        }

        ProcessRounds.readAndWrite(requester, local, served, 0x5eed);
        assertEquals(0, held.loans());
        assertEquals(2, source.counters().sourceIncarnationsFenced(), "fenced once");
      }
    }
  }
}
