package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Names and readiness point to point, without a cluster (issue 40, part 0): two engines in this JVM
 * over loopback TCP. A region is found by its name in the source's Describe answer and READ, every
 * byte and the guards around it checked; names follow their rule and are unique among live
 * registrations; an open against a source started not ready waits until its application has
 * registered its pool and marked it ready, then sees the pool; against a source never marked ready
 * it fails UNAVAILABLE once the describe timeout is spent.
 */
class NamedRegionsIT {
  private static final long POOL = (1L << 20) + 4099;
  private static final long LOCAL = 2L << 20;
  private static final Duration OPEN = Duration.ofSeconds(10);

  private static EngineConfig notReadyAtStart() {
    EngineConfig d = EngineConfig.defaults();
    return d.withListen(d.listen().withReadyAtStart(false));
  }

  @Test
  void aRegionIsFoundByItsNameAndReadWithEveryByteAndGuardChecked() {
    try (EnginePair pair = new EnginePair()) {
      RegisteredMemory other = EnginePair.guarded(pair.source, 8192, Access.READ, 50);
      RegisteredMemory pool = pair.source.allocate(POOL, Access.READ_WRITE, "kv-pool");
      Pattern.fill(pool.segment(), 0, POOL, 51, 0);
      RegisteredMemory local = EnginePair.guarded(pair.requester, LOCAL, Access.READ_WRITE, 52);
      assertEquals(Optional.of("kv-pool"), pool.name());
      assertEquals(Optional.empty(), other.name());

      RemoteSegment segment = pair.open();
      assertEquals("test-source", segment.engineName());
      RemoteRegion found = segment.region("kv-pool").orElseThrow();
      assertEquals(new RemoteRegion(pool.regionId(), POOL, Access.READ_WRITE, "kv-pool"), found);
      assertEquals(found, segment.region(pool.regionId()).orElseThrow());
      assertEquals(null, segment.region(other.regionId()).orElseThrow().name());
      assertEquals(Optional.empty(), segment.region("kv-poo"));
      assertEquals(Optional.empty(), segment.region((String) null));

      long chunk = POOL - 4099 - 17;
      run(
          pair.requester,
          List.of(TransferRequest.read(local, 33, segment, found.regionId(), 4099, chunk)));
      assertRegion(
          local.segment(),
          List.of(new Span(33, chunk, 51, 4099)),
          52,
          "requester after READ of kv-pool: payload and guards");
      assertEquals(-1, Pattern.verify(pool.segment(), 0, POOL, 51, 0), "source untouched");
      segment.close();
    }
  }

  @Test
  void namesFollowTheirRuleAreUniqueAmongLiveRegistrationsAndFreedByUnregister() {
    try (EnginePair pair = new EnginePair();
        Arena arena = Arena.ofShared()) {
      TransferException spaced =
          assertThrows(
              TransferException.class, () -> pair.source.allocate(4096, Access.READ, "kv pool"));
      assertEquals(ErrorKind.INVALID_ARGUMENT, spaced.kind(), spaced::getMessage);
      assertEquals(
          "INVALID_ARGUMENT: allocate: region name 'kv pool' has ' ' at index 2; allowed: A-Z"
              + " a-z 0-9 . _ : / -",
          spaced.getMessage());
      MemorySegment callers = arena.allocate(4096, 64);
      TransferException empty =
          assertThrows(
              TransferException.class, () -> pair.source.register(callers, Access.READ, ""));
      assertEquals(ErrorKind.INVALID_ARGUMENT, empty.kind(), empty::getMessage);
      assertTrue(empty.getMessage().contains("register: region name is empty"), empty::getMessage);
      TransferException tooLong =
          assertThrows(
              TransferException.class,
              () -> pair.source.allocate(4096, Access.READ, "n".repeat(129)));
      assertTrue(tooLong.getMessage().contains("is 129 characters long; at most 128"));
      assertEquals(List.of(), pair.source.localRegions(), "nothing registered by a refusal");

      RegisteredMemory pool = pair.source.allocate(4096, Access.READ_WRITE, "kv-pool");
      TransferException taken =
          assertThrows(
              TransferException.class, () -> pair.source.register(callers, Access.READ, "kv-pool"));
      assertEquals(ErrorKind.INVALID_ARGUMENT, taken.kind(), taken::getMessage);
      assertTrue(
          taken
              .getMessage()
              .contains("register: region name 'kv-pool' is held by region " + pool.regionId()),
          taken::getMessage);
      TransferException takenAlloc =
          assertThrows(
              TransferException.class, () -> pair.source.allocate(64, Access.READ, "kv-pool"));
      assertTrue(
          takenAlloc.getMessage().contains("allocate: region name 'kv-pool' is held by region"),
          takenAlloc::getMessage);
      assertEquals(List.of(pool), pair.source.localRegions());

      pair.source.unregister(pool);
      assertEquals(List.of(), pair.source.localRegions());
      RegisteredMemory again = pair.source.register(callers, Access.READ, "kv-pool");
      assertEquals(Optional.of("kv-pool"), again.name());
      assertEquals(List.of(again), pair.source.localRegions());
      RemoteSegment segment = pair.open();
      assertEquals(again.regionId(), segment.region("kv-pool").orElseThrow().regionId());
      segment.close();
      pair.source.unregister(again);
    }
  }

