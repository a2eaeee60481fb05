package io.orbite.transport.file;

import io.orbite.nativebind.Errno;
import io.orbite.transport.lane.LaneRuntime;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link FileIo} over FileChannel positioned I/O, for machines without io_uring or when it is
 * disabled: each operation is one {@code read(dst, position)} or {@code write(src, position)} on a
 * worker thread of the lane's own pool (threads of the lane runtime; one system call, so a short
 * result reaches the lane as it does from io_uring), and its result lands in a completion queue the
 * lane polls.
 *
 * <p>Cancel: an operation not yet started completes -ECANCELED without touching memory. A running
 * operation on a FIFO, which may wait forever, is interrupted, which closes that FileChannel (the
 * JDK's only way to stop a blocked read); the file segment is then unusable and must be opened
 * again. A running operation on a regular file is left to finish, as io_uring does (-EALREADY).
 */
final class ChannelFileIo implements FileIo {
  private static final Logger LOG = LoggerFactory.getLogger(ChannelFileIo.class);

  private static final class Running {
    final FileHandle file;
    volatile Thread thread;
    volatile boolean cancelled;

    Running(FileHandle file) {
      this.file = file;
    }
  }

  private final int capacity;
  private final ExecutorService workers;
  private final Map<Long, Running> running = new ConcurrentHashMap<>();
  private final LinkedBlockingQueue<long[]> completions = new LinkedBlockingQueue<>();

  /**
   * A pool of {@code threads} workers named {@code <threadPrefix>-<n>} (daemon threads of the lane
   * runtime, made as operations arrive), for at most {@code capacity} operations in flight.
   */
  ChannelFileIo(int capacity, int threads, String threadPrefix) {
    this.capacity = capacity;
    this.workers =
        new ThreadPoolExecutor(
            threads,
            threads,
            0L,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(),
            LaneRuntime.factory(threadPrefix));
  }

  @Override
  public String engine() {
    return "FileChannel";
  }

  @Override
  public int capacity() {
    return capacity;
  }

  @Override
  public void submit(
      long id, boolean write, FileHandle file, MemorySegment memory, long fileOffset) {
    Running r = new Running(file);
    running.put(id, r);
    workers.execute(() -> run(id, r, write, memory, fileOffset));
  }

  private void run(long id, Running r, boolean write, MemorySegment memory, long fileOffset) {
    r.thread = Thread.currentThread();
    int result;
    if (r.cancelled) {
      result = -Errno.ECANCELED.number();
    } else {
      result = transfer(r.file, write, memory.asByteBuffer(), fileOffset);
    }
    r.thread = null;
    Thread.interrupted(); // a cancel that came as the call returned must not hit the next operation
    running.remove(id);
    completions.add(new long[] {id, result});
  }

  private static int transfer(FileHandle file, boolean write, ByteBuffer buffer, long fileOffset) {
    FileChannel ch = file.channel();
    try {
      int n;
      if (file.stream()) {
        n = write ? ch.write(buffer) : ch.read(buffer);
      } else {
        n = write ? ch.write(buffer, fileOffset) : ch.read(buffer, fileOffset);
      }
      return Math.max(n, 0); // -1 (end of file) is a zero-byte read, as pread returns
    } catch (AsynchronousCloseException e) {
      // ClosedByInterruptException included: our cancel closed the channel, so the segment is
      // retired and a later open of the path opens the file afresh.
      file.retire("closed by the cancel of a blocked FIFO operation");
      return -Errno.ECANCELED.number();
    } catch (ClosedChannelException e) {
      return -Errno.EBADF.number();
    } catch (IOException e) {
      LOG.warn("{}: {} at {} failed: {}", file, write ? "write" : "read", fileOffset, e.toString());
      return -Errno.EIO.number();
    }
  }

  @Override
  public void cancel(long id) {
    Running r = running.get(id);
    if (r == null) {
      return;
    }
    r.cancelled = true;
    Thread t = r.thread;
    if (t != null && r.file.stream()) {
      t.interrupt();
    }
  }

  @Override
  public int poll(long waitNanos, CompletionSink sink) {
    int n = 0;
    long[] c = completions.poll();
    if (c == null && waitNanos > 0) {
      try {
        c = completions.poll(waitNanos, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    while (c != null) {
      sink.complete(c[0], (int) c[1]);
      n++;
      c = completions.poll();
    }
    return n;
  }

  @Override
  public void close() {
    workers.shutdownNow();
  }

  @Override
  public String toString() {
    return "FileChannel pool (" + capacity + " in flight)";
  }
}
