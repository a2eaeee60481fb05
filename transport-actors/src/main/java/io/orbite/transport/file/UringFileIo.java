package io.orbite.transport.file;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.uring.IoUring;
import io.orbite.nativebind.uring.Ring;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link FileIo} over one io_uring ({@link Ring#openSingleIssuer}: only the lane's thread enters
 * it), READ and WRITE entries with the operation id as user_data, ASYNC_CANCEL entries tagged with
 * {@link #CANCEL_TAG}. The ring has twice the lane's depth in submission entries, so a cancel
 * always finds a slot, and the kernel gives it twice that in completion entries, so completions
 * never overflow.
 */
final class UringFileIo implements FileIo {
  private static final Logger LOG = LoggerFactory.getLogger(UringFileIo.class);

  /** user_data bit that marks an ASYNC_CANCEL's own completion (operation ids never use it). */
  static final long CANCEL_TAG = 1L << 62;

  private static final int REAP_BATCH = 1024;

  private final Ring ring;
  private final int capacity;
  private CompletionSink current;
  private final Ring.CompletionHandler handler = this::onCqe;

  UringFileIo(int capacity) {
    this.capacity = capacity;
    // Single issuer with deferred completions, as fio's io_uring engine sets its ring up: the
    // lane's thread is bound to the ring at its first enter (the ring is created here, on the
    // transport's thread), and io-wq completions are posted at the lane's next enter.
    this.ring = Ring.openSingleIssuer(Math.max(2, capacity * 2));
  }

  @Override
  public String engine() {
    return "io_uring";
  }

  @Override
  public int capacity() {
    return capacity;
  }

  @Override
  public void submit(
      long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
    makeRoom();
    // A FIFO has no position: io_uring ignores the offset of a stream file, 0 says so plainly.
    ring.prepare(
        write ? IoUring.IORING_OP_WRITE : IoUring.IORING_OP_READ,
        file.fd(),
        file.stream() ? 0 : fileOffset,
        memory.address(),
        Math.toIntExact(memory.byteSize()),
        0,
        id);
  }

  @Override
  public void cancel(long id) {
    makeRoom();
    ring.prepare(IoUring.IORING_OP_ASYNC_CANCEL, -1, 0, id, 0, 0, CANCEL_TAG | id);
  }

  private void makeRoom() {
    if (ring.sqSpace() == 0) {
      ring.enter(0, 0);
    }
  }

  @Override
  public int poll(long waitNanos, CompletionSink sink) {
    return poll(waitNanos, 1, sink);
  }

  @Override
  public int poll(long waitNanos, int minComplete, CompletionSink sink) {
    current = sink;
    try {
      // min_complete counts every ready completion, so waiting for minComplete when fewer are
      // ready returns as soon as the CQ holds that many (or the wait runs out).
      int min = waitNanos > 0 && ring.ready() < minComplete ? minComplete : 0;
      ring.enter(min, waitNanos);
      int n = 0;
      int got;
      while ((got = ring.reap(handler, REAP_BATCH)) > 0) {
        n += got;
      }
      return n;
    } finally {
      current = null;
    }
  }

  private void onCqe(long userData, int result, int flags) {
    if ((userData & CANCEL_TAG) != 0) {
      // 0: cancelled; -ENOENT: already completed; -EALREADY: running and cannot be stopped
      // (a regular file's I/O), it completes by itself. The operation's own CQE says the rest.
      if (result < 0 && result != -Errno.ENOENT.number() && result != -Errno.EALREADY.number()) {
        LOG.warn(
            "{}: ASYNC_CANCEL of operation {} failed: {}",
            ring,
            userData & ~CANCEL_TAG,
            Errno.describe(-result));
      }
      return;
    }
    current.complete(userData, result);
  }

  @Override
  public void close() {
    ring.close();
  }

  @Override
  public String toString() {
    return ring.toString();
  }
}
