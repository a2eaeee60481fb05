package io.orbite.transport.file;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.spi.ReceiptSink;
import java.lang.foreign.MemorySegment;

/**
 * One chunk of a file task, owned by the ring lane it was queued on: the memory range, the file
 * range, how many bytes the kernel has confirmed so far, and whether (and why) it was cancelled. It
 * owes exactly one receipt.
 */
final class FileOp {
  final ReceiptSink sink;
  final int taskIndex;
  final boolean write;
  final FileHandle file;
  final MemorySegment memory;
  final long fileOffset;
  final long deadlineNanos;

  /** Bytes the kernel confirmed (short results add up here). */
  long progress;

  /** The id the op is in flight under (slot and generation), or -1 while queued. */
  long id = -1;

  boolean cancelRequested;
  long cancelRequestedNanos;
  ErrorKind cancelKind;
  String cancelReason;
  int shortResults;

  FileOp(
      ReceiptSink sink,
      int taskIndex,
      boolean write,
      FileHandle file,
      MemorySegment memory,
      long fileOffset,
      long deadlineNanos) {
    this.sink = sink;
    this.taskIndex = taskIndex;
    this.write = write;
    this.file = file;
    this.memory = memory;
    this.fileOffset = fileOffset;
    this.deadlineNanos = deadlineNanos;
  }

  long length() {
    return memory.byteSize();
  }

  String describe() {
    return (write ? "WRITE" : "READ")
        + " of "
        + length()
        + " B at offset "
        + fileOffset
        + " of "
        + file
        + " (task "
        + taskIndex
        + ", memory 0x"
        + Long.toHexString(memory.address())
        + ")";
  }
}
