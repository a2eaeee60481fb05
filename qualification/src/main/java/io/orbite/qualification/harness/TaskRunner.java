package io.orbite.qualification.harness;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.cli.Progress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Pushes a list of requests through the public batch API: {@code tasksPerBatch} tasks per batch, at
 * most {@code batchesInFlight} batches outstanding, every batch freed after it drains. Returns one
 * result per request, in request order.
 */
public final class TaskRunner {
  private TaskRunner() {}

  public static List<TaskResult> run(
      TransferEngine engine,
      List<TransferRequest> requests,
      int tasksPerBatch,
      int batchesInFlight,
      Progress progress) {
    record Outstanding(Batch batch, int first, CompletableFuture<BatchStatus> done) {}
    List<TaskResult> results = new ArrayList<>(requests.size());
    ArrayDeque<Outstanding> outstanding = new ArrayDeque<>();
    long bytes = 0;
    int next = 0;
    while (next < requests.size() || !outstanding.isEmpty()) {
      if (next < requests.size() && outstanding.size() < batchesInFlight) {
        int end = Math.min(requests.size(), next + tasksPerBatch);
        Batch batch = engine.allocateBatch(end - next);
        batch.submit(requests.subList(next, end));
        outstanding.add(new Outstanding(batch, next, batch.awaitAsync().toCompletableFuture()));
        next = end;
        continue;
      }
      Outstanding o = outstanding.poll();
      BatchStatus status = o.done().join();
      for (TaskResult r : status.tasks()) {
        results.add(
            new TaskResult(
                o.first() + r.index(),
                r.state(),
                r.bytes(),
                r.errorKind(),
                r.remoteEffect(),
                r.locallyDrained(),
                r.detail(),
                r.elapsedNanos(),
                r.transport(),
                r.route(),
                r.attempts()));
        bytes += r.bytes();
      }
      o.batch().free();
      if (progress != null) {
        progress.update(results.size(), bytes);
      }
    }
    return results;
  }
}
