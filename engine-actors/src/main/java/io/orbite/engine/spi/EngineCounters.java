package io.orbite.engine.spi;

import java.util.concurrent.atomic.LongAdder;

/**
 * Cumulative counters of one engine incarnation, written by any thread. Observability reads them;
 * they carry no authority to release anything.
 */
public final class EngineCounters {
  /** Data-lane and control connections this engine opened to peers. */
  public final LongAdder connectionsOpened = new LongAdder();
  /** Connections this engine accepted. */
  public final LongAdder connectionsAccepted = new LongAdder();
  /** Accepted connections closed at once because too many were waiting for their first frame. */
  public final LongAdder connectionsRefused = new LongAdder();
  /** Frames refused for breaking the protocol (foreign magic, truncated, absurd length...). */
  public final LongAdder framesRejected = new LongAdder();
  /** Source side: bytes served to READs and applied from WRITEs. */
  public final LongAdder sourceBytesRead = new LongAdder();
  public final LongAdder sourceBytesWritten = new LongAdder();
  /** Source side: requests refused by the authority check. */
  public final LongAdder sourceRefusals = new LongAdder();
  /** Requester side: bytes of completed tasks. */
  public final LongAdder bytesCompleted = new LongAdder();
  public final LongAdder tasksCompleted = new LongAdder();
  /** Requester side: tasks that ended in any state but COMPLETED (UNQUIESCED ones included). */
  public final LongAdder tasksFailed = new LongAdder();
  /** Requester side: tasks reported UNQUIESCED (their workers did not let go within the destruction window). */
  public final LongAdder tasksUnquiesced = new LongAdder();
  /** Requester side: READ frames sent again on another lane after their lane broke (C5: only after drain). */
  public final LongAdder readRetries = new LongAdder();
}
