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
  public final LongAdder tasksFailed = new LongAdder();
  /**
   * Owners (file ring lanes) that could not prove their work stopped touching memory within the
   * destruction window and were quarantined: their native resources, loans and charges are kept.
   */
  public final LongAdder ownersQuarantined = new LongAdder();
}
