package io.orbite.engine.streams;

import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferRequest;

/**
 * What a transfer stream emits: a request and its outcome (completed or failed, never pending).
 *
 * @param request the request as it entered the stream
 * @param result its terminal outcome: COMPLETED, FAILED or UNQUIESCED; a request refused before
 *     submit is FAILED with index 0 and a detail starting {@code "refused at submit:"}
 */
public record TransferResult(TransferRequest request, TaskResult result) {
  /**
   * Whether the request's task completed.
   *
   * @return {@link io.orbite.engine.TaskResult#completed() result().completed()}
   */
  public boolean completed() {
    return result.completed();
  }
}
