package io.orbite.engine.segment;

import io.orbite.engine.PeerEntry;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.PeerChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The segment table's entries: every entry not yet reclaimed (by its own channel), the one through
 * which each incarnation is reached now, and what each endpoint's answers taught (bounded, C9): the
 * newest epoch it answered with and the epochs known to be replaced there. Confined to the table's
 * actor.
 */
final class TableEntries {
  /** How many replaced epochs are remembered per endpoint; an older one is described again. */
  static final int REPLACED_PER_ENDPOINT = 16;

  /** What an endpoint's answers taught: its newest epoch, and those it replaced (newest last). */
  private static final class Epochs {
    long latest;
    final ArrayDeque<Long> replaced = new ArrayDeque<>();

    Epochs(long latest) {
      this.latest = latest;
    }

    void replace(long epoch) {
      if (epoch == latest || replaced.contains(epoch)) {
        return;
      }
      if (replaced.size() == REPLACED_PER_ENDPOINT) {
        replaced.removeFirst();
      }
      replaced.addLast(epoch);
    }
  }

  /** Every entry not yet reclaimed, by its own channel: current, superseded but referenced. */
  private final Map<PeerChannel, TableEntry> byChannel = new IdentityHashMap<>();

  /** The entry through which each incarnation is reached now. */
  private final Map<SegmentDescriptor, TableEntry> current = new HashMap<>();

  /** What each endpoint ({@code host:port}) answered, by endpoint. */
  private final Map<String, Epochs> epochs;

  /** Returns one endpoint charge (of {@code budgets.maxEndpoints}) to Admission. */
  private final Runnable releaseCharge;

  TableEntries(int capacity, Runnable releaseCharge) {
    this.releaseCharge = releaseCharge;
    this.epochs =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Epochs> eldest) {
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
    Epochs e = epochs.get(endpoint);
    return e == null ? null : e.latest;
  }

  /**
   * Whether {@code epoch} is known to be replaced at {@code endpoint} ({@code host:port}): a newer
   * incarnation answered there since it did. Only then may an open expecting it be refused without
   * asking the peer; an epoch the table never saw, or the newest it saw, must be described (the
   * newest one's incarnation may have died since, and an unseen one may be its replacement).
   */
  boolean replaced(String endpoint, long epoch) {
    Epochs e = epochs.get(endpoint);
    return e != null && e.replaced.contains(epoch);
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
   * its endpoints drain and retire. An answer naming an epoch already known to be replaced there is
   * stale (it was under way while the peer restarted): it teaches nothing and fences nothing.
   *
   * @return the incarnations this call fenced (not fenced before); null for such a stale answer
   */
  List<SegmentDescriptor> learnEpoch(SegmentDescriptor peer) {
    String key = peer.host() + ":" + peer.port();
    Epochs now = epochs.get(key);
    if (now == null) {
      now = new Epochs(peer.epoch());
      epochs.put(key, now);
    } else if (now.replaced.contains(peer.epoch())) {
      return null;
    } else if (now.latest != peer.epoch()) {
      long previous = now.latest;
      now.latest = peer.epoch();
      now.replace(previous);
    }
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
        now.replace(old.epoch());
      }
    }
    retireReclaimable();
    return fenced;
  }

  /**
   * Fences every entry at {@code host:port} that still takes work, its newer epoch unknown: the
   * incarnation is known to be over (nothing answers there and the hint's source says it cannot
   * come back), so its work fails EPOCH_MISMATCH, as after a restart (C3).
   *
   * @return the incarnations this call fenced
   */
  List<SegmentDescriptor> loseAt(String host, int port, String reason) {
    List<SegmentDescriptor> lost = new ArrayList<>();
    for (TableEntry entry : List.copyOf(byChannel.values())) {
      SegmentDescriptor old = entry.peer;
      if (old.host().equals(host) && old.port() == port && entry.base.gate().active()) {
        entry.fenceReported = true;
        if (!lost.contains(old)) {
          lost.add(old);
        }
        entry.fence(0, reason);
        supersede(entry);
      }
    }
    retireReclaimable();
    return lost;
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
