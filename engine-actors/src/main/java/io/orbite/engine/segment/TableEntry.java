package io.orbite.engine.segment;

import io.orbite.engine.PeerEntry;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Lifecycle;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.wire.Description;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.Map;

/**
 * One entry of the segment table: the channels to one peer incarnation (its segment's own, and one
 * slot per further transport that opened one) and the RemoteSegments referring to it. Each charged
 * channel holds one endpoint charge, returned when the entry is reclaimed (or when the slot is
 * found ended and dropped). Confined to the table actor.
 */
final class TableEntry {
  /**
   * Where an entry stands; it only moves forward:
   *
   * <pre>
   *   ACTIVE ──► SUPERSEDED ──► RECLAIMED
   *      │                         ▲
   *      └─────────────────────────┘
   * </pre>
   *
   * <p>{@code ACTIVE}: the entry through which its incarnation is reached; an open of it reuses the
   * entry while its own channel is active. {@code SUPERSEDED}: no longer reached (a newer epoch
   * answered at its endpoint, or its own channel closed and a fresh entry took its place); only its
   * references' releases still arrive. {@code RECLAIMED}: no RemoteSegment refers to it and its
   * channels are done; its table slot and endpoint charges were returned.
   */
  enum State implements Lifecycle.Stage<State> {
    ACTIVE,
    SUPERSEDED,
    RECLAIMED;

    @Override
    public boolean mayMoveTo(State next) {
      return Lifecycle.forward(this, next);
    }

    @Override
    public boolean terminal() {
      return this == RECLAIMED;
    }
  }

  /**
   * A further transport's channel to the incarnation.
   *
   * @param channel the channel
   * @param charged whether it holds one of {@code budgets.maxEndpoints}
   */
  record Slot(PeerChannel channel, boolean charged) {
    boolean done() {
      return !channel.gate().active();
    }
  }

  /** An open waiting for its segment: what it asked and what its peer's Describe answered. */
  record Waiter(SegmentTable.OpenSegment open, Description description) {}

  final SegmentDescriptor peer;
  final PeerChannel base;
  final Lifecycle<State> state = new Lifecycle<>(State.ACTIVE);

  /** Whether the table has published this entry's replacement (PeerFenced); table actor only. */
  boolean fenceReported;

  final Map<Transport, Slot> slots = new EnumMap<>(Transport.class);

  /** Opens answered one at a time through the further transports: the one under way is first. */
  final ArrayDeque<Waiter> answering = new ArrayDeque<>();

  /** The answer under way: the segment being built and the further transport it has reached. */
  PeerSegment building;

  int step;
  int references;

  TableEntry(SegmentDescriptor peer, PeerChannel base) {
    this.peer = peer;
    this.base = base;
  }

  /**
   * Whether the entry can be reclaimed: nothing refers to it, no answer is under way, and its
   * channels are all done (closed or fenced).
   */
  boolean reclaimable() {
    if (references != 0 || !answering.isEmpty() || base.gate().active()) {
      return false;
    }
    for (Slot s : slots.values()) {
      if (!s.done()) {
        return false;
      }
    }
    return true;
  }

  /** Endpoint charges the entry holds: its own channel's and each charged slot's. */
  int charges() {
    int n = 1;
    for (Slot s : slots.values()) {
      n += s.charged() ? 1 : 0;
    }
    return n;
  }

  /** Fences every channel of the entry: a newer incarnation answers at its endpoint (C3). */
  void fence(long newerEpoch, String reason) {
    base.fence(newerEpoch, reason);
    for (Slot s : slots.values()) {
      s.channel().fence(newerEpoch, reason);
    }
  }

  /** The entry as the API lists it. */
  PeerEntry view() {
    ChannelGate.State s = base.gate().state();
    PeerEntry.State state =
        switch (s) {
          case ChannelGate.Active a -> PeerEntry.State.ACTIVE;
          case ChannelGate.Reconnecting r -> PeerEntry.State.RECONNECTING;
          case ChannelGate.Fenced f -> PeerEntry.State.FENCED;
          case ChannelGate.Closed c -> PeerEntry.State.CLOSED;
        };
    String detail =
        switch (s) {
          case ChannelGate.Active a -> "";
          case ChannelGate.Reconnecting r -> r.reason();
          case ChannelGate.Fenced f -> f.reason();
          case ChannelGate.Closed c -> c.reason();
        };
    Slot shared = slots.get(Transport.SHM);
    PeerEntry.Shared sharedState =
        shared == null
            ? PeerEntry.Shared.NONE
            : switch (shared.channel().gate().state()) {
              case ChannelGate.Active a -> PeerEntry.Shared.ACTIVE;
              case ChannelGate.Reconnecting r -> PeerEntry.Shared.ACTIVE;
              case ChannelGate.Fenced f -> PeerEntry.Shared.FENCED;
              case ChannelGate.Closed c -> PeerEntry.Shared.CLOSED;
            };
    return new PeerEntry(peer, state, references, sharedState, detail);
  }
}
