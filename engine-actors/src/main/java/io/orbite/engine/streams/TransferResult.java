package io.orbite.engine.streams;

import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferRequest;

/** What a transfer stream emits: a request and its outcome (completed or failed, never pending). */
public record TransferResult(TransferRequest request, TaskResult result) {
  public boolean completed() {
    return result.completed();
  }
}
