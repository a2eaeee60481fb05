package io.orbite.transport.file;

import io.orbite.engine.Access;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.nativebind.libc.Libc;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One opened file of the file table: a descriptor (io_uring lanes) or a FileChannel (FileChannel
 * lanes), opened once, so every operation admitted through it uses that file even if its path is
 * replaced. Counts the operations using it; once retired (replaced in the table, or the transport
 * closed) it closes when the last one ends, never under one.
 *
 * <p>Thread-safe: the table retires it on the transport's actor, lanes acquire and release it.
 */
public final class FileHandle {
  private static final Logger LOG = LoggerFactory.getLogger(FileHandle.class);

  private final Path path;
  private final Access access;
  private final Object fileKey;
  private final boolean stream;
  private final long lengthBytes;
  private final int fd;
  private final FileChannel channel;
  private final AtomicInteger openHandles;
  private int uses;
  private boolean closed;

  /**
   * The file segment's channel state: active until the handle is retired (replaced in the table,
   * closed with the requester side), then closed by this engine.
   */
  private final ChannelGate gate;

  FileHandle(
      Path path,
      Access access,
      Object fileKey,
      boolean stream,
      long lengthBytes,
      int fd,
      FileChannel channel,
      AtomicInteger openHandles) {
    this.path = path;
    this.access = access;
    this.fileKey = fileKey;
    this.stream = stream;
    this.lengthBytes = lengthBytes;
    this.fd = fd;
    this.channel = channel;
    this.openHandles = openHandles;
    this.gate = new ChannelGate("file " + path);
  }

  /** The state of the channel over this handle. */
  ChannelGate gate() {
    return gate;
  }

  /** The path it was opened at (it may name another file by now). */
  public Path path() {
    return path;
  }

  /** What it was opened for. */
  public Access access() {
    return access;
  }

  /** The file's identity (device and inode) at open. */
  Object fileKey() {
    return fileKey;
  }

  /** Whether it is a FIFO: offsets are ignored and reads wait for a writer's data. */
  public boolean stream() {
    return stream;
  }

  /** The file's size at open ({@code Long.MAX_VALUE} for a FIFO). */
  long lengthBytes() {
    return lengthBytes;
  }

  /** The descriptor (io_uring lanes); -1 for a FileChannel handle. */
  public int fd() {
    return fd;
  }

  /** The channel (FileChannel lanes); null for a descriptor handle. */
  public FileChannel channel() {
    return channel;
  }

  /** Takes a use for one operation; false (and nothing taken) once retired. */
  synchronized boolean acquire() {
    if (!gate.active()) {
      return false;
    }
    uses++;
    return true;
  }

  /** Returns a use; closes the file if it is retired and this was the last one. */
  synchronized void release() {
    uses--;
    if (!gate.active() && uses == 0) {
      closeNow();
    }
  }

  /** Refuses new uses from now on; closes at once if none is out. Idempotent. */
  synchronized void retire(String because) {
    gate.close(ChannelGate.Why.LOCAL_CLOSE, because);
    if (uses == 0) {
      closeNow();
    }
  }

  boolean retired() {
    return !gate.active();
  }

  synchronized int uses() {
    return uses;
  }

  private void closeNow() {
    if (closed) {
      return;
    }
    closed = true;
    openHandles.decrementAndGet();
    try {
      if (channel != null) {
        channel.close();
      } else {
        Libc.close(fd);
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("closing file segment {} failed: {}", path, e.toString());
    }
  }

  @Override
  public String toString() {
    return "file " + path;
  }
}
