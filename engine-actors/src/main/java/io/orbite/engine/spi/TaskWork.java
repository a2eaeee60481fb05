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
    Priority priority) {}
