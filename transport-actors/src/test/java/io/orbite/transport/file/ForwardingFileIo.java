package io.orbite.transport.file;

import java.lang.foreign.MemorySegment;

/**
 * A lane's {@link FileIo} that hands every call to the one the transport made: the tests that watch
 * or break a ring extend it and override only the calls they watch. The three-argument poll is left
 * to its default, so an override of {@link #poll(long, CompletionSink)} sees every poll.
 */
class ForwardingFileIo implements FileIo {
  final FileIo io;

  ForwardingFileIo(FileIo io) {
    this.io = io;
  }

  @Override
  public String engine() {
    return io.engine();
  }

  @Override
  public int capacity() {
    return io.capacity();
  }

  @Override
  public void submit(
      long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
    io.submit(id, write, file, memory, fileOffset);
  }

  @Override
  public void cancel(long id) {
    io.cancel(id);
  }

  @Override
  public int poll(long waitNanos, CompletionSink sink) {
    return io.poll(waitNanos, sink);
  }

  @Override
  public void close() {
    io.close();
  }

  @Override
  public String toString() {
    return io.toString();
  }
}
