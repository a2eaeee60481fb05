package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * C9 for the peer table under churn: a source restarts at the same endpoint ten times the table's
 * capacity over, each generation read and checked byte for byte. Stale entries are reclaimed once
 * no RemoteSegment refers to them (closed, or collected by the GC), so neither the table, the
 * endpoint charges nor the lane threads grow; a RemoteSegment the caller keeps holds its fenced
 * entry for as long as it is kept, and using it is refused EPOCH_MISMATCH with nothing moved.
 */
class PeerTableIT {
  private static final int CAPACITY = 3;
  private static final int GENERATIONS = 10 * CAPACITY;
  private static final long REGION = 256 * 1024;

  @Test
  void churningThroughTenTimesTheTableCapacityOfRestartsDoesNotGrowIt() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    EngineConfig d = EngineConfig.defaults();
    EngineConfig sourceConfig = d.withListen(d.listen().withHost("127.0.0.1").withPort(port));
    try (TransferEngine requester =
        TransferEngine.start(
            d.withName("churner").withBudgets(d.budgets().withMaxPeerSegments(CAPACITY)))) {
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, 7);
      RemoteSegment held = null;
      long heldRegion = 0;
      for (int g = 1; g <= GENERATIONS; g++) {
        long seed = 100 + g;
        try (TransferEngine source =
            TransferEngine.start(sourceConfig.withName("generation-" + g))) {
          RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, seed);
          RemoteSegment peer = requester.openSegment("127.0.0.1:" + port, Duration.ofSeconds(10));
          assertEquals(source.localSegment().epoch(), peer.descriptor().epoch());
          read(requester, local, peer, remote.regionId(), g);
          assertEquals(-1, Pattern.verify(local.segment(), 0, g, 7, 0), "guard before the READ");
          assertEquals(
              -1,
              Pattern.verify(local.segment(), g, 4096, seed, 8),
              "generation " + g + "'s bytes");
          assertEquals(
              -1,
              Pattern.verify(local.segment(), g + 4096, REGION - g - 4096, 7, g + 4096),
              "guard after");
          assertEquals(
              -1,
              Pattern.verify(remote.segment(), 0, REGION, seed, 0),
              "generation " + g + "'s own region");
          Pattern.fill(local.segment(), 0, REGION, 7, 0);

          List<PeerEntry> peers = requester.peers();
          assertTrue(
              peers.size() <= CAPACITY, () -> "the table never grows past its capacity: " + peers);
          assertTrue(requester.owed().endpoints() <= CAPACITY, () -> requester.owed().toString());
          if (held == null) {
            held = peer;
            heldRegion = remote.regionId();
          } else {
            RemoteSegment kept = held;
            PeerEntry entry =
                peers.stream()
                    .filter(p -> p.peer().equals(kept.descriptor()))
                    .findFirst()
                    .orElseThrow(
                        () ->
                            new AssertionError("the held RemoteSegment lost its entry: " + peers));
            assertEquals(PeerEntry.State.FENCED, entry.state(), entry::toString);
            assertEquals(1, entry.references());
            assertStaleRefused(requester, local, held, heldRegion);
            if (g % 2 == 0) {
              peer.close();
            } else {
              // Dropped without close: the garbage collector returns its entry.
              peer = null;
            }
          }
          long lanes =
              Thread.getAllStackTraces().keySet().stream()
                  .filter(t -> t.getName().startsWith("orbite-tcp-lane "))
                  .count();
          assertTrue(
              lanes <= (long) CAPACITY * d.tcp().lanes(), "requester lane threads: " + lanes);
        }
        // Before the next generation: every unreferenced stale entry is gone; the held one stays.
        RemoteSegment kept = held;
        assertTrue(
            Await.until(
                Duration.ofSeconds(20),
                () -> {
                  System.gc();
                  List<PeerEntry> left = requester.peers();
                  return left.size() <= 2
                      && left.stream().anyMatch(p -> p.peer().equals(kept.descriptor()));
                }),
            () -> "stale entries reclaimed, the held one kept: " + requester.peers());
      }
      held.close();
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () ->
                  requester.peers().stream()
                          .noneMatch(
                              p -> p.references() == 0 && p.state() != PeerEntry.State.ACTIVE)
                      && requester.peers().size() <= 1),
          () -> requester.peers().toString());
      RemoteSegment closed = held;
      long region = heldRegion;
      TransferException refused =
          assertThrows(
              TransferException.class,
              () ->
                  requester
                      .allocateBatch(1)
                      .submit(List.of(TransferRequest.read(local, 0, closed, region, 0, 4096))));
      assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind(), refused::getMessage);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, 7, 0), "nothing moved");
    }
  }

  private static void read(
      TransferEngine requester, RegisteredMemory local, RemoteSegment peer, long region, int at) {
    Batch batch = requester.allocateBatch(1);
    batch.submit(List.of(TransferRequest.read(local, at, peer, region, 8, 4096)));
    assertTrue(batch.await(Duration.ofSeconds(30)).allCompleted());
    batch.free();
  }

  private static void assertStaleRefused(
      TransferEngine requester, RegisteredMemory local, RemoteSegment stale, long region) {
    Batch batch = requester.allocateBatch(1);
    TransferException e =
        assertThrows(
            TransferException.class,
            () -> batch.submit(List.of(TransferRequest.read(local, 0, stale, region, 0, 4096))));
    assertEquals(ErrorKind.EPOCH_MISMATCH, e.kind(), e::getMessage);
    batch.free();
    assertEquals(
        -1, Pattern.verify(local.segment(), 0, REGION, 7, 0), "a refused READ moves nothing");
  }
}
