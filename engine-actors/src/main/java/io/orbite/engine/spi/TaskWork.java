package io.orbite.engine.spi;

import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import java.lang.foreign.MemorySegment;

/**
 * One admitted task handed to a transport. The engine (the batch) holds a loan on the local
 * registration until every receipt of the task has arrived.
 *
 * @param local exactly the task's local range
 * @param deadlineNanos {@link System#nanoTime()} by which the task must finish
 */
public record TaskWork(
    ReceiptSink sink,
    int taskIndex,
    Op op,
    MemorySegment local,
    long regionId,
    long remoteOffset,
    long lengthBytes,
    long deadlineNanos,
    Priority priority) {}
