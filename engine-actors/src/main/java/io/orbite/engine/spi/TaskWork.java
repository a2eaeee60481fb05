package io.orbite.engine.spi;

import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import java.lang.foreign.MemorySegment;

/**
 * One admitted task handed to a transport. The engine (the batch) holds a loan on the local
 * registration until every receipt of the task has arrived.
 *
 * @param local the whole local registration the task reads into or writes from (not a slice: a task
 *     costs no segment object); the task's range is {@code [localOffset, localOffset +
 *     lengthBytes)} of it, validated before admission
 * @param deadlineNanos {@link System#nanoTime()} by which the task must finish
 * @param laneMask the TCP lanes that may carry the task (bit {@code i}: the lane in slot {@code i}
 *     of the channel), from the policy rule that chose its transport ({@code
 *     policies[i].choose.laneMask}); {@link #ANY} (0) restricts nothing. Read by TCP only, so it
 *     stays right when the task fails over to TCP from another transport
 * @param railMask the RDMA rails its slices may be posted on (bit {@code i}: the transport's rail
 *     {@code i}), from {@code policies[i].choose.railMask}; {@link #ANY} (0) restricts nothing.
 *     Read by RDMA only
 */
public record TaskWork(
    ReceiptSink sink,
    int taskIndex,
    Op op,
    MemorySegment local,
    long localOffset,
    long regionId,
    long remoteOffset,
    long lengthBytes,
    long deadlineNanos,
    Priority priority,
    long laneMask,
    long railMask) {

  /** A mask that restricts nothing: a rule's mask always names at least one lane or rail. */
  public static final long ANY = 0;

  /** A task no rule restricts to some lanes or rails. */
  public TaskWork(
      ReceiptSink sink,
      int taskIndex,
      Op op,
      MemorySegment local,
      long localOffset,
      long regionId,
      long remoteOffset,
      long lengthBytes,
      long deadlineNanos,
      Priority priority) {
    this(
        sink,
        taskIndex,
        op,
        local,
        localOffset,
        regionId,
        remoteOffset,
        lengthBytes,
        deadlineNanos,
        priority,
        ANY,
        ANY);
  }
}