  @Test
  void anOpenOfASourceNotYetReadyWaitsThenSeesTheRegionsRegisteredBeforeMarkReady()
      throws Exception {
    try (EnginePair pair = new EnginePair(notReadyAtStart(), EngineConfig.defaults())) {
      assertFalse(pair.source.isReady());
      RegisteredMemory local = EnginePair.guarded(pair.requester, LOCAL, Access.READ_WRITE, 62);
      long acceptedBefore = pair.source.counters().connectionsAccepted();
      CompletableFuture<RemoteSegment> opening =
          CompletableFuture.supplyAsync(() -> pair.requester.openSegment(endpoint(pair), OPEN));
      // At least two Describes answered "not ready": the open is waiting, asking again.
      assertTrue(
          Await.until(
              Duration.ofSeconds(4),
              () -> pair.source.counters().connectionsAccepted() - acceptedBefore >= 2),
          "the requester asked again");
      assertFalse(opening.isDone(), "the open waits while the source is not ready");

      RegisteredMemory pool = pair.source.allocate(POOL, Access.READ, "kv-pool");
      Pattern.fill(pool.segment(), 0, POOL, 61, 0);
      pair.source.markReady();
      pair.source.markReady();
      assertTrue(pair.source.isReady());

      RemoteSegment segment = opening.get(OPEN.toSeconds(), TimeUnit.SECONDS);
      RemoteRegion found = segment.region("kv-pool").orElseThrow();
      assertEquals(pool.regionId(), found.regionId());
      assertEquals(POOL, found.lengthBytes());
      run(
          pair.requester,
          List.of(TransferRequest.read(local, 7, segment, found.regionId(), 0, POOL)));
      assertRegion(local.segment(), List.of(new Span(7, POOL, 61, 0)), 62, "requester after READ");
      assertEquals(-1, Pattern.verify(pool.segment(), 0, POOL, 61, 0), "source untouched");
      segment.close();
    }
  }

  @Test
  void anOpenOfASourceNeverMarkedReadyFailsUnavailableOnceTheDescribeTimeoutIsSpent() {
    EngineConfig requester =
        EngineConfig.defaults()
            .withTimeouts(TimeoutConfig.defaults().withDescribeTimeoutMillis(600));
    try (EnginePair pair = new EnginePair(notReadyAtStart(), requester)) {
      pair.source.allocate(4096, Access.READ, "kv-pool");
      long started = System.nanoTime();
      CompletionException failed =
          assertThrows(
              CompletionException.class,
              () -> pair.requester.openSegmentAsync(endpoint(pair)).toCompletableFuture().join());
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      TransferException e = assertInstanceOf(TransferException.class, failed.getCause());
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains(endpoint(pair)), e::getMessage);
      assertTrue(e.getMessage().contains("engine 'test-source'"), e::getMessage);
      assertTrue(e.getMessage().contains("not marked ready"), e::getMessage);
      assertTrue(tookMillis >= 550, "waited the describe timeout, took " + tookMillis + " ms");
      assertEquals(List.of(), pair.requester.peers(), "nothing opened");
      assertFalse(pair.source.isReady());
    }
  }

  private static String endpoint(EnginePair pair) {
    return pair.source.localSegment().endpoint();
  }

  private static BatchStatus run(
      io.orbite.engine.TransferEngine requester, List<TransferRequest> requests) {
    Batch batch = requester.allocateBatch(requests.size());
    try {
      batch.submit(new ArrayList<>(requests));
      BatchStatus status = batch.await(Duration.ofSeconds(30));
      assertTrue(status.allCompleted(), status::toString);
      return status;
    } finally {
      batch.free();
    }
  }
}
