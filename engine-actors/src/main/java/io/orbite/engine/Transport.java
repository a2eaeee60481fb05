package io.orbite.engine;

/**
 * Which transport carries a request; {@link #UNSPEC} lets the engine choose. Each has a fixed wire
 * code ({@link #code()}, carried by a data connection's HELLO): reordering or adding constants
 * never changes what travels.
 */
public enum Transport {
  /**
   * The engine chooses per request: SHM for a region the peer exports to this host (its memory
   * proven openable), else RDMA when the segment has an open RDMA endpoint, otherwise the segment's
   * own transport (TCP to a peer, FILE for a file segment).
   */
  UNSPEC(0),
  /**
   * TCP lanes to the peer; every segment opened with {@link
   * TransferEngine#openSegmentAsync(String)} has them.
   */
  TCP(1),
  /**
   * Shared memory with a same-host peer, for regions it exports (engine-allocated memory of an
   * engine with {@code shm.enabled}); refused UNAVAILABLE at submit for any other region or peer.
   */
  SHM(2),
  /** The file transport of a segment opened with {@link TransferEngine#openFileSegment}. */
  FILE(3),
  /**
   * RDMA over the verbs table (the software provider, or libibverbs), when {@code rdma.enabled}: a
   * request naming it on a segment without an open RDMA endpoint is refused UNAVAILABLE at submit,
   * saying why.
   */
  RDMA(4);

  private final int code;

  Transport(int code) {
    this.code = code;
  }

  /**
   * The code this transport travels as (a HELLO's count field names the transport a data connection
   * is for).
   *
   * @return 0 UNSPEC, 1 TCP, 2 SHM, 3 FILE, 4 RDMA
   */
  public int code() {
    return code;
  }

  /**
   * The transport a wire code stands for; the inverse of {@link #code()}.
   *
   * @param code the code read from the wire
   * @return the transport, or {@code null} for a code no transport has
   */
  public static Transport fromCode(long code) {
    for (Transport t : values()) {
      if (t.code == code) {
        return t;
      }
    }
    return null;
  }
}
