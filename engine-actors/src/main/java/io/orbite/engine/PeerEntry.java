package io.orbite.engine;

/**
 * One entry of the engine's segment table (C9): a peer incarnation this engine opened.
 *
 * @param peer the incarnation (endpoint and epoch)
 * @param state where it stands
 * @param references how many {@link RemoteSegment}s still refer to it (not yet closed or collected)
 * @param detail why it is fenced or closed; empty while active
 */
public record PeerEntry(SegmentDescriptor peer, State state, int references, String detail) {

  /** Where a table entry stands. */
  public enum State {
    /** Its endpoint's lanes are open; requests are accepted. */
    ACTIVE,
    /** A newer incarnation answers at its endpoint: every request naming it is refused EPOCH_MISMATCH (C3). */
    FENCED,
    /** Every lane to it has closed (the peer went away, or the requester side closed). */
    CLOSED
  }
}
