package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
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
 * C3 with real processes: a source is SIGKILLed and replaced at the same endpoint by a fresh
 * incarnation, for three generations. Each stale RemoteSegment is refused EPOCH_MISMATCH, both when
 * reopened by its old identity and when used for data, with zero bytes moved and no new data
 * connection; a fresh open works, and the surviving requester's registration, identity and counters
 * simply continue.
 */
class EpochFencingIT {
  private static final long REGION = 4L << 20;
  private static final long CHUNK = 256 * 1024 + 3;

  @Test
  void aReplacedSourceIsReachedOnlyThroughAFreshOpenAndStaleSegmentsAreRefused(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    try (TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName("survivor"))) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long localRegion = local.regionId();
      var identity = requester.localSegment();
      EngineProcess source = EngineProcess.startAt("generations", logs, port, Map.of());
      List<RemoteSegment> stale = new ArrayList<>();
      try {
        for (int generation = 1; generation <= 3; generation++) {
          long remoteRegion = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
          RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
          assertEquals(source.epoch(), peer.descriptor().epoch());
          for (int round = 0; round < 3; round++) {
            readAndWriteRound(
                requester, source, local, peer, remoteRegion, generation * 10L + round);
          }
          // Every segment of an earlier generation is refused, by identity and for data.
          for (RemoteSegment old : stale) {
            assertStaleRefused(requester, local, old, source);
          }
          stale.add(peer);
          if (generation < 3) {
            long oldEpoch = source.epoch();
            source.kill();
            source = source.restart();
            assertEquals(
                peer.descriptor().endpoint(),
                source.endpoint(),
                "replacement at the same endpoint");
            assertNotEquals(oldEpoch, source.epoch(), "fresh epoch");
          }
        }
        // The newest segment is stale too once its source is replaced and the engine learns of it.
        source.kill();
        source = source.restart();
        RemoteSegment last = stale.get(stale.size() - 1);
        TransferException e =
            assertThrows(
                TransferException.class,
                () -> requester.openSegment(last.descriptor(), Duration.ofSeconds(10)));
        assertEquals(ErrorKind.EPOCH_MISMATCH, e.kind(), e::getMessage);
        for (RemoteSegment old : stale) {
          assertStaleRefused(requester, local, old, source);
        }
      } finally {
        source.close();
      }
      assertEquals(identity, requester.localSegment(), "the survivor's identity continues");
      assertEquals(localRegion, local.regionId(), "the survivor's registration continues");
      assertTrue(((Registration) local).visible());
    }
  }

  /** One READ round and one WRITE round, each with both regions checked in full. */
  private static void readAndWriteRound(
      TransferEngine requester,
      EngineProcess source,
      RegisteredMemory local,
      RemoteSegment peer,
      long remoteRegion,
      long seed)
      throws Exception {
    long data = seed * 2;
    long guard = seed * 2 + 1;
    source.call("FILL " + remoteRegion + " " + data);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      long lo = 5 + i * (CHUNK + 101);
      long ro = 9 + i * (CHUNK + 77);
      reads.add(TransferRequest.read(local, lo, peer, remoteRegion, ro, CHUNK));
      spans.add(new Span(lo, CHUNK, data, ro));
    }
    run(requester, reads);
    assertRegion(local.segment(), spans, guard, "requester after READ");
    assertEquals(
        "OK",
        source.ask("VERIFY " + remoteRegion + " " + data + " 0", List.of()),
        "source untouched by READ");

    long written = seed * 3 + 7;
    Pattern.fill(local.segment(), 0, REGION, written, 0);
    source.call("FILL " + remoteRegion + " " + guard);
    List<TransferRequest> writes = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      long lo = 13 + i * (CHUNK + 55);
      long ro = 1 + i * (CHUNK + 99);
      writes.add(TransferRequest.write(local, lo, peer, remoteRegion, ro, CHUNK));
      lines.add(ro + " " + CHUNK + " " + written + " " + lo);
    }
    run(requester, writes);
    assertEquals(
        "OK",
        source.ask("VERIFY " + remoteRegion + " " + guard + " " + lines.size(), lines),
        "source after WRITE: payload and guards");
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, written, 0), "requester untouched by WRITE");
  }

  private static void run(TransferEngine requester, List<TransferRequest> requests) {
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus status = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(status.allCompleted(), status::toString);
  }

  /**
   * A stale segment: reopening it by identity and submitting on it both fail EPOCH_MISMATCH; no
   * byte moves on either side and no data connection is opened.
   */
  private static void assertStaleRefused(
      TransferEngine requester, RegisteredMemory local, RemoteSegment stale, EngineProcess current)
      throws Exception {
    long guard = 0x5a1e;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    long lanesBefore = requester.counters().connectionsOpened();
    TransferException reopen =
        assertThrows(
            TransferException.class,
            () -> requester.openSegment(stale.descriptor(), Duration.ofSeconds(10)));
    assertEquals(ErrorKind.EPOCH_MISMATCH, reopen.kind(), reopen::getMessage);
    long regionId = stale.regions().get(0).regionId();
    Batch batch = requester.allocateBatch(2);
    TransferException submit =
        assertThrows(
            TransferException.class,
            () ->
                batch.submit(
                    List.of(
                        TransferRequest.read(local, 0, stale, regionId, 0, 4096),
                        TransferRequest.write(local, 8192, stale, regionId, 0, 4096))));
    assertEquals(ErrorKind.EPOCH_MISMATCH, submit.kind(), submit::getMessage);
    assertEquals(
        0,
        batch.status().tasks().size(),
        "nothing admitted: zero bytes, no remote effect, nothing to drain");
    batch.free();
    assertEquals(lanesBefore, requester.counters().connectionsOpened(), "no new data connection");
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "requester region untouched");
    assertTrue(current.alive());
  }
}
