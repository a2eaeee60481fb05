package io.orbite.engine.streams;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;

/**
 * Pekko Streams views of an engine. Every stage submits through the public batch API, so budgets,
 * authority and outcomes are exactly those of {@code Batch}; demand follows the engine's budgets.
 */
public final class TransferStreams {
  private TransferStreams() {}

  /**
   * Requests in, results out (a failed task is a result, not a stream failure). The materialized
   * stage completes once every batch the flow submitted has drained, also after cancellation.
   *
   * @param engine the engine whose batches carry the requests
   * @param settings how requests are grouped into batches, ordered and bounded
   * @return a flow emitting one terminal {@link TransferResult} per request; its materialized stage
   *     completes with Done once drained, or fails UNQUIESCED if the stage was stopped before it
   *     could see its batches drain
   */
  public static Flow<TransferRequest, TransferResult, CompletionStage<Done>> flow(
      TransferEngine engine, StreamSettings settings) {
    return Flow.fromGraph(new TransferStage(engine, settings));
  }

  /**
   * Writes a stream of blocks (WRITE requests) into remote segments. Completes when every block is
   * confirmed and every batch drained; fails with the first failed block's kind after drain.
   *
   * @param engine the engine whose batches carry the blocks
   * @param settings how blocks are grouped into batches and bounded
   * @return a sink whose materialized stage completes with Done, or fails with a {@link
   *     TransferException}: the first failed block's kind, INVALID_ARGUMENT for a request that is
   *     not a WRITE, UNQUIESCED when a drain could not be proven
   */
  public static Sink<TransferRequest, CompletionStage<Done>> writeSink(
      TransferEngine engine, StreamSettings settings) {
    return Flow.<TransferRequest>create()
        .map(
            r -> {
              if (r.op() != Op.WRITE) {
                throw new TransferException(
                    ErrorKind.INVALID_ARGUMENT, "writeSink takes WRITE requests, got " + r.op());
              }
              return r;
            })
        .viaMat(flow(engine, settings), Keep.right())
        .toMat(
            Sink.foreach(TransferStreams::requireCompleted),
            (drained, done) ->
                // Complete only once both the sink and the drain are done; report the sink's
                // failure
                // first, else a failed drain (UNQUIESCED), never Done over an unproven drain.
                done.handle((d, failure) -> failure)
                    .thenCombine(
                        drained.handle((d, f) -> f),
                        (failure, drainFailure) -> {
                          Throwable first = failure != null ? failure : drainFailure;
                          if (first != null) {
                            Throwable cause =
                                first instanceof java.util.concurrent.CompletionException ce
                                        && ce.getCause() != null
                                    ? ce.getCause()
                                    : first;
                            throw cause instanceof RuntimeException re
                                ? re
                                : new TransferException(
                                    ErrorKind.UNAVAILABLE, "writeSink failed", cause);
                          }
                          return Done.getInstance();
                        }));
  }

  /**
   * Reads a list of remote ranges (READ requests); emits each result.
   *
   * @param engine the engine whose batches carry the reads
   * @param reads the READ requests, emitted in this order into {@link #flow}
   * @param settings how reads are grouped into batches, ordered and bounded
   * @return a source of one terminal result per read; its materialized stage is the flow's drain
   *     stage
   * @throws TransferException INVALID_ARGUMENT at once, naming the op, when a request is not a READ
   */
  public static Source<TransferResult, CompletionStage<Done>> readSource(
      TransferEngine engine, List<TransferRequest> reads, StreamSettings settings) {
    for (TransferRequest r : reads) {
      if (r.op() != Op.READ) {
        throw new TransferException(
            ErrorKind.INVALID_ARGUMENT, "readSource takes READ requests, got " + r.op());
      }
    }
    return Source.from(reads).viaMat(flow(engine, settings), Keep.right());
  }

  private static void requireCompleted(TransferResult r) {
    if (!r.completed()) {
      throw new TransferException(
          r.result().errorKind() == null ? ErrorKind.PROTOCOL : r.result().errorKind(),
          "block at remote region "
              + r.request().regionId()
              + " ["
              + r.request().remoteOffset()
              + ", +"
              + r.request().lengthBytes()
              + ") did not complete: "
              + r.result().detail());
    }
  }
}
