package io.orbite.transport.file;

import java.lang.foreign.MemorySegment;

/**
 * The native function table of one ring lane: queue reads and writes between memory and a file, ask
 * for cancellation, and collect completions. Results have the kernel's form: bytes moved ({@code >=
 * 0}, possibly fewer than asked) or {@code -errno}. Every submitted operation completes exactly
 * once, cancelled or not; an implementation never drops a completion (a test decorator may, to
 * prove what the lane does when the kernel does not answer).
 *
 * <p>Single-threaded: only the lane's own thread calls it.
 */
public interface FileIo {
  /** Receives one completion. */
  @FunctionalInterface
  interface CompletionSink {
    void complete(long id, int result);
  }

  /** {@code "io_uring"} or {@code "FileChannel"}. */
  String engine();

  /** Most operations in flight at once. */
  int capacity();

  /**
   * Queues one operation: read {@code memory.byteSize()} bytes of {@code file} at {@code
   * fileOffset} into {@code memory}, or write them from it. It reaches the kernel at the next
   * {@link #poll}.
   */
  void submit(long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset);

  /**
   * Asks the kernel to stop operation {@code id}; its completion still comes (-ECANCELED or its
   * result).
   */
  void cancel(long id);

  /**
   * Submits what is queued, waits up to {@code waitNanos} for a completion if none is ready ({@code
   * 0}: do not wait), and hands every ready completion to {@code sink}.
   *
   * @return completions handed over
   */
  int poll(long waitNanos, CompletionSink sink);

  /**
   * As {@link #poll(long, CompletionSink)}, but when it waits it waits (up to {@code waitNanos})
   * until {@code minComplete} completions are ready rather than one. An engine that cannot wait for
   * several waits for one.
   */
  default int poll(long waitNanos, int minComplete, CompletionSink sink) {
    return poll(waitNanos, sink);
  }

  /** Releases the engine's resources; only once nothing is in flight. */
  void close();
}
