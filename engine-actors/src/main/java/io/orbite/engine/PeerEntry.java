package io.orbite.engine;

/**
 * One entry of the engine's segment table (C9): a peer incarnation this engine opened.
 *
 * @param peer the incarnation (endpoint and epoch)
 * @param state where it stands
 * @param references how many {@link RemoteSegment}s still refer to it (not yet closed or collected)
 * @param shared its SHM channel (same-host peers that export memory), which holds an endpoint
 *     charge of its own
 * @param detail why it is fenced or closed; empty while active
 */
public record PeerEntry(
    SegmentDescriptor peer, State state, int references, Shared shared, String detail) {

  /** Where an entry's SHM channel stands. */
  public enum Shared {
    /** The entry has no SHM channel (not same-host, no exports, refused, or not opened yet). */
    NONE,
    /** Same-host copies run on it. */
    ACTIVE,
    /** Fenced with its entry, or by its own lane when the peer's incarnation token ended (C3). */
    FENCED,
    /** Its lane has ended. */
    CLOSED
  }

  /** Where a table entry stands. */
  public enum State {
    /** Its endpoint's lanes are open; requests are accepted. */
    ACTIVE,
    /**
     * Every lane to it broke; lanes are being rebuilt while the peer proves the same epoch.
     * Requests are accepted and wait for a lane within their deadline ({@code
     * tcp.waitWhileReconnecting}).
     */
    RECONNECTING,
    /**
     * A newer incarnation answers at its endpoint: every request naming it is refused
     * EPOCH_MISMATCH (C3).
     */
    FENCED,
    /** Every lane to it has closed (the peer went away, or the requester side closed). */
    CLOSED
  }
}
