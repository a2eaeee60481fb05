package io.orbite.qualification.example;

import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.streams.StreamSettings;
import io.orbite.engine.streams.TransferResult;
import io.orbite.engine.streams.TransferStreams;
import io.orbite.qualification.cli.Progress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.IntStream;
import org.apache.pekko.Done;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;

/**
 * One pull of every KV block through {@link TransferStreams#flow}, with what it found: each block's
 * result, and when each request's first block entered the stream and its last result left it. The
 * untimed warm-up passes and the timed pass run this same stream.
 *
 * @param results each block's result, by block index (null: none arrived)
 * @param remaining blocks of each request without a result
 * @param firstIn when each request's first block entered the stream (nanoTime; -1: never)
 * @param lastOut when each request's last result arrived (nanoTime)
 * @param duplicates results that matched no block, or a block a second time
 * @param problem why the stream did not end cleanly, or null
 * @param seconds from the first pull to the stream's end
 */
record Pass(
    AtomicReferenceArray<TransferResult> results,
    AtomicIntegerArray remaining,
    AtomicLongArray firstIn,
    AtomicLongArray lastOut,
    AtomicInteger duplicates,
    String problem,
    double seconds) {

  /** What every pass pulls: the READs, and how a result maps back to its block and request. */
  record Plan(
      TransferEngine engine,
      List<TransferRequest> reads,
      Map<Long, Integer> byLocalOffset,
      int[] requestOf,
      int requestCount,
      StreamSettings settings,
      Duration timeout) {}

  /** Bytes of completed results. */
  long bytes() {
    long sum = 0;
    for (int i = 0; i < results.length(); i++) {
      TransferResult r = results.get(i);
      sum += r != null && r.completed() ? r.result().bytes() : 0;
    }
    return sum;
  }

  /** Blocks without a completed result. */
  long failedOrMissing() {
    long c = 0;
    for (int i = 0; i < results.length(); i++) {
      TransferResult r = results.get(i);
      c += r == null || !r.completed() ? 1 : 0;
    }
    return c;
  }

  /**
   * Pulls every block once, reporting to {@code progress}; never throws for the stream's own
   * failures (see {@link #problem}).
   */
  static Pass run(Plan plan, Progress progress) throws InterruptedException {
    int n = plan.reads().size();
    int[] requestOf = plan.requestOf();
    // Written by the stream's callbacks, read here: atomics, so a pass given up on is read safely
    // too.
    AtomicIntegerArray remaining = new AtomicIntegerArray(plan.requestCount());
    for (int i = 0; i < n; i++) {
      remaining.incrementAndGet(requestOf[i]);
    }
    AtomicLongArray firstIn = new AtomicLongArray(plan.requestCount());
    AtomicLongArray lastOut = new AtomicLongArray(plan.requestCount());
    for (int r = 0; r < plan.requestCount(); r++) {
      firstIn.set(r, -1);
    }
    AtomicReferenceArray<TransferResult> results = new AtomicReferenceArray<>(n);
    AtomicInteger duplicates = new AtomicInteger();
    long[] doneBytes = new long[1];
    int[] doneCount = new int[1];
    long start = System.nanoTime();
    // The map stage runs when the transfer stage pulls, so its time is when the block enters the
    // flow.
    // Both it and the sink run inside one fused stream island: no two of these callbacks run at
    // once.
    Pair<CompletionStage<Done>, CompletionStage<Done>> running =
        Source.from(IntStream.range(0, n).boxed().toList())
            .map(
                i -> {
                  firstIn.compareAndSet(requestOf[i], -1, System.nanoTime());
                  return plan.reads().get(i);
                })
            .viaMat(TransferStreams.flow(plan.engine(), plan.settings()), Keep.right())
            .toMat(
                Sink.foreach(
                    result -> {
                      long now = System.nanoTime();
                      Integer i = plan.byLocalOffset().get(result.request().localOffset());
                      if (i == null || !results.compareAndSet(i, null, result)) {
                        duplicates.incrementAndGet();
                        return;
                      }
                      if (remaining.decrementAndGet(requestOf[i]) == 0) {
                        lastOut.set(requestOf[i], now);
                      }
                      doneCount[0]++;
                      doneBytes[0] += result.result().bytes();
                      progress.update(doneCount[0], doneBytes[0]);
                    }),
                Keep.both())
            .run(plan.engine().system());
    // The stream must end by itself once every result is out (no take(n)): a flow that emits every
    // result but never completes is reported as a failure here, not papered over.
    long timeoutMs = plan.timeout().toMillis();
    String problem = null;
    try {
      running.second().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      problem =
          "the transfer stream did not finish within "
              + plan.timeout().toSeconds()
              + " s ("
              + (n - total(remaining))
              + " of "
              + n
              + " results arrived)";
    } catch (ExecutionException e) {
      problem = "the transfer stream failed: " + e.getCause();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    if (problem == null) {
      // The flow's own materialized value: every batch it submitted has drained.
      try {
        running.first().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        problem =
            "the transfer stage did not report its batches drained within 30 s of the last result";
      } catch (ExecutionException e) {
        problem = "the transfer stage failed to drain: " + e.getCause();
      }
    }
    return new Pass(results, remaining, firstIn, lastOut, duplicates, problem, seconds);
  }

  private static int total(AtomicIntegerArray remaining) {
    int sum = 0;
    for (int i = 0; i < remaining.length(); i++) {
      sum += remaining.get(i);
    }
    return sum;
  }
}
