package io.orbite.engine.spi;

import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.registry.Registration;
import java.lang.foreign.MemorySegment;

/**
 * One admitted task handed to a transport. The engine holds a loan on {@code localRegistration}
 * until every receipt of the task has arrived.
 *
 * @param local exactly the task's local range
 * @param deadlineNanos {@link System#nanoTime()} by which the task must finish
 */
public record TaskWork(
    ReceiptSink sink,
    int taskIndex,
    Op op,
    Registration localRegistration,
    MemorySegment local,
    long regionId,
    long remoteOffset,
    long lengthBytes,
    long deadlineNanos,
    Priority priority) {}
