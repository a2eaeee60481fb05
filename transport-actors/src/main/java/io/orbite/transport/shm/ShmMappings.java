package io.orbite.transport.shm;

import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The peer allocations one SHM copy lane has mapped, least recently used first, at most {@code
 * shm.maxMappings}, and the peer's incarnation token it tests. A mapping whose munmap fails is
 * quarantined: kept (with its descriptor) for the life of the process, counted, never used or
 * retried (C7). Guarded by the lane's owner lock: only the thread that copies touches it.
 */
final class ShmMappings {
  private static final Logger LOG = LoggerFactory.getLogger(ShmMappings.class);

  private final String lane;
  private final SharedHost host;
  private final Map<Long, SharedRegion> exports;
  private final int maxMappings;
  private final EngineTally counters;
  private final QuarantineLedger quarantine;
  private final Token token;
  private final LinkedHashMap<Long, ShmMapping> mapped = new LinkedHashMap<>(16, 0.75f, true);
  private final List<ShmMapping> quarantined = new ArrayList<>();

  /** The native memory of the lock calls, reused by every copy. */
  final Libc.LockScratch lockScratch = new Libc.LockScratch();

  ShmMappings(
      String lane,
      SharedHost host,
      Map<Long, SharedRegion> exports,
      int maxMappings,
      Token token,
      EngineTally counters,
      QuarantineLedger quarantine) {
    this.lane = lane;
    this.host = host;
    this.exports = exports;
    this.maxMappings = maxMappings;
    this.token = token;
    this.counters = counters;
    this.quarantine = quarantine;
  }

  /**
   * The mapping of {@code regionId}, mapping it now if needed (unmapping the least recently used
   * past the cap).
   */
  ShmMapping mapping(long regionId) {
    ShmMapping m = mapped.get(regionId);
    if (m != null) {
      return m;
    }
    SharedRegion region = exports.get(regionId);
    if (region == null) {
      throw new PeerProof.Refused("region " + regionId + " is not exported through SHM");
    }
    while (mapped.size() >= maxMappings) {
      Iterator<Long> eldest = mapped.keySet().iterator();
      unmap(eldest.next());
    }
    m = ShmMapping.open(host, region);
    mapped.put(regionId, m);
    counters.increment(Count.SHM_MAPPINGS_OPENED);
    return m;
  }

  /** Whether the peer's incarnation still holds its token's liveness lock. */
  boolean peerAlive() {
    try {
      return Libc.ofdTestLock(token.fd, Libc.F_WRLCK, ShmLocks.LIVENESS, 1, lockScratch)
          != Libc.F_UNLCK;
    } catch (NativeCallException e) {
      return false;
    }
  }

  /** Unmaps {@code regionId}; a failed munmap keeps the mapping for good (quarantined). */
  void unmap(long regionId) {
    ShmMapping m = mapped.remove(regionId);
    if (m == null) {
      return;
    }
    try {
      Libc.munmap(m.mapped);
      counters.increment(Count.SHM_MAPPINGS_CLOSED);
    } catch (NativeCallException e) {
      quarantined.add(m);
      counters.increment(Count.SHM_MAPPINGS_QUARANTINED);
      // Sticky: a mapping whose munmap failed is never used, retried or reported released.
      quarantine.enter(
          new QuarantinedOwner(
              lane + ": mapping of region " + regionId,
              QuarantinedOwner.Kind.MAPPING,
              "munmap failed: " + e.getMessage(),
              0,
              m.mapped.byteSize(),
              Instant.now()),
          () -> true);
      LOG.error(
          "{}: munmap of region {} failed; mapping quarantined for the life of the process: {}",
          lane,
          regionId,
          e.getMessage());
      return;
    }
    Libc.close(m.fd);
  }

  /** Unmaps every allocation and lets go of the token (the last lane closes it). */
  void releaseAll() {
    for (Long regionId : new ArrayList<>(mapped.keySet())) {
      unmap(regionId);
    }
    token.release();
  }

  /**
   * The peer's incarnation token, opened once by the proof and shared by every copy lane of the
   * endpoint: each lane tests its liveness lock on its own, and the last lane to shut down closes
   * it.
   */
  static final class Token {
    final int fd;
    private final java.util.concurrent.atomic.AtomicInteger holders;

    Token(int fd, int holders) {
      this.fd = fd;
      this.holders = new java.util.concurrent.atomic.AtomicInteger(holders);
    }

    private void release() {
      if (holders.decrementAndGet() == 0) {
        Libc.close(fd);
      }
    }
  }
}
