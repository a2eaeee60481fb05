package io.orbite.transport.tcp;

import io.orbite.engine.Op;
import io.orbite.engine.spi.ReceiptSink;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One wire request of a task, owned by the lane that carries it: a contiguous part of the task's
 * local range and the matching remote range. Mutable only by its lane's thread after enqueue.
 */
final class LaneFrame {
  final ReceiptSink sink;
  final int taskIndex;
  final Op op;
  final MemorySegment local;
  final long regionId;
  final long remoteOffset;
  final long deadlineNanos;
  /** Assigned by the lane when the frame is queued for the wire. */
  long requestId;
  /** Where the frame's first byte sits in the lane's outgoing byte stream. */
  long streamStart;
  /** Bytes of a READ payload already placed into {@link #local}. */
  long received;
  /** A NIO view of {@link #local}, made once when the socket first touches the frame. */
  ByteBuffer view;
  /** Whether this frame was already handed from a broken lane to another one (it is retried once). */
  boolean retried;

  LaneFrame(ReceiptSink sink, int taskIndex, Op op, MemorySegment local, long regionId, long remoteOffset, long deadlineNanos) {
    this.sink = sink;
    this.taskIndex = taskIndex;
    this.op = op;
    this.local = local;
    this.regionId = regionId;
    this.remoteOffset = remoteOffset;
    this.deadlineNanos = deadlineNanos;
  }

  long length() {
    return local.byteSize();
  }

  ByteBuffer view() {
    if (view == null) {
      view = local.asByteBuffer();
    }
    return view;
  }
}
