package io.orbite.transport.shm;

import io.orbite.engine.Access;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.MemorySegment;

/**
 * One peer allocation mapped into this process: exactly the exported range, with exactly the
 * protection its access grants, through this process's own open file description of the memfd (on
 * which the activity lock is taken). Confined to its lane's thread.
 */
final class ShmMapping {
  final SharedRegion region;
  final int fd;

  /** The mapping as returned by mmap (unmapped with this very segment). */
  final MemorySegment mapped;

  /** What copies use: read-only for a READ-only grant, so a bug cannot write through it. */
  final MemorySegment view;

  private ShmMapping(SharedRegion region, int fd, MemorySegment mapped) {
    this.region = region;
    this.fd = fd;
    this.mapped = mapped;
    this.view = region.access() == Access.READ ? mapped.asReadOnly() : mapped;
  }

  /** Opens and maps {@code region} of the peer {@code host}; the caller owns the result. */
  static ShmMapping open(SharedHost host, SharedRegion region) {
    if (region.offset() % ShmLocks.PAGE != 0) {
      throw new PeerProof.Refused(
          "SHM: region "
              + region.regionId()
              + " starts at offset "
              + region.offset()
              + ", not page aligned");
    }
    int fd = PeerProof.openRegion(host, region);
    try {
      int prot =
          switch (region.access()) {
            case READ -> Libc.PROT_READ;
            case WRITE -> Libc.PROT_WRITE;
            case READ_WRITE -> Libc.PROT_READ | Libc.PROT_WRITE;
          };
      MemorySegment mapped =
          Libc.mmap(region.lengthBytes(), prot, Libc.MAP_SHARED, fd, region.offset());
      try {
        // Prefault the page tables now, so the first transfer copies at memory speed. Advisory:
        // kernels before 5.14 refuse it (EINVAL) and the pages fault in on first touch instead.
        Libc.madvise(
            mapped.reinterpret(ShmLocks.pageAligned(region.lengthBytes())),
            (prot & Libc.PROT_WRITE) != 0 ? Libc.MADV_POPULATE_WRITE : Libc.MADV_POPULATE_READ);
      } catch (NativeCallException ignored) {
        // Only a missed optimisation.
      }
      return new ShmMapping(region, fd, mapped);
    } catch (RuntimeException e) {
      Libc.close(fd);
      throw e;
    }
  }
}
