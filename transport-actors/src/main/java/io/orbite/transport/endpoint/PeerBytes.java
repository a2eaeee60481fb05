package io.orbite.transport.endpoint;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.EngineTally;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes this engine copied over SHM out of and into one peer incarnation's memory that the peer
 * has not been told of yet. An SHM copy never reaches the source's code, so the source cannot count
 * what it served that way; the requester's TCP lanes to the same incarnation report these counts on
 * their keepalives, and the source counts them as served over SHM. Written by SHM copy lanes, taken
 * by TCP lanes; any thread.
 */
public final class PeerBytes {
  /** Per engine (its tally), per peer incarnation; an engine's map goes with its tally. */
  private static final Map<EngineTally, Map<SegmentDescriptor, PeerBytes>> ALL =
      new WeakHashMap<>();

  /** At most this many peers tracked per engine: an unbounded peer churn cannot grow the map. */
  static final int MAX_PEERS = 4096;

  // Atomic swaps, not LongAdder: sumThenReset may lose an add that races it, and these are
  // added to once per copy group, not per task.
  private final AtomicLong read = new AtomicLong();
  private final AtomicLong written = new AtomicLong();

  private PeerBytes() {}

  /**
   * The counts of {@code peer} in the engine that owns {@code tally}.
   *
   * @param tally the engine's counters (identifies the engine)
   * @param peer the incarnation
   * @return its counts, made on first use
   */
  public static PeerBytes of(EngineTally tally, SegmentDescriptor peer) {
    Map<SegmentDescriptor, PeerBytes> mine;
    synchronized (ALL) {
      mine = ALL.computeIfAbsent(tally, t -> new ConcurrentHashMap<>());
    }
    PeerBytes bytes = mine.get(peer);
    if (bytes != null) {
      return bytes;
    }
    if (mine.size() >= MAX_PEERS) {
      mine.clear();
    }
    return mine.computeIfAbsent(peer, p -> new PeerBytes());
  }

  /**
   * Counts bytes copied by an SHM lane.
   *
   * @param readBytes copied out of the peer's memory (READ)
   * @param writtenBytes copied into it (WRITE)
   */
  public void copied(long readBytes, long writtenBytes) {
    if (readBytes != 0) {
      read.addAndGet(readBytes);
    }
    if (writtenBytes != 0) {
      written.addAndGet(writtenBytes);
    }
  }

  /**
   * Takes the counts not reported yet: {@code [0]} READ, {@code [1]} WRITE.
   *
   * @param readWritten where they go
   */
  public void take(long[] readWritten) {
    readWritten[0] = read.getAndSet(0);
    readWritten[1] = written.getAndSet(0);
  }
}
