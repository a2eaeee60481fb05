package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.SharedAllocation;
import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.wire.SharedHost;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.HostIdentity;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source side of SHM for one engine incarnation. Owns the incarnation token: a one-page memfd
 * that holds the epoch (so a requester that opened it through /proc can tell it reached this very
 * incarnation) and on which this process keeps a liveness read lock until {@link #close}. Allocates
 * engine memory in fresh memfds, each with its own liveness lock ({@link ShmBacking}).
 */
final class ShmMemory implements SharedMemory {
  private static final Logger LOG = LoggerFactory.getLogger(ShmMemory.class);

  private final int tokenFd;
  private final SharedHost host;
  private boolean closed;

  private ShmMemory(int tokenFd, SharedHost host) {
    this.tokenFd = tokenFd;
    this.host = host;
  }

  static ShmMemory open(String engineName, long epoch) {
    int fd = -1;
    try {
      fd = Libc.memfd_create("orbite-" + engineName + "-token", Libc.MFD_CLOEXEC);
      Libc.ftruncate(fd, ShmLocks.PAGE);
      MemorySegment page =
          Libc.mmap(ShmLocks.PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      try {
        page.set(ValueLayout.JAVA_LONG, 0, epoch);
      } finally {
        Libc.munmap(page);
      }
      Libc.ofdLock(fd, Libc.F_RDLCK, ShmLocks.LIVENESS, 1, false);
      long inode = Libc.fstat(fd).inode();
      HostIdentity id = HostIdentity.current();
      return new ShmMemory(
          fd, new SharedHost(id.hostname(), id.bootId(), Libc.getpid(), fd, inode));
    } catch (RuntimeException e) {
      if (fd >= 0) {
        Libc.close(fd);
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "shm: cannot create the incarnation token: " + e.getMessage(), e);
    }
  }

  @Override
  public SharedHost host() {
    return host;
  }

  @Override
  public SharedAllocation allocate(long bytes, String label) {
    long mapped = ShmLocks.pageAligned(bytes);
    int fd = -1;
    MemorySegment mapping = null;
    try {
      fd = Libc.memfd_create("orbite-" + label, Libc.MFD_CLOEXEC);
      Libc.ftruncate(fd, mapped);
      mapping = Libc.mmap(mapped, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      Libc.ofdLock(fd, Libc.F_RDLCK, ShmLocks.LIVENESS, 1, false);
      long inode = Libc.fstat(fd).inode();
      Arena arena = Arena.ofShared();
      MemorySegment whole = mapping;
      int owned = fd;
      // Closing the arena (the Registry's release) unmaps the memory and closes the memfd, which
      // also
      // drops every lock this process holds on it.
      MemorySegment segment =
          mapping.reinterpret(arena, s -> release(whole, owned)).asSlice(0, bytes);
      return new SharedAllocation(segment, arena, new ShmBacking(fd, inode));
    } catch (NativeCallException e) {
      if (mapping != null) {
        Libc.munmap(mapping);
      }
      if (fd >= 0) {
        Libc.close(fd);
      }
      boolean exhausted =
          e.is(Errno.ENOMEM)
              || e.is(Errno.ENOSPC)
              || e.is(Errno.EMFILE)
              || e.is(Errno.ENFILE)
              || e.is(Errno.EFBIG);
      throw new TransferException(
          exhausted ? ErrorKind.RESOURCE_EXHAUSTED : ErrorKind.UNAVAILABLE,
          "allocate " + bytes + " B in a memfd: " + e.getMessage(),
          e);
    }
  }

  private static void release(MemorySegment mapping, int fd) {
    try {
      Libc.munmap(mapping);
    } catch (NativeCallException e) {
      // The memfd stays mapped in this process for its life (C7: never retried).
      LOG.error("SHM allocation fd {}: munmap failed, mapping retained: {}", fd, e.getMessage());
    }
    Libc.close(fd);
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      Libc.close(tokenFd);
    }
  }
}
