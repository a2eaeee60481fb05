package io.orbite.config;

/**
 * One rule of the transport selector ({@link TransportPolicies}): which requests it applies to, and
 * what it chooses for them. The engine tries the rules of {@code policies} in order for a request
 * that lets it choose ({@code Transport.UNSPEC}); the first rule whose {@link #match()} accepts the
 * request decides its transport.
 *
 * <p>A rule is checked when it becomes part of a {@link TransportPolicies} ({@link
 * TransportPolicies#of}), where its index is known, so that a message names it as the JSON loader
 * does: {@code policies[2].choose.transports[1]: ...}. A rule on its own is an unchecked value.
 *
 * @param match which requests the rule applies to; {@link PolicyMatch#any()} matches every request
 * @param choose the transports it tries, in order, and optionally the priority it gives
 */
public record TransportPolicy(PolicyMatch match, PolicyChoice choose) {

  /** The direction a rule matches: the request's {@code Op}, seen from the requester. */
  public enum Op {
    /** Remote bytes copied into local memory. */
    READ,
    /** Local bytes copied into remote memory. */
    WRITE
  }

  /**
   * A transport a rule may choose. UNSPEC is not one (a rule exists to choose), and neither is FILE
   * (a file segment has one transport only; rules never apply to it).
   */
  public enum Transport {
    /** The peer's TCP lanes: every peer segment has them. */
    TCP,
    /** Shared memory with a same-host peer, for the regions it exports. */
    SHM,
    /** RDMA, when the segment has an RDMA endpoint with a healthy rail pair. */
    RDMA
  }

  /** A scheduling tier, as the request's {@code Priority} (C14). */
  public enum Priority {
    /** The first tier, and the one {@code TransferRequest.read}/{@code write} give. */
    HIGH,
    /** The middle tier. */
    MEDIUM,
    /** The last tier. */
    LOW
  }

  /** What kind of local memory a request names: what the engine knows about a registered range. */
  public enum Memory {
    /** Caller-owned memory, passed to {@code register}; never shared with a peer. */
    REGISTERED,
    /** Memory the engine allocated ({@code allocate}) that no same-host peer can map. */
    ALLOCATED,
    /**
     * Memory the engine allocated as a memfd that same-host peers may map ({@code allocate} with
     * {@code shm.enabled}).
     */
    SHARED
  }
}
