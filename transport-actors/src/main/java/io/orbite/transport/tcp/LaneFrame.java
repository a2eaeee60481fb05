package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.ReceiptSink;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One wire request, owned by the lane that carries it: a contiguous part of one task's local range
 * and the matching remote range, or a run of whole tasks of one batch that follow each other (task
 * indexes, local and remote ranges, each of {@link #unit} bytes) merged into one request ({@link
 * #absorb}). The range is named as the tasks' whole local registration and an offset into it, so a
 * frame costs no segment object. Each task of a frame gets its own receipt, all of them for what
 * happened to the frame: a frame moves, fails or is refused whole.
 *
 * <p>Frames are reused ({@link FramePool}): the dispatching thread fills one with {@link #set}
 * before it queues it, and from then on only the lane that carries it touches it, until the lane
 * has sent the frame's last receipt and given it back.
 */
final class LaneFrame {
  ReceiptSink sink;

  /** The first task the frame carries; the others follow it. */
  int taskIndex;

  /** How many tasks the frame carries (1 unless merged). */
  int tasks;

  /** The bytes each task's receipt counts: the frame's length unless tasks were merged. */
  long unit;

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

  /**
   * The lanes that may carry the frame (bit {@code i}: slot {@code i}), from its task's policy rule
   * ({@code TaskWork.laneMask}); 0: any lane. A frame retried after its lane broke, or parked while
   * no lane of its mask works, goes only to one of these.
   */
  long laneMask;

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
    this.tasks = 1;
    this.unit = length;
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
    this.laneMask = 0;
    return this;
  }

  /** Restricts the frame to the lanes {@code mask} names (0: any lane); after {@link #set}. */
  LaneFrame lanes(long mask) {
    this.laneMask = mask;
    return this;
  }

  /** Whether the lane in slot {@code slot} may carry this frame. */
  boolean allows(int slot) {
    return laneMask == 0 || (laneMask >>> slot & 1) != 0;
  }

  long length() {
    return length;
  }

  /**
   * Whether the task {@code taskIndex} of {@code sink}, of {@code length} bytes at {@code
   * localOffset} of {@code local} and {@code remoteOffset} of {@code regionId}, can join this
   * frame, which is then at most {@code capBytes} long: a whole task of the same batch, op, memory,
   * region, deadline, tier and lane mask, of the frame's unit size, that starts where the frame
   * ends on both sides and is the next task. A frame that is part of a larger task never takes one.
   */
  boolean absorbs(
      ReceiptSink sink,
      int taskIndex,
      Op op,
      MemorySegment local,
      long localOffset,
      long length,
      long regionId,
      long remoteOffset,
      long deadlineNanos,
      Priority priority,
      long laneMask,
      long capBytes) {
    return sink == this.sink
        && laneMask == this.laneMask
        && taskIndex == this.taskIndex + tasks
        && length == unit
        && this.length + length <= capBytes
        && op == this.op
        && localOffset == this.localOffset + this.length
        && remoteOffset == this.remoteOffset + this.length
        && regionId == this.regionId
        && deadlineNanos == this.deadlineNanos
        && priority == this.priority
        && local.equals(this.local);
  }

  /** Takes the next task (one {@link #absorbs} accepted) into this frame. */
  void absorb(long length) {
    tasks++;
    this.length += length;
  }

  /** Confirms every task of the frame: all its bytes moved. */
  void ok(ReceiptBatcher receipts, RemoteEffect effect) {
    for (int i = 0; i < tasks; i++) {
      receipts.ok(sink, taskIndex + i, unit, effect);
    }
  }

  /** Fails every task of the frame, each with {@code kind}, {@code effect} and {@code detail}. */
  void fail(ReceiptBatcher receipts, ErrorKind kind, RemoteEffect effect, String detail) {
    for (int i = 0; i < tasks; i++) {
      receipts.failed(sink, taskIndex + i, kind, effect, detail);
    }
  }

  /** "task 5", or "tasks 5-12" for a merged frame: for messages. */
  String taskLabel() {
    return tasks == 1 ? "task " + taskIndex : "tasks " + taskIndex + "-" + (taskIndex + tasks - 1);
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
