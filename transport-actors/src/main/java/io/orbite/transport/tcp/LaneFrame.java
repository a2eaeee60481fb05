package io.orbite.transport.tcp;

import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.spi.ReceiptSink;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One wire request of a task, owned by the lane that carries it: a contiguous part of the task's
 * local range and the matching remote range. The range is named as the task's whole local
 * registration and an offset into it, so a frame costs no segment object.
 *
 * <p>Frames are reused ({@link FramePool}): the dispatching thread fills one with {@link #set}
 * before it queues it, and from then on only the lane that carries it touches it, until the lane
 * has sent the frame's last receipt and given it back.
 */
final class LaneFrame {
  ReceiptSink sink;
  int taskIndex;
  Op op;

  /**
   * The task's whole local registration; the frame covers {@link #localOffset} + {@link #length} of
   * it.
   */
  MemorySegment local;

  long localOffset;
  long length;
  long regionId;
  long remoteOffset;
  long deadlineNanos;

  /** The task's tier: where the frame waits in its lane's post queue (C14). */
  Priority priority;

  /** Assigned by the lane when the frame is queued for the wire. */
  long requestId;

  /** Where the frame's first byte sits in the lane's outgoing byte stream. */
  long streamStart;

  /** Bytes of a READ payload already placed into local memory. */
  long received;

  /**
   * A NIO view of the frame's local range, made only when the socket touches that memory directly.
   */
  ByteBuffer view;

  /**
   * Whether this frame was already handed from a broken lane to another one (it is retried once).
   */
  boolean retried;

  /** Fills this frame for a new request; every field is (re)set. */
  LaneFrame set(
      ReceiptSink sink,
      int taskIndex,
      Op op,
      MemorySegment local,
      long localOffset,
      long length,
      long regionId,
      long remoteOffset,
      long deadlineNanos,
      Priority priority) {
    this.sink = sink;
    this.taskIndex = taskIndex;
    this.op = op;
    this.local = local;
    this.localOffset = localOffset;
    this.length = length;
    this.regionId = regionId;
    this.remoteOffset = remoteOffset;
    this.deadlineNanos = deadlineNanos;
    this.priority = priority;
    this.requestId = 0;
    this.streamStart = 0;
    this.received = 0;
    this.view = null;
    this.retried = false;
    return this;
  }

  long length() {
    return length;
  }

  ByteBuffer view() {
    if (view == null) {
      view = local.asSlice(localOffset, length).asByteBuffer();
    }
    return view;
  }

  /** Drops what the frame refers to, so a pooled frame keeps no batch or memory reachable. */
  void clear() {
    sink = null;
    local = null;
    view = null;
    priority = null;
  }
}
