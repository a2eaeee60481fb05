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
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reaching a restarted peer (C3, issue 38 item 3): a source process is SIGKILLed and restarted at
 * the same port with a new epoch. At once, without a retry, {@code openSegment} by the descriptor
 * the replacement published and {@code reopen} of the old segment both reach it, over TCP and over
 * SHM (the transport forced in every request), and READs and WRITEs through each move verified
 * bytes on both sides; {@code reopen} lists the region the replacement no longer publishes. The old
 * segment stays refused {@code EPOCH_MISMATCH}, nothing admitted, no byte moved. In this JVM:
 * {@code reopen} of a segment whose incarnation still runs reaches it again, and a file segment is
 * not reopened.
 */
class ReopenIT {
  private static final long REGION = 2L << 20;
  private static final long CHUNK = 128 * 1024 + 3;
  private static final int TASKS = 4;
  private static final Duration OPEN = Duration.ofSeconds(10);

  @Test
  void aRestartedSourceIsReachedAtOnceByItsNewDescriptorAndByReopenOverTcp(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    restartThenReach(Transport.TCP, Map.of(), logs);
  }

  @Test
  void aRestartedSourceIsReachedAtOnceByItsNewDescriptorAndByReopenOverShm(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    restartThenReach(Transport.SHM, Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"), logs);
  }

  private static void restartThenReach(Transport transport, Map<String, String> env, Path logs)
      throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    String name = "reopen-" + transport.name().toLowerCase();
    try (TransferEngine requester =
        TransferEngine.start(EngineConfig.defaults().withName(name + "-requester"))) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      EngineProcess first = EngineProcess.startAt(name + "-source", logs, port, env);
      EngineProcess second = null;
      try {
        long kept = Long.parseLong(first.call("ALLOC " + REGION + " READ_WRITE"));
        long dropped = Long.parseLong(first.call("ALLOC 65536 READ_WRITE"));
        RemoteSegment old = requester.openSegment(first.endpoint(), OPEN);
        if (transport == Transport.SHM) {
          assertTrue(old.sharedReachable(kept), "SHM reaches the same-host source");
        }
        // The table now remembers this incarnation's epoch as the newest at the endpoint.
        round(requester, first, local, old, kept, transport, 1);

        first.kill();
        second = first.restart();
        assertNotEquals(first.epoch(), second.epoch(), "a fresh epoch");
        assertEquals(kept, Long.parseLong(second.call("ALLOC " + REGION + " READ_WRITE")));

        // The descriptor the replacement's application publishes: one call, no retry.
        SegmentDescriptor published =
            new SegmentDescriptor(old.descriptor().host(), port, second.epoch());
        RemoteSegment byDescriptor = requester.openSegment(published, OPEN);
        assertEquals(published, byDescriptor.descriptor());
        assertEquals(List.of(), byDescriptor.regionsGone());
        RemoteSegment reopened = requester.reopen(old, OPEN);
        assertEquals(published, reopened.descriptor(), "reopen reaches the replacement");
        RemoteRegion gone = old.region(dropped).orElseThrow();
        assertEquals(List.of(gone), reopened.regionsGone(), "the region not published again");
        assertTrue(reopened.region(kept).isPresent());
        if (transport == Transport.SHM) {
          assertTrue(byDescriptor.sharedReachable(kept), "SHM to the replacement");
          assertTrue(reopened.sharedReachable(kept), "SHM to the replacement");
        }

        round(requester, second, local, byDescriptor, kept, transport, 2);
        round(requester, second, local, reopened, kept, transport, 3);
        refusedGone(requester, local, reopened, dropped);
        assertStaleRefused(requester, local, old, second, kept);
        old.close();
        byDescriptor.close();
        reopened.close();
      } finally {
        first.kill();
        if (second != null) {
          second.close();
        }
      }
    }
  }

  /**
   * The incarnation still runs: reopen reaches it again (a new reference to the same entry), lists
   * the region it unregistered since, and moves verified bytes; the old segment keeps working.
   */
  @Test
  void reopenOfALiveIncarnationReachesItAgainAndListsTheRegionsItNoLongerPublishes() {
    try (EnginePair pair = new EnginePair()) {
      RegisteredMemory kept = EnginePair.guarded(pair.source, REGION, Access.READ_WRITE, 41);
      RegisteredMemory dropped = EnginePair.guarded(pair.source, 4096, Access.READ, 42);
      RegisteredMemory local = EnginePair.guarded(pair.requester, REGION, Access.READ_WRITE, 43);
      RemoteSegment old = pair.open();
      RemoteRegion gone = old.region(dropped.regionId()).orElseThrow();
      pair.source.unregister(dropped);

      RemoteSegment again = pair.requester.reopen(old, OPEN);
      assertEquals(old.descriptor(), again.descriptor(), "the same incarnation");
      assertEquals(List.of(gone), again.regionsGone());
      assertEquals(List.of(), old.regionsGone());
      assertEquals(1, pair.requester.peers().size(), "the same entry");
      assertEquals(2, pair.requester.peers().getFirst().references());
      refusedGone(pair.requester, local, again, dropped.regionId());

      for (RemoteSegment via : List.of(again, old)) {
        run(
            pair.requester,
            List.of(TransferRequest.read(local, 7, via, kept.regionId(), 11, CHUNK)));
        assertRegion(
            local.segment(), List.of(new Span(7, CHUNK, 41, 11)), 43, "requester after READ");
        Pattern.fill(local.segment(), 0, REGION, 43, 0);
      }
      assertEquals(
          -1, Pattern.verify(kept.segment(), 0, REGION, 41, 0), "source untouched by READ");
      again.close();
      old.close();
    }
  }

  @Test
  void aFileSegmentOrNoSegmentIsNotReopened(@TempDir Path dir) throws Exception {
    Path file = Files.write(dir.resolve("f.bin"), new byte[8192]);
    try (TransferEngine engine =
        TransferEngine.start(EngineConfig.defaults().withName("reopen-file"))) {
      RemoteSegment segment = engine.openFileSegment(file, Access.READ, OPEN);
      TransferException e =
          assertThrows(TransferException.class, () -> engine.reopen(segment, OPEN));
      assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind(), e::getMessage);
      assertEquals(
          "INVALID_ARGUMENT: reopen file "
              + file
              + ": a file segment has no peer to describe; open the file again with"
              + " openFileSegment",
          e.getMessage());
      TransferException none =
          assertThrows(TransferException.class, () -> engine.reopen(null, OPEN));
      assertEquals(ErrorKind.INVALID_ARGUMENT, none.kind(), none::getMessage);
      segment.close();
    }
  }

  /**
   * A READ round then a WRITE round through {@code peer} over {@code transport}: each task says it
   * ran there, and both whole regions are checked (payload and guards) after each.
   */
  private static void round(
      TransferEngine requester,
      EngineProcess source,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      Transport transport,
      long seed)
      throws Exception {
    long data = seed * 10;
    long guard = seed * 10 + 1;
    source.call("FILL " + remote + " " + data);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> landed = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      long lo = 5 + i * (CHUNK + 101);
      long ro = 9 + i * (CHUNK + 77);
      reads.add(TransferRequest.read(local, lo, peer, remote, ro, CHUNK).withTransport(transport));
      landed.add(new Span(lo, CHUNK, data, ro));
    }
    assertRanOver(transport, run(requester, reads));
    assertRegion(local.segment(), landed, guard, "requester after READ via " + peer);
    assertEquals("OK", source.verify(remote, data, List.of()), "source untouched by READ");

    long written = seed * 10 + 2;
    Pattern.fill(local.segment(), 0, REGION, written, 0);
    source.call("FILL " + remote + " " + guard);
    List<TransferRequest> writes = new ArrayList<>();
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      long lo = 13 + i * (CHUNK + 55);
      long ro = 1 + i * (CHUNK + 99);
      writes.add(
          TransferRequest.write(local, lo, peer, remote, ro, CHUNK).withTransport(transport));
      spans.add(new Span(ro, CHUNK, written, lo));
    }
    assertRanOver(transport, run(requester, writes));
    assertEquals(
        "OK", source.verify(remote, guard, spans), "source after WRITE: payload and guards");
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, written, 0), "requester untouched by WRITE");
  }

  private static void assertRanOver(Transport transport, BatchStatus status) {
    for (TaskResult t : status.tasks()) {
      assertEquals(transport, t.transport(), t::toString);
      assertEquals(CHUNK, t.bytes(), t::toString);
    }
  }

  private static BatchStatus run(TransferEngine requester, List<TransferRequest> requests) {
    Batch batch = requester.allocateBatch(requests.size());
    try {
      batch.submit(requests);
      BatchStatus status = batch.await(Duration.ofSeconds(30));
      assertTrue(status.allCompleted(), status::toString);
      return status;
    } finally {
      batch.free();
    }
  }

  /** A request naming a region the reopened segment lists as gone is refused at submit. */
  private static void refusedGone(
      TransferEngine requester, RegisteredMemory local, RemoteSegment segment, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(TransferRequest.read(local, 0, segment, regionId, 0, 4096))));
      assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind(), e::getMessage);
      assertEquals(0, batch.status().tasks().size());
    } finally {
      batch.free();
    }
  }

  /**
   * After the reopen the old segment is still refused EPOCH_MISMATCH (C3): by {@code openSegment}
   * of its descriptor, and at submit for a READ and a WRITE, nothing admitted (so no task, zero
   * bytes, no remote effect); neither side's bytes changed.
   */
  private static void assertStaleRefused(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment stale,
      EngineProcess current,
      long remote)
      throws Exception {
    long guard = 0x5a1e;
    long sourceGuard = 0x5a1f;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    current.call("FILL " + remote + " " + sourceGuard);
    TransferException open =
        assertThrows(
            TransferException.class, () -> requester.openSegment(stale.descriptor(), OPEN));
    assertEquals(ErrorKind.EPOCH_MISMATCH, open.kind(), open::getMessage);
    Batch batch = requester.allocateBatch(2);
    try {
      TransferException submit =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(local, 0, stale, remote, 0, CHUNK),
                          TransferRequest.write(local, CHUNK, stale, remote, CHUNK, CHUNK))));
      assertEquals(ErrorKind.EPOCH_MISMATCH, submit.kind(), submit::getMessage);
      assertTrue(
          submit.getMessage().contains("now runs epoch " + Long.toHexString(current.epoch())),
          submit::getMessage);
      assertEquals(0, batch.status().tasks().size(), "nothing admitted");
    } finally {
      batch.free();
    }
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "requester region untouched");
    assertEquals("OK", current.verify(remote, sourceGuard, List.of()), "source region untouched");
  }
}
