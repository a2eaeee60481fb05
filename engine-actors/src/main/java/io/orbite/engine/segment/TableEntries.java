package io.orbite.engine.segment;

import io.orbite.engine.PeerEntry;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.PeerChannel;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The segment table's entries: every entry not yet reclaimed (by its own channel), the one through
 * which each incarnation is reached now, and the newest epoch each endpoint answered with (bounded,
 * C9). Confined to the table's actor.
 */
final class TableEntries {
  /** Every entry not yet reclaimed, by its own channel: current, superseded but referenced. */
  private final Map<PeerChannel, TableEntry> byChannel = new IdentityHashMap<>();

  /** The entry through which each incarnation is reached now. */
  private final Map<SegmentDescriptor, TableEntry> current = new HashMap<>();

  /** The newest epoch each endpoint ({@code host:port}) answered with. */
  private final Map<String, Long> latestEpoch;

  /** Returns one endpoint charge (of {@code budgets.maxEndpoints}) to Admission. */
  private final Runnable releaseCharge;

  TableEntries(int capacity, Runnable releaseCharge) {
    this.releaseCharge = releaseCharge;
    this.latestEpoch =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            // Bounded (C9): endpoints not seen for a while are forgotten; reopening them describes
            // again.
            return size() > 4 * capacity;
          }
        };
  }

  int size() {
    return byChannel.size();
  }

  Collection<TableEntry> all() {
    return byChannel.values();
  }

  /** The entry of its own channel {@code channel}, or null once reclaimed. */
  TableEntry byChannel(PeerChannel channel) {
    return byChannel.get(channel);
  }

  /** The entry through which {@code peer} is reached now, or null. */
  TableEntry current(SegmentDescriptor peer) {
    return current.get(peer);
  }

  /** The newest epoch {@code endpoint} ({@code host:port}) answered with, or null. */
  Long latestEpoch(String endpoint) {
    return latestEpoch.get(endpoint);
  }

  /** A new entry, the one through which its incarnation is reached from now on. */
  void add(TableEntry entry) {
    byChannel.put(entry.base, entry);
    current.put(entry.peer, entry);
  }

  /** {@code entry}'s own channel closed: later opens of its incarnation get a fresh entry. */
  void supersede(TableEntry entry) {
    current.remove(entry.peer, entry);
    entry.state.moveTo(TableEntry.State.SUPERSEDED);
  }

  /**
   * Records the epoch an endpoint answered with; every entry of another epoch at that endpoint,
   * current or not (one whose own channel closed is no longer current, and is still refused with
   * its replacement's kind, C3), is a replaced incarnation and is fenced: it refuses new work and
   * its endpoints drain and retire.
   *
   * @return the incarnations this call fenced (not fenced before)
   */
  List<SegmentDescriptor> learnEpoch(SegmentDescriptor peer) {
    String key = peer.host() + ":" + peer.port();
    latestEpoch.put(key, peer.epoch());
    String reason = "the peer at " + key + " now runs epoch " + Long.toHexString(peer.epoch());
    List<SegmentDescriptor> fenced = new ArrayList<>();
    for (TableEntry replaced : byChannel.values()) {
      SegmentDescriptor old = replaced.peer;
      if (old.host().equals(peer.host())
          && old.port() == peer.port()
          && old.epoch() != peer.epoch()) {
        if (!replaced.fenceReported) {
          // Once per entry; the channel itself may have been fenced first by what learned it.
          replaced.fenceReported = true;
          if (!fenced.contains(old)) {
            fenced.add(old);
          }
        }
        replaced.fence(peer.epoch(), reason);
        supersede(replaced);
      }
    }
    retireReclaimable();
    return fenced;
  }

  void retireReclaimable() {
    var it = byChannel.values().iterator();
    while (it.hasNext()) {
      TableEntry e = it.next();
      if (e.reclaimable()) {
        it.remove();
        current.remove(e.peer, e);
        e.state.moveTo(TableEntry.State.RECLAIMED);
        for (int i = 0; i < e.charges(); i++) {
          releaseCharge.run();
        }
      }
    }
  }

  /** The entries as the API lists them. */
  List<PeerEntry> views() {
    List<PeerEntry> out = new ArrayList<>();
    for (TableEntry e : byChannel.values()) {
      out.add(e.view());
    }
    return List.copyOf(out);
  }
}
