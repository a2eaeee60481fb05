package io.orbite.transport.shm;

import io.orbite.engine.Access;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.HostIdentity;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.FileStatus;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Proves, before SHM is chosen for a peer, that this process can reach the peer's shared memory:
 * the peer reports this host's identity (boot id and host name), its incarnation token opens
 * through {@code /proc/<pid>/fd/<fd>} as the published inode, holds the peer's epoch, and is still
 * locked live, and every exported allocation opens as its published inode with the access it
 * grants. A peer in another PID namespace or container fails one of these, and is then reached over
 * TCP. Blocking (opens files); runs on the blocking-I/O executor.
 */
final class PeerProof {
  /** The proof failed: SHM cannot reach this peer; {@code getMessage()} says why. */
  static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  private PeerProof() {}

  /** Returns a descriptor of the peer's token, open in this process, which the caller owns. */
  static int prove(SegmentDescriptor peer, SharedExports exports, HostIdentity local) {
    SharedHost h = exports.host();
    if (!h.bootId().equals(local.bootId()) || !h.hostname().equals(local.hostname())) {
      throw new Refused(
          "SHM: "
              + peer
              + " runs on another host ("
              + h.hostname()
              + ", boot "
              + h.bootId()
              + "; this is "
              + local.hostname()
              + ", boot "
              + local.bootId()
              + ")");
    }
    String tokenPath = procPath(h.pid(), h.tokenFd());
    int token;
    try {
      token = Libc.open(tokenPath, Libc.O_RDONLY | Libc.O_CLOEXEC);
    } catch (NativeCallException e) {
      throw new Refused(
          "SHM: cannot open the incarnation token of " + peer + ": " + e.getMessage());
    }
    try {
      FileStatus st = Libc.fstat(token);
      if (st.inode() != h.tokenInode()) {
        throw new Refused(
            "SHM: "
                + tokenPath
                + " is inode "
                + st.inode()
                + ", not the token "
                + h.tokenInode()
                + " that "
                + peer
                + " published (another process or namespace)");
      }
      MemorySegment page = Libc.mmap(ShmLocks.PAGE, Libc.PROT_READ, Libc.MAP_SHARED, token, 0);
      long epoch;
      try {
        epoch = page.get(ValueLayout.JAVA_LONG, 0);
      } finally {
        Libc.munmap(page);
      }
      if (epoch != peer.epoch()) {
        throw new Refused(
            "SHM: the token at "
                + tokenPath
                + " holds epoch "
                + Long.toHexString(epoch)
                + ", not "
                + Long.toHexString(peer.epoch()));
      }
      if (Libc.ofdTestLock(token, Libc.F_WRLCK, ShmLocks.LIVENESS, 1) == Libc.F_UNLCK) {
        throw new Refused(
            "SHM: the incarnation " + peer + " has ended (its token is no longer locked live)");
      }
      for (SharedRegion region : exports.regions()) {
        int fd = openRegion(h, region);
        Libc.close(fd);
      }
      return token;
    } catch (RuntimeException e) {
      Libc.close(token);
      if (e instanceof Refused) {
        throw e;
      }
      throw new Refused("SHM: proving " + peer + " failed: " + e.getMessage());
    }
  }

  /**
   * Opens one exported allocation with the access it grants and checks it is the published file.
   */
  static int openRegion(SharedHost h, SharedRegion region) {
    String path = procPath(h.pid(), region.fd());
    int flags = (region.access() == Access.READ ? Libc.O_RDONLY : Libc.O_RDWR) | Libc.O_CLOEXEC;
    int fd = Libc.open(path, flags);
    try {
      FileStatus st = Libc.fstat(fd);
      if (st.inode() != region.inode() || st.sizeBytes() < region.offset() + region.lengthBytes()) {
        throw new Refused(
            "SHM: "
                + path
                + " (inode "
                + st.inode()
                + ", "
                + st.sizeBytes()
                + " B) is not region "
                + region.regionId()
                + " (inode "
                + region.inode()
                + ", "
                + region.lengthBytes()
                + " B)");
      }
      return fd;
    } catch (RuntimeException e) {
      Libc.close(fd);
      throw e;
    }
  }

  static String procPath(int pid, int fd) {
    return "/proc/" + pid + "/fd/" + fd;
  }
}
