package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.view.OwnerBoard;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The source side's ledger in {@link EngineTally}: bytes served by requester, transport and op,
 * bounded to {@link SourceLedger#MAX_REQUESTERS} labels (later ones under {@code other}, every byte
 * still counted); the requesters connected now, each connection counted once and the incarnation
 * gone with its last; the self-healing figures the owner board merges into the engine's row.
 */
class SourceLedgerTest {
  private static long served(SourceLedger l, String requester, Transport t, Op op) {
    return l.served().stream()
        .filter(s -> s.requester().equals(requester) && s.transport() == t && s.op() == op)
        .mapToLong(SourceLedger.Served::bytes)
        .sum();
  }

  @Test
  void bytesAreCountedPerRequesterTransportAndOpWithTheLatestEpoch() {
    EngineTally tally = new EngineTally();
    tally.served("10.0.0.1@a", 0xa, Transport.TCP, Op.READ, 4093);
    tally.served("10.0.0.1@a", 0xa, Transport.TCP, Op.READ, 7);
    tally.served("10.0.0.1@a", 0xa, Transport.TCP, Op.WRITE, 65536);
    tally.served("10.0.0.1@a", 0xa, Transport.SHM, Op.READ, 1 << 20);
    tally.served("10.0.0.2@b", 0xb, Transport.RDMA, Op.WRITE, 333);
    tally.served("10.0.0.2@b", 0xb, Transport.RDMA, Op.WRITE, 0);
    tally.served("10.0.0.2@b", 0xb, Transport.RDMA, Op.WRITE, -5);
    SourceLedger l = tally.sourceLedger();
    assertEquals(4100, served(l, "10.0.0.1@a", Transport.TCP, Op.READ));
    assertEquals(65536, served(l, "10.0.0.1@a", Transport.TCP, Op.WRITE));
    assertEquals(1 << 20, served(l, "10.0.0.1@a", Transport.SHM, Op.READ));
    assertEquals(333, served(l, "10.0.0.2@b", Transport.RDMA, Op.WRITE), "nothing or less adds 0");
    assertEquals(0, served(l, "10.0.0.2@b", Transport.RDMA, Op.READ));
    assertEquals(4, l.served().size(), "a row only where a byte was served: " + l.served());
    assertEquals(4100, l.bytes(Transport.TCP, Op.READ));
    assertEquals(1 << 20, l.bytes(Transport.SHM, Op.READ));
    assertEquals(0, l.bytes(Transport.SHM, Op.WRITE));

    // The same label under a new epoch (the identity of a restarted requester): the row shows it.
    EngineTally.ServedTo row = tally.servedTo("10.0.0.1@a", 0xc);
    row.add(Transport.TCP, Op.READ, 10);
    assertSame(row, tally.servedTo("10.0.0.1@a", 0xc), "one row per label");
    SourceLedger after = tally.sourceLedger();
    assertEquals(4110, served(after, "10.0.0.1@a", Transport.TCP, Op.READ));
    assertTrue(
        after.served().stream()
            .filter(s -> s.requester().equals("10.0.0.1@a"))
            .allMatch(s -> s.requesterEpoch() == 0xc));
    // A snapshot never changes after it was taken.
    assertEquals(4100, served(l, "10.0.0.1@a", Transport.TCP, Op.READ));
    assertThrows(UnsupportedOperationException.class, () -> l.served().clear());
  }

  @Test
  void atMostMaxRequestersByNameAndEveryLaterByteUnderOther() {
    EngineTally tally = new EngineTally();
    int extra = 40;
    for (int i = 0; i < SourceLedger.MAX_REQUESTERS + extra; i++) {
      tally.served("r" + i, i + 1, Transport.TCP, Op.READ, i + 1);
    }
    // A label already counted by name keeps its row after the bound is reached.
    tally.served("r0", 1, Transport.TCP, Op.READ, 1000);
    SourceLedger l = tally.sourceLedger();
    long labels = l.served().stream().map(SourceLedger.Served::requester).distinct().count();
    assertEquals(SourceLedger.MAX_REQUESTERS + 1, labels, "256 by name, then other");
    assertEquals(1001, served(l, "r0", Transport.TCP, Op.READ));
    assertEquals(0, served(l, "r" + SourceLedger.MAX_REQUESTERS, Transport.TCP, Op.READ));
    long over = 0;
    for (int i = SourceLedger.MAX_REQUESTERS; i < SourceLedger.MAX_REQUESTERS + extra; i++) {
      over += i + 1;
    }
    assertEquals(over, served(l, SourceLedger.OTHER, Transport.TCP, Op.READ));
    long all = 0;
    for (int i = 0; i < SourceLedger.MAX_REQUESTERS + extra; i++) {
      all += i + 1;
    }
    assertEquals(all + 1000, l.bytes(Transport.TCP, Op.READ), "no byte is lost to the bound");
  }

