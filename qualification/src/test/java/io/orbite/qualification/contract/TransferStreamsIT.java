package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.BudgetConfig;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.streams.StreamSettings;
import io.orbite.engine.streams.TransferResult;
import io.orbite.engine.streams.TransferStreams;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Pekko Streams API over real engines: every byte checked, demand bounded by the budgets,
 * cancellation and upstream failure finishing only after drain.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TransferStreamsIT {
  private static final long REGION = 16L << 20;
  private static final int MAX_TASKS = 32;
  private static final long MAX_BYTES = 2L << 20;
  private EnginePair pair;
  private RegisteredMemory remote;
  private RegisteredMemory local;
  private RemoteSegment peer;
  private ActorSystem<Void> streams;

  @BeforeAll
  void start() {
    EngineConfig tight =
        EngineConfig.defaults()
            .withBudgets(
                BudgetConfig.defaults()
                    .withMaxTasksInFlight(MAX_TASKS)
                    .withMaxInflightBytes(MAX_BYTES));
    pair = new EnginePair(EngineConfig.defaults(), tight);
    remote = pair.source.allocate(REGION, Access.READ_WRITE);
    local = pair.requester.allocate(REGION, Access.READ_WRITE);
    peer = pair.open();
    streams = ActorSystem.create(Behaviors.empty(), "streams-test");
  }

  @AfterAll
  void stop() {
    streams.terminate();
    pair.close();
  }

  /** {@code n} READs of {@code length} bytes at distinct unaligned places on both sides. */
  private List<TransferRequest> reads(int n, long length) {
    List<TransferRequest> out = new ArrayList<>(n);
    long stride = length + 37;
    for (int i = 0; i < n; i++) {
      out.add(
          TransferRequest.read(
              local, 11 + i * stride, peer, remote.regionId(), 5 + i * stride, length));
    }
    assertTrue(11 + n * stride < REGION);
    return out;
  }

  private List<Span> spans(List<TransferRequest> requests, long seed) {
    return requests.stream()
        .map(r -> new Span(r.localOffset(), r.lengthBytes(), seed, r.remoteOffset()))
        .toList();
  }

  @Test
  void flowMovesEveryRequestAndKeepsRequestOrder() throws Exception {
    long data = 11;
    long guard = 12;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(300, 40_000);
    Pair<CompletionStage<Done>, CompletionStage<List<TransferResult>>> run =
        Source.from(requests)
            .viaMat(
                TransferStreams.flow(
                    pair.requester, StreamSettings.defaults().withMaxBatchTasks(16)),
                Keep.right())
            .toMat(Sink.seq(), Keep.both())
            .run(streams);
    List<TransferResult> results = run.second().toCompletableFuture().get(60, TimeUnit.SECONDS);
    run.first().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertCompletedInOrderAndLanded(requests, results, data, guard);
  }

  @Test
  void asCompletedEmitsEveryResultExactlyOnce() throws Exception {
    long data = 21;
    long guard = 22;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(400, 20_000);
    List<TransferResult> results =
        runFlow(
            requests,
            StreamSettings.defaults()
                .withOrdering(StreamSettings.Ordering.AS_COMPLETED)
                .withMaxBatchTasks(8));
    Set<TransferRequest> seen = new HashSet<>();
    for (TransferResult r : results) {
      assertTrue(r.completed(), r::toString);
      assertTrue(seen.add(r.request()), "emitted twice: " + r.request());
    }
    assertEquals(new HashSet<>(requests), seen);
    assertRegion(local.segment(), spans(requests, data), guard, "requester region");
  }

  @Test
  void aFastSourceIsHeldBackByTheBudgetNotQueued() throws Exception {
    long data = 31;
    long guard = 32;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(200, 64 * 1024);
    AtomicLong pulled = new AtomicLong();
    AtomicLong emitted = new AtomicLong();
    AtomicLong worstTasks = new AtomicLong();
    AtomicLong worstBytes = new AtomicLong();
    AtomicLong bytesPulled = new AtomicLong();
    AtomicLong bytesEmitted = new AtomicLong();
    // Sample the engine's own in-flight charge while the stream runs.
    AtomicLong worstEngineBytes = new AtomicLong();
    java.util.concurrent.atomic.AtomicBoolean sampling =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    Thread sampler =
        Thread.ofPlatform()
            .daemon()
            .start(
                () -> {
                  while (sampling.get()) {
                    worstEngineBytes.accumulateAndGet(
                        pair.requester.owed().bytesInFlight(), Math::max);
                  }
                });
    List<TransferResult> results =
        Source.from(requests)
            .map(
                r -> {
                  pulled.incrementAndGet();
                  bytesPulled.addAndGet(r.lengthBytes());
                  worstTasks.accumulateAndGet(pulled.get() - emitted.get(), Math::max);
                  worstBytes.accumulateAndGet(bytesPulled.get() - bytesEmitted.get(), Math::max);
                  // Sampled here too: on two busy cores the sampler thread may not run at all
                  // during a 20 ms stream, while the stream's own stages always do.
                  worstEngineBytes.accumulateAndGet(
                      pair.requester.owed().bytesInFlight(), Math::max);
                  return r;
                })
            .via(
                TransferStreams.flow(
                    pair.requester, StreamSettings.defaults().withMaxBatchTasks(4)))
            .map(
                r -> {
                  emitted.incrementAndGet();
                  bytesEmitted.addAndGet(r.request().lengthBytes());
                  worstEngineBytes.accumulateAndGet(
                      pair.requester.owed().bytesInFlight(), Math::max);
                  return r;
                })
            .runWith(Sink.seq(), streams)
            .toCompletableFuture()
            .get(60, TimeUnit.SECONDS);
    sampling.set(false);
    sampler.join(10_000);
    assertEquals(200, results.size());
    assertTrue(
        results.stream().allMatch(TransferResult::completed),
        "every task completed (none refused)");
    assertTrue(worstEngineBytes.get() > 0, "the sampler saw the engine busy");
    assertTrue(
        worstEngineBytes.get() <= MAX_BYTES,
        "engine in-flight bytes within budget, saw " + worstEngineBytes);
    assertTrue(
        worstTasks.get() <= MAX_TASKS,
        "requests held by the stage: at most the task budget, saw " + worstTasks);
    assertTrue(
        worstBytes.get() <= MAX_BYTES,
        "bytes held by the stage: at most the byte budget, saw " + worstBytes);
    assertRegion(local.segment(), spans(requests, data), guard, "requester region");
  }

  @Test
  void cancellingDownstreamDrainsBeforeTheStageCompletesAndLeavesOnlyRequestedBytesChanged()
      throws Exception {
    long data = 41;
    long guard = 42;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(200, 50_000);
    Pair<CompletionStage<Done>, CompletionStage<List<TransferResult>>> run =
        Source.from(requests)
            .viaMat(
                TransferStreams.flow(
                    pair.requester, StreamSettings.defaults().withMaxBatchTasks(4)),
                Keep.right())
            .take(10)
            .toMat(Sink.seq(), Keep.both())
            .run(streams);
    CompletableFuture<Long> loansAtDrain = loansWhenDone(run.first());
    List<TransferResult> first = run.second().toCompletableFuture().get(60, TimeUnit.SECONDS);
    run.first().toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertEquals(
        0,
        loansAtDrain.get(),
        "no worker held the requester's memory when the stage said it had drained");
    assertEquals(10, first.size());
    for (int i = 0; i < 10; i++) {
      assertSame(requests.get(i), first.get(i).request());
      assertTrue(first.get(i).completed());
    }
    // Bytes: outside the requested ranges only guards; inside, each byte is the source's or the
    // guard.
    assertGuardsOrData(requests, data, guard);
    assertNothingCharged();
    // After drain every batch is freed and every charge returned: the whole budget fits again.
    List<TransferRequest> again = reads(MAX_TASKS, MAX_BYTES / MAX_TASKS);
    var batch = pair.requester.allocateBatch(again.size());
    batch.submit(again);
    assertTrue(batch.await(Duration.ofSeconds(30)).allCompleted());
    batch.free();
  }

  @Test
  void upstreamFailureFailsTheStreamOnlyAfterDrain() throws Exception {
    long data = 51;
    long guard = 52;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(60, 30_000);
    IllegalStateException boom = new IllegalStateException("upstream broke");
    Pair<CompletionStage<Done>, CompletionStage<List<TransferResult>>> run =
        Source.from(requests)
            .map(
                r -> {
                  if (r == requests.get(40)) {
                    throw boom;
                  }
                  return r;
                })
            .viaMat(
                TransferStreams.flow(
                    pair.requester, StreamSettings.defaults().withMaxBatchTasks(4)),
                Keep.right())
            .toMat(Sink.seq(), Keep.both())
            .run(streams);
    CompletableFuture<Long> loansAtFailure = loansWhenDone(run.second());
    ExecutionException failure =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class,
            () -> run.second().toCompletableFuture().get(60, TimeUnit.SECONDS));
    assertSame(boom, failure.getCause());
    assertTrue(run.first().toCompletableFuture().isDone(), "drained before the stream failed");
    assertEquals(
        0, loansAtFailure.get(), "no worker held the requester's memory when the stream failed");
    assertGuardsOrData(requests, data, guard);
  }

  @Test
  void writeSinkLandsEveryBlockAndCompletesAfterDrain() throws Exception {
    long data = 61;
    long guard = 62;
    Pattern.fill(local.segment(), 0, REGION, data, 0);
    Pattern.fill(remote.segment(), 0, REGION, guard, 0);
    List<TransferRequest> writes = new ArrayList<>();
    for (int i = 0; i < 120; i++) {
      writes.add(
          TransferRequest.write(
              local, 3 + i * 70_001L, peer, remote.regionId(), 9 + i * 70_001L, 70_000));
    }
    Source.from(writes)
        .runWith(TransferStreams.writeSink(pair.requester, StreamSettings.defaults()), streams)
        .toCompletableFuture()
        .get(60, TimeUnit.SECONDS);
    List<Span> spans =
        writes.stream()
            .map(w -> new Span(w.remoteOffset(), w.lengthBytes(), data, w.localOffset()))
            .toList();
    assertRegion(remote.segment(), spans, guard, "source region after writeSink");
    assertRegion(local.segment(), List.of(), data, "requester region untouched");
  }

  @Test
  void aRequestLargerThanTheWholeBudgetFailsAsAResultInsteadOfStalling() throws Exception {
    long data = 71;
    long guard = 72;
    prepareForReads(data, guard);
    TransferRequest huge =
        TransferRequest.read(local, 1, peer, remote.regionId(), 2, MAX_BYTES + 1);
    List<TransferRequest> small = reads(3, 1000);
    List<TransferRequest> requests = List.of(small.get(0), huge, small.get(1), small.get(2));
    List<TransferResult> results = runFlow(requests, StreamSettings.defaults());
    assertEquals(4, results.size());
    TransferResult refused = results.get(1);
    assertSame(huge, refused.request());
    assertEquals(
        io.orbite.engine.ErrorKind.RESOURCE_EXHAUSTED,
        refused.result().errorKind(),
        refused::toString);
    assertEquals(0, refused.result().bytes());
    assertTrue(
        results.get(0).completed() && results.get(2).completed() && results.get(3).completed());
    // The refused READ moved nothing: its range still holds guards, where small ones do not overlap
    // it.
    assertGuardsOrData(small, data, guard);
  }

  @Test
  void requestsThatFitTheBudgetOnlyOneAtATimeStillAllComplete() throws Exception {
    long data = 91;
    long guard = 92;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(3, MAX_BYTES * 3 / 5);
    List<TransferResult> results = runFlow(requests, StreamSettings.defaults());
    assertTrue(results.stream().allMatch(TransferResult::completed), results::toString);
    assertRegion(local.segment(), spans(requests, data), guard, "requester region");
  }

  /**
   * A group that fills the in-flight window is submitted at once: no request can join it before a
   * group ends, so waiting out the batch window (here a minute, past the 60 s the run may take)
   * would only stall the stream.
   */
  @ParameterizedTest(name = "window of {0} B")
  @ValueSource(
      longs = {300_000, 350_000}) // exactly three requests; three, and the fourth does not fit
  void aGroupThatFillsTheWindowGoesWithoutWaitingOutTheBatchWindow(long window) throws Exception {
    long data = 95;
    long guard = 96;
    prepareForReads(data, guard);
    List<TransferRequest> requests = reads(12, 100_000);
    StreamSettings settings =
        StreamSettings.defaults()
            .withMaxBatchTasks(256)
            .withBatchWindow(Duration.ofMinutes(1))
            .withMaxInflightBytes(window);
    List<TransferResult> results = runFlow(requests, settings);
    assertCompletedInOrderAndLanded(requests, results, data, guard);
  }

  @Test
  void anInvalidRequestFailsAloneAndItsNeighboursComplete() throws Exception {
    long data = 93;
    long guard = 94;
    prepareForReads(data, guard);
    List<TransferRequest> good = reads(4, 5000);
    TransferRequest outOfBounds =
        TransferRequest.read(local, 0, peer, remote.regionId(), REGION - 10, 100);
    List<TransferRequest> requests =
        List.of(good.get(0), good.get(1), outOfBounds, good.get(2), good.get(3));
    List<TransferResult> results =
        runFlow(requests, StreamSettings.defaults().withMaxBatchTasks(8));
    assertEquals(5, results.size());
    assertEquals(io.orbite.engine.ErrorKind.INVALID_ARGUMENT, results.get(2).result().errorKind());
    assertEquals(null, results.get(2).result().transport(), "refused before any transport");
    assertEquals(io.orbite.engine.Route.NOT_DISPATCHED, results.get(2).result().route());
    for (int i : new int[] {0, 1, 3, 4}) {
      assertTrue(results.get(i).completed(), results.get(i)::toString);
      assertEquals(io.orbite.engine.Transport.TCP, results.get(i).result().transport());
      assertEquals(
          io.orbite.engine.Route.TCP_RDMA_NOT_ENABLED,
          results.get(i).result().route(),
          "UNSPEC without SHM or RDMA here");
    }
    assertRegion(
        local.segment(), spans(good, data), guard, "requester region: only the valid reads landed");
  }

  @Test
  void aPeerKilledMidStreamFailsTheWriteSinkAfterDrainAndLeavesNothingCharged(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (var victim =
        io.orbite.qualification.harness.EngineProcess.start(
            "stream-victim", logs, java.util.Map.of())) {
      long region = Long.parseLong(victim.call("ALLOC " + REGION + " READ_WRITE"));
      RemoteSegment doomed = pair.requester.openSegment(victim.endpoint(), Duration.ofSeconds(10));
      long data = 81;
      Pattern.fill(local.segment(), 0, REGION, data, 0);
      AtomicLong sent = new AtomicLong();
      List<TransferRequest> writes = new ArrayList<>();
      for (int i = 0; i < 2000; i++) {
        long at = (i * 65_537L) % (REGION - 65_536);
        writes.add(TransferRequest.write(local, at, doomed, region, at, 65_536));
      }
      CompletionStage<Done> done =
          Source.from(writes)
              .map(
                  w -> {
                    if (sent.incrementAndGet() == 200) {
                      victim.kill();
                    }
                    return w;
                  })
              .runWith(
                  TransferStreams.writeSink(
                      pair.requester, StreamSettings.defaults().withMaxBatchTasks(8)),
                  streams);
      CompletableFuture<Long> loansAtFailure = loansWhenDone(done);
      ExecutionException failure =
          org.junit.jupiter.api.Assertions.assertThrows(
              ExecutionException.class, () -> done.toCompletableFuture().get(60, TimeUnit.SECONDS));
      var kind = ((io.orbite.engine.TransferException) failure.getCause()).kind();
      assertTrue(
          kind == io.orbite.engine.ErrorKind.PEER_LOST
              || kind == io.orbite.engine.ErrorKind.UNAVAILABLE
              || kind == io.orbite.engine.ErrorKind.PROTOCOL,
          "failure kind of the batch API, got " + kind);
      assertEquals(
          0, loansAtFailure.get(), "no worker held the requester's memory when the sink failed");
      assertRegion(
          local.segment(), List.of(), data, "requester region is only ever read by WRITEs");
      assertNothingCharged();
      // Nothing stays charged: the whole task and byte budget fits again against the live peer.
      List<TransferRequest> again = reads(MAX_TASKS, MAX_BYTES / MAX_TASKS);
      var batch = pair.requester.allocateBatch(again.size());
      batch.submit(again);
      assertTrue(batch.await(Duration.ofSeconds(30)).allCompleted());
      batch.free();
    }
  }

  /**
   * Every request has its result, in request order, completed with all its bytes; the requester's
   * region holds the source's bytes in each range and its guard everywhere else; the source is
   * untouched.
   */
  private void assertCompletedInOrderAndLanded(
      List<TransferRequest> requests, List<TransferResult> results, long data, long guard) {
    assertEquals(requests.size(), results.size());
    for (int i = 0; i < results.size(); i++) {
      assertSame(requests.get(i), results.get(i).request(), "result " + i + " out of order");
      assertTrue(results.get(i).completed(), results.get(i)::toString);
      assertEquals(requests.get(i).lengthBytes(), results.get(i).result().bytes());
    }
    assertRegion(local.segment(), spans(requests, data), guard, "requester region");
    assertRegion(remote.segment(), List.of(), data, "source region untouched");
  }

  /** Runs {@code requests} through the flow and collects every result. */
  private List<TransferResult> runFlow(List<TransferRequest> requests, StreamSettings settings)
      throws Exception {
    return Source.from(requests)
        .via(TransferStreams.flow(pair.requester, settings))
        .runWith(Sink.seq(), streams)
        .toCompletableFuture()
        .get(60, TimeUnit.SECONDS);
  }

  /**
   * The source region holds pattern {@code data}, the requester region guard pattern {@code guard}.
   */
  private void prepareForReads(long data, long guard) {
    Pattern.fill(remote.segment(), 0, REGION, data, 0);
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
  }

  /**
   * The loans workers hold on the requester's region at the instant {@code stage} completes (or
   * fails), read on the completing thread: a stage that says it drained must hold none.
   */
  private CompletableFuture<Long> loansWhenDone(CompletionStage<?> stage) {
    CompletableFuture<Long> loans = new CompletableFuture<>();
    stage.whenComplete((v, failure) -> loans.complete(((Registration) local).loans()));
    return loans;
  }

  /** Waits until the requester engine holds no batch, task, byte or loan (the budgets catch up). */
  private void assertNothingCharged() {
    assertTrue(
        RawLane.awaitCondition(
            Duration.ofSeconds(15),
            () -> {
              var owed = pair.requester.owed();
              return owed.batches() == 0 && owed.isIdle();
            }),
        () -> "still charged: " + pair.requester.owed());
  }

  /**
   * Every byte outside the requests' ranges is its guard; inside, the source's byte or the guard.
   */
  private void assertGuardsOrData(List<TransferRequest> requests, long data, long guard) {
    List<TransferRequest> sorted = new ArrayList<>(requests);
    sorted.sort(java.util.Comparator.comparingLong(TransferRequest::localOffset));
    long at = 0;
    for (TransferRequest r : sorted) {
      long bad = Pattern.verify(local.segment(), at, r.localOffset() - at, guard, at);
      assertEquals(-1, bad, "requester byte outside the requested ranges");
      for (long i = 0; i < r.lengthBytes(); i++) {
        byte b = local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, r.localOffset() + i);
        if (b != Pattern.at(data, r.remoteOffset() + i)
            && b != Pattern.at(guard, r.localOffset() + i)) {
          throw new AssertionError(
              "byte " + (r.localOffset() + i) + " is neither the source's nor the guard");
        }
      }
      at = r.localOffset() + r.lengthBytes();
    }
    assertEquals(
        -1,
        Pattern.verify(local.segment(), at, REGION - at, guard, at),
        "requester bytes after the last range");
    assertRegion(remote.segment(), List.of(), data, "source region untouched");
  }
}
