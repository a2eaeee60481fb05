package io.orbite.engine;

import java.time.Instant;

/**
 * Something that happened to a peer incarnation this engine has open, as {@link
 * Engine#peerEvents()} and {@link Engine#onPeerEvent} report it. Events say what the engine
 * learned; they carry no authority: reaching a new incarnation still takes an explicit open (C3),
 * for which {@code Engine.reopen} is the one call.
 */
public sealed interface PeerEvent {
  /**
   * The incarnation the event is about.
   *
   * @return its descriptor (endpoint and epoch)
   */
  SegmentDescriptor peer();

  /**
   * When the engine learned it.
   *
   * @return the wall-clock time
   */
  Instant at();

  /**
   * A peer incarnation was opened: its entry exists and its own (TCP) channel works.
   *
   * @param peer the incarnation
   * @param at when
   */
  record PeerUp(SegmentDescriptor peer, Instant at) implements PeerEvent {}

  /**
   * A lane to the peer broke, or missed its keepalives; it drained (READs in flight completed or
   * failed, WRITEs in flight are UNKNOWN and never replayed) and now reconnects.
   *
   * @param peer the incarnation
   * @param at when
   * @param transport the lane's transport
   * @param lane the lane's name
   * @param reason why it was lost
   * @param lanesLeft lanes to the peer still working (0: the channel is reconnecting)
   */
  record LaneLost(
      SegmentDescriptor peer,
      Instant at,
      Transport transport,
      String lane,
      String reason,
      int lanesLeft)
      implements PeerEvent {}

  /**
   * A lost lane reconnected to the same incarnation (its HELLO proved the same epoch).
   *
   * @param peer the incarnation
   * @param at when
   * @param transport the lane's transport
   * @param lane the lane's name
   * @param outageMillis from the loss to the restore
   * @param attempts connection attempts it took
   */
  record LaneRestored(
      SegmentDescriptor peer,
      Instant at,
      Transport transport,
      String lane,
      long outageMillis,
      int attempts)
      implements PeerEvent {}

  /**
   * A newer incarnation answers at the peer's endpoint: every channel to {@code peer} is fenced,
   * and tasks for it fail EPOCH_MISMATCH. {@code Engine.reopen} reaches {@code replacement}.
   *
   * @param peer the old incarnation
   * @param at when
   * @param replacement the new incarnation (same endpoint, the new epoch)
   */
  record PeerFenced(SegmentDescriptor peer, Instant at, SegmentDescriptor replacement)
      implements PeerEvent {}

  /**
   * The peer is gone: its endpoint refused a reconnection (nothing listens there), or its lanes
   * could not reconnect within {@code tcp.reconnectGiveUpMillis}, and no newer incarnation has
   * answered. Tasks for it fail PEER_LOST. A replacement that comes up at the endpoint within that
   * bound is still learned ({@link PeerFenced}).
   *
   * @param peer the incarnation
   * @param at when
   * @param reason the last failure
   */
  record PeerLost(SegmentDescriptor peer, Instant at, String reason) implements PeerEvent {}
}
