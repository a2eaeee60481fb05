/**
 * The file transport: file segments ({@code TransferEngine.openFileSegment}) served by ring lanes,
 * duty cycles on the lane runtime that each own one {@link io.orbite.transport.file.FileIo} (an
 * io_uring, or a FileChannel worker pool where io_uring is unavailable or disabled), each with an
 * owner actor for its lifecycle. See docs/transports/file.md.
 */
package io.orbite.transport.file;
