package io.orbite.transport.file;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.nativebind.Errno;
import io.orbite.transport.lane.LaneLifecycle;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each completion of a ring lane's {@link FileIo} means for its operation: the operation is
 * done (a receipt), continues with the bytes the kernel has not moved yet (a short result: never a
 * re-send of bytes it already took), or fails with what is known (cancelled and so drained, the
 * kernel's error, end of file, a WRITE the kernel stopped taking). A failure is reported only once
 * its completion came. Once the lane is quarantined, a late completion of the operation that
 * quarantined it changes nothing (C7). Confined to the lane's thread.
 */
final class RingCompletions implements FileIo.CompletionSink {
  private static final Logger LOG = LoggerFactory.getLogger(RingCompletions.class);

  private final String lane;
  private final RingSlots slots;
  private final FileIo io;
  private final ReceiptBatcher receipts;
  private final LongAdder laneBytes;
  private final LaneLifecycle lifecycle;
  private final long destructionWindowNanos;

  /**
   * @param lane the lane's name, for messages
   * @param slots the lane's operations in flight
   * @param io where a short result's remainder is submitted
   * @param receipts the lane's pass's receipts
   * @param laneBytes the lane's confirmed bytes
   * @param lifecycle the lane's lifecycle
   * @param destructionWindowNanos how long a cancel may go unanswered
   */
  RingCompletions(
      String lane,
      RingSlots slots,
      FileIo io,
      ReceiptBatcher receipts,
      LongAdder laneBytes,
      LaneLifecycle lifecycle,
      long destructionWindowNanos) {
    this.lane = lane;
    this.slots = slots;
    this.io = io;
    this.receipts = receipts;
    this.laneBytes = laneBytes;
    this.lifecycle = lifecycle;
    this.destructionWindowNanos = destructionWindowNanos;
  }

  @Override
  public void complete(long id, int result) {
    FileOp op = slots.find(id);
    if (op == null) {
      LOG.warn(
          "file ring lane {}: completion for unknown operation id {} (result {})",
          lane,
          Long.toHexString(id),
          result);
      return;
    }
    if (lifecycle.state() == LaneLifecycle.State.QUARANTINED
        && op.cancelRequested
        && System.nanoTime() - op.cancelRequestedNanos > destructionWindowNanos) {
      // Quarantine is sticky (C7): a late completion does not release what was retained.
      LOG.warn(
          "file ring lane {}: late completion ({}) for quarantined {}; kept quarantined",
          lane,
          result,
          op.describe());
      return;
    }
    if (result < 0) {
      slots.retire(op);
      failedInKernel(op, -result);
    } else if (result == 0) {
      slots.retire(op);
      movedNothing(op);
    } else {
      moved(op, result);
    }
  }

  private void moved(FileOp op, int result) {
    op.progress += result;
    if (op.progress >= op.length()) {
      slots.retire(op);
      laneBytes.add(op.length());
      receipts.ok(
          op.sink, op.taskIndex, op.length(), op.write ? RemoteEffect.APPLIED : RemoteEffect.NONE);
      return;
    }
    op.shortResults++;
    if (op.cancelRequested) {
      slots.retire(op);
      fail(
          op,
          op.cancelKind,
          effectSoFar(op),
          op.cancelReason
              + ": "
              + op.describe()
              + " stopped after a short "
              + (op.write ? "write" : "read")
              + " of "
              + op.progress
              + " B; drained");
      return;
    }
    // Continue with the bytes not yet moved: a short WRITE is never re-sent from its start.
    io.submit(
        op.id, op.write, op.file, op.memory.asSlice(op.progress), op.fileOffset + op.progress);
  }

  /** A zero-byte result ends the operation: end of file for a READ, a refusal for a WRITE. */
  private void movedNothing(FileOp op) {
    if (op.write) {
      fail(
          op,
          ErrorKind.UNAVAILABLE,
          effectSoFar(op),
          op.describe() + ": the kernel accepted 0 bytes after " + op.progress + " B");
    } else {
      fail(
          op,
          ErrorKind.INVALID_ARGUMENT,
          RemoteEffect.NONE,
          op.describe()
              + ": end of file after "
              + op.progress
              + " B (the file is shorter than the range; did it shrink after open?)");
    }
  }

  /** The kernel ended {@code op} with {@code errno}: cancelled (and so drained), or failed. */
  private void failedInKernel(FileOp op, int errno) {
    if (errno == Errno.ECANCELED.number() || errno == Errno.EINTR.number()) {
      fail(
          op,
          op.cancelKind != null ? op.cancelKind : ErrorKind.CANCELLED,
          effectSoFar(op),
          (op.cancelReason != null ? op.cancelReason : "cancelled")
              + ": "
              + op.describe()
              + " stopped in the kernel after "
              + op.progress
              + " B; drained");
    } else {
      fail(
          op,
          kindOf(errno),
          op.write ? RemoteEffect.UNKNOWN : RemoteEffect.NONE,
          op.describe() + " failed after " + op.progress + " B: " + Errno.describe(errno));
    }
  }

  private static RemoteEffect effectSoFar(FileOp op) {
    return op.write && op.progress > 0 ? RemoteEffect.APPLIED : RemoteEffect.NONE;
  }

  private void fail(FileOp op, ErrorKind kind, RemoteEffect effect, String detail) {
    receipts.failed(op.sink, op.taskIndex, kind, effect, detail);
  }

  /** The error kind of an operation the kernel failed with {@code errno}. */
  static ErrorKind kindOf(int errno) {
    if (errno == Errno.ENOSPC.number()
        || errno == Errno.EDQUOT.number()
        || errno == Errno.EFBIG.number()
        || errno == Errno.ENOMEM.number()) {
      return ErrorKind.RESOURCE_EXHAUSTED;
    }
    if (errno == Errno.EACCES.number()
        || errno == Errno.EPERM.number()
        || errno == Errno.EROFS.number()) {
      return ErrorKind.PERMISSION_DENIED;
    }
    if (errno == Errno.EINVAL.number()
        || errno == Errno.EFAULT.number()
        || errno == Errno.EBADF.number()
        || errno == Errno.ESPIPE.number()) {
      return ErrorKind.INVALID_ARGUMENT;
    }
    return ErrorKind.UNAVAILABLE;
  }
}
