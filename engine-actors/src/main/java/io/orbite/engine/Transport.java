package io.orbite.engine;

/** Which transport carries a request; {@link #UNSPEC} lets the engine choose. */
public enum Transport {
  /**
   * The engine chooses per request: SHM for a region the peer exports to this host (its memory proven
   * openable), otherwise the segment's own transport (TCP to a peer, FILE for a file segment).
   */
  UNSPEC,
  /** TCP lanes to the peer; every segment opened with {@link TransferEngine#openSegment(String)} has them. */
  TCP,
  /**
   * Shared memory with a same-host peer, for regions it exports (engine-allocated memory of an engine with
   * {@code shm.enabled}); refused UNAVAILABLE at submit for any other region or peer.
   */
  SHM,
  /** The file transport of a segment opened with {@link TransferEngine#openFileSegment}. */
  FILE,
  /** Not built: a request naming it is refused UNAVAILABLE at submit. */
  RDMA
}
