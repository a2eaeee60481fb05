package io.orbite.engine;

import java.time.Instant;

/**
 * A resource owner that could not prove, within the destruction window, that its workers stopped
 * touching memory (C5, C7). What it holds stays retained, never freed under a worker: its memory
 * loans, its budget charges and, for an endpoint, its lane threads. It is listed by {@link
 * TransferEngine#quarantined()}, by {@link EngineOwed} and by every close, until the worker it
 * waits for lets go.
 *
 * @param owner the owner's name, for example {@code batch-3}, {@code endpoint 127.0.0.1:4000@5e1f}
 *     or {@code registration 7}
 * @param kind what kind of owner it is
 * @param reason why it could not be drained, naming the worker it waits for
 * @param tasks tasks it keeps charged
 * @param bytes bytes of those tasks (or of the retained range)
 * @param since when it was quarantined
 */
public record QuarantinedOwner(
    String owner, Kind kind, String reason, long tasks, long bytes, Instant since) {

  /** The owners that can be quarantined. */
  public enum Kind {
    /**
     * A batch whose tasks' workers did not drain: its tasks are UNQUIESCED, free() answers
     * BATCH_BUSY.
     */
    BATCH,
    /** A peer endpoint whose lane threads did not end when it was closed. */
    ENDPOINT,
    /**
     * A registered range whose loans did not come back after unregister: the memory stays mapped.
     */
    REGISTRATION,
    /**
     * A native completion lane (a file ring) whose kernel operation was cancelled but never
     * completed: the ring and the memory it may still write are kept for the process's life.
     */
    LANE,
    /**
     * A same-host peer's memory mapped by the SHM transport whose munmap failed: never used again.
     */
    MAPPING,
    /**
     * A source-side grant (an RDMA task's reservation) one of whose memory windows could not be
     * released, or whose QP could not be destroyed: its loan on the registration is kept, so that
     * memory is never freed.
     */
    GRANT,
    /**
     * One of the engine's owner actors (the Registry, Admission, the SegmentTable) that hit an
     * unexpected exception or stopped: it answers UNAVAILABLE from then on, naming itself, and what
     * it held (registrations, charges, peer entries) stays held for the process's life. Also an
     * RDMA source session's owner ({@code RdmaSourceSession ...}) that hit one: its session is
     * closed, and the loans of its grants that live on stay held.
     */
    OWNER
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase()
        + " "
        + owner
        + " quarantined since "
        + since
        + " ("
        + tasks
        + " task(s), "
        + bytes
        + " B retained): "
        + reason;
  }
}
