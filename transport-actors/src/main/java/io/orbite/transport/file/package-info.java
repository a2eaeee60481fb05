/**
 * The file transport: file segments ({@code TransferEngine.openFileSegment}) served by ring lanes,
 * actors on a pinned dispatcher that each own one {@link io.orbite.transport.file.FileIo} (an
 * io_uring, or a FileChannel worker pool where io_uring is unavailable or disabled) and poll its
 * completions in a duty cycle. See docs/transports/file.md.
 */
package io.orbite.transport.file;