  @Test
  void theBoundHoldsUnderConcurrentNewRequesters() throws Exception {
    EngineTally tally = new EngineTally();
    int threads = 8;
    int each = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    try {
      for (int t = 0; t < threads; t++) {
        int base = t * each;
        pool.submit(
            () -> {
              go.await();
              for (int i = 0; i < each; i++) {
                tally.served("c" + (base + i), 1, Transport.TCP, Op.WRITE, 3);
              }
              return null;
            });
      }
      go.countDown();
      pool.shutdown();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
    SourceLedger l = tally.sourceLedger();
    assertEquals(
        SourceLedger.MAX_REQUESTERS + 1,
        l.served().stream().map(SourceLedger.Served::requester).distinct().count());
    assertEquals(3L * threads * each, l.bytes(Transport.TCP, Op.WRITE));
  }

  @Test
  void connectedRequestersAreListedUntilTheirLastConnectionEnds() {
    EngineTally tally = new EngineTally();
    for (int lane = 0; lane < 4; lane++) {
      tally.requesterConnected("10.0.0.1@a", 0xa, Transport.TCP);
    }
    tally.requesterConnected("10.0.0.1@a", 0xa, Transport.RDMA);
    tally.requesterConnected("10.0.0.2@b", 0xb, Transport.TCP);
    SourceLedger l = tally.sourceLedger();
    assertEquals(3, l.connected().size(), l.connected().toString());
    SourceLedger.Connected tcp =
        l.connected().stream()
            .filter(c -> c.requester().equals("10.0.0.1@a") && c.transport() == Transport.TCP)
            .findFirst()
            .orElseThrow();
    assertEquals(4, tcp.connections());
    assertEquals(0xa, tcp.requesterEpoch());
    assertTrue(tcp.sinceMillis() > 0);
    assertEquals(2L, tally.healingFigures().get("requestersConnected"), "two incarnations");

    for (int lane = 0; lane < 3; lane++) {
      tally.requesterDisconnected("10.0.0.1@a", 0xa, Transport.TCP);
    }
    tally.requesterDisconnected("10.0.0.2@b", 0xb, Transport.TCP);
    // One that was never counted changes nothing.
    tally.requesterDisconnected("10.0.0.9@f", 0xf, Transport.TCP);
    List<SourceLedger.Connected> now = tally.sourceLedger().connected();
    assertEquals(2, now.size(), now.toString());
    for (SourceLedger.Connected c : now) {
      assertEquals("10.0.0.1@a", c.requester(), now.toString());
      assertEquals(1, c.connections(), c.toString());
    }
    assertEquals(
        tcp.sinceMillis(),
        now.stream()
            .filter(c -> c.transport() == Transport.TCP)
            .findFirst()
            .orElseThrow()
            .sinceMillis(),
        "since its first connection");
    tally.requesterDisconnected("10.0.0.1@a", 0xa, Transport.TCP);
    tally.requesterDisconnected("10.0.0.1@a", 0xa, Transport.RDMA);
    assertEquals(List.of(), tally.sourceLedger().connected());
    assertEquals(0L, tally.healingFigures().get("requestersConnected"));
  }

  @Test
  void theEnginesRowShowsTheHealingCountsWhenTheViewIsTaken() {
    EngineTally tally = new EngineTally();
    OwnerBoard board = new OwnerBoard();
    board.figures("EngineGuardian", tally::healingFigures);
    board.publish("engine", "EngineGuardian", OwnerState.RUNNING, Map.of("batchesSpawned", 2L), "");
    board.publish("engine/registry", "Registry", OwnerState.ACTIVE, Map.of("loans", 1L), "");
    tally.add(Count.LANES_LOST, 3);
    tally.add(Count.LANES_RESTORED, 2);
    tally.increment(Count.KEEPALIVE_MISSES);
    tally.add(Count.PEERS_FENCED, 4);
    tally.add(Count.TRANSPORT_FAILOVERS, 5);
    tally.add(Count.SOURCE_IDLE_CLOSES, 6);
    tally.add(Count.SOURCE_INCARNATIONS_FENCED, 7);
    OwnerView v = board.snapshot();
    OwnerView.Owner engine =
        v.owners().stream().filter(o -> o.kind().equals("EngineGuardian")).findFirst().get();
    assertEquals(2L, engine.charges().get("batchesSpawned"), "its own report is kept");
    assertEquals(3L, engine.charges().get("lanesLost"));
    assertEquals(2L, engine.charges().get("lanesRestored"));
    assertEquals(1L, engine.charges().get("keepaliveMisses"));
    assertEquals(4L, engine.charges().get("peersFenced"));
    assertEquals(5L, engine.charges().get("transportFailovers"));
    assertEquals(6L, engine.charges().get("sourceIdleCloses"));
    assertEquals(7L, engine.charges().get("sourceIncarnationsFenced"));
    assertEquals(0L, engine.charges().get("requestersConnected"));
    OwnerView.Owner registry =
        v.owners().stream().filter(o -> o.kind().equals("Registry")).findFirst().get();
    assertEquals(Map.of("loans", 1L), registry.charges(), "other kinds are untouched");
    // Read when the view is taken: a later count shows in the next view without a new report.
    tally.increment(Count.LANES_LOST);
    assertEquals(
        4L,
        board.snapshot().owners().stream()
            .filter(o -> o.kind().equals("EngineGuardian"))
            .findFirst()
            .get()
            .charges()
            .get("lanesLost"));
  }
}
