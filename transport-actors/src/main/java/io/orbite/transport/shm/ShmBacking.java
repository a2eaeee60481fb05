package io.orbite.transport.shm;

import io.orbite.engine.spi.SharedBacking;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The memfd behind one exported allocation, on the source side: holds the allocation's liveness
 * lock from creation until the Registry fences it on unregister.
 */
final class ShmBacking implements SharedBacking {
  private static final Logger LOG = LoggerFactory.getLogger(ShmBacking.class);

  private final int fd;
  private final long inode;
  private boolean livenessWithdrawn;
  private boolean fenced;

  ShmBacking(int fd, long inode) {
    this.fd = fd;
    this.inode = inode;
  }

  @Override
  public int fd() {
    return fd;
  }

  @Override
  public long inode() {
    return inode;
  }

  @Override
  public long offset() {
    return 0;
  }

  /**
   * First withdraws liveness (a requester that locks activity afterwards sees the allocation dead
   * and copies nothing), then tries to take the activity lock exclusively: EAGAIN means a requester
   * is still inside a copy it started before the withdrawal, and the Registry polls again.
   */
  @Override
  public synchronized boolean tryFence() {
    if (fenced) {
      return true;
    }
    try {
      if (!livenessWithdrawn) {
        Libc.ofdLock(fd, Libc.F_UNLCK, ShmLocks.LIVENESS, 1, false);
        livenessWithdrawn = true;
      }
      Libc.ofdLock(fd, Libc.F_WRLCK, ShmLocks.ACTIVITY, 1, false);
      fenced = true;
      return true;
    } catch (NativeCallException e) {
      if (!e.is(Errno.EAGAIN)) {
        // Cannot prove requesters are out: stay unfenced, so the Registry retains the memory
        // (UNQUIESCED).
        LOG.warn("SHM allocation fd {}: fence failed: {}", fd, e.getMessage());
      }
      return false;
    }
  }
}
