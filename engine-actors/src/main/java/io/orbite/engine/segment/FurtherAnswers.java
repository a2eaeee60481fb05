package io.orbite.engine.segment;

import io.orbite.engine.admission.Admission;
import io.orbite.engine.segment.TableEntry.Slot;
import io.orbite.engine.segment.TableEntry.Waiter;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.Description;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * How the segment table answers an open of an entry: one open at a time, through every further
 * transport in the order UNSPEC tries them; each one out of reach of the peer is noted and passed,
 * a live channel attached again, a missing one charged (when the transport is) and opened. The
 * segment handed out carries every channel it will have. Runs on the table's actor thread.
 */
final class FurtherAnswers {
  private final SegmentTable table;
  private final List<PeerTransport> further;
  private final ActorRef<Admission.Command> admission;

  FurtherAnswers(
      SegmentTable table, List<PeerTransport> further, ActorRef<Admission.Command> admission) {
    this.table = table;
    this.further = further;
    this.admission = admission;
  }

  /**
   * Answers {@code w} with a segment of {@code entry} once every further transport had its say, one
   * open of the entry at a time. The reference is taken now, so that the entry is not reclaimed
   * while the answer is under way.
   */
  void answer(TableEntry entry, Waiter w) {
    entry.references++;
    entry.answering.add(w);
    if (entry.answering.size() == 1) {
      startAnswer(entry);
    }
  }

  private void startAnswer(TableEntry entry) {
    Waiter w = entry.answering.getFirst();
    ActorRef<SegmentTable.Command> self = table.ctx.getSelf();
    PeerChannel own = entry.base;
    AtomicBoolean tableStopped = table.stopped;
    entry.building =
        new PeerSegment(
            entry.peer,
            w.description().regions(),
            w.description().engineName(),
            own,
            entry.peer.toString(),
            () -> {
              if (!tableStopped.get()) {
                self.tell(new SegmentTable.Released(own));
              }
            });
    entry.step = 0;
    nextFurther(entry);
  }

  /**
   * Takes the answer under way to the next further transport: one out of reach is noted and passed;
   * a live channel is attached again; a missing one is charged (when the transport is) and opened.
   * Once every transport had its say, the open is answered and the next one starts.
   */
  private void nextFurther(TableEntry entry) {
    Waiter w = entry.answering.getFirst();
    while (entry.step < further.size()) {
      PeerTransport t = further.get(entry.step);
      String unreachable = t.unreachable().apply(w.description());
      if (unreachable != null) {
        entry.building = entry.building.without(t.kind(), unreachable);
        entry.step++;
        continue;
      }
      Slot slot = entry.slots.get(t.kind());
      if (slot != null && slot.channel().gate().state() instanceof ChannelGate.Closed) {
        // Its endpoint has ended: drop it and its charge, and open afresh.
        entry.slots.remove(t.kind());
        releaseIfCharged(slot.charged());
        slot = null;
      }
      if (slot == null && t.chargesEndpoint()) {
        table.chargeEndpoint(decision -> new SegmentTable.FurtherCharged(entry, decision));
        return;
      }
      table.askOpen(
          t,
          entry.peer,
          w.description(),
          reply -> new SegmentTable.FurtherReady(entry, false, reply));
      return;
    }
    w.open().replyTo().tell(new SegmentTable.Opened(entry.building));
    entry.building = null;
    entry.answering.removeFirst();
    if (!entry.answering.isEmpty()) {
      startAnswer(entry);
    }
    table.retireReclaimable();
  }

  /**
   * The endpoint charge for the further transport {@code entry}'s answer has reached was decided.
   */
  void charged(TableEntry entry, Admission.Decision decision) {
    PeerTransport t = further.get(entry.step);
    if (!decision.granted()) {
      entry.building =
          entry.building.without(t.kind(), t.kind() + " not used: " + decision.refusal());
      entry.step++;
      nextFurther(entry);
      return;
    }
    if (entry.base.gate().state() instanceof ChannelGate.Fenced f) {
      // Fenced while the charge was decided: open no further channel to a replaced incarnation.
      admission.tell(new Admission.ReleaseEndpoint());
      entry.building = entry.building.without(t.kind(), t.kind() + " not used: " + f.reason());
      entry.step++;
      nextFurther(entry);
      return;
    }
    Description d = entry.answering.getFirst().description();
    table.askOpen(t, entry.peer, d, reply -> new SegmentTable.FurtherReady(entry, true, reply));
  }

  /** The further transport {@code entry}'s answer has reached answered its open. */
  void ready(TableEntry entry, boolean wasCharged, TransportCommand.OpenPeerReply reply) {
    PeerTransport t = further.get(entry.step);
    switch (reply) {
      case TransportCommand.PeerOpened opened -> {
        // The entry holds one charge per charged slot, for whichever channel the transport keeps
        // for the incarnation now (it replaces an endpoint that ended meanwhile).
        Slot slot = entry.slots.get(t.kind());
        boolean charged = wasCharged || slot != null && slot.charged();
        if (wasCharged && slot != null && slot.charged()) {
          admission.tell(new Admission.ReleaseEndpoint());
        }
        entry.slots.put(t.kind(), new Slot(opened.channel(), charged));
        if (entry.base.gate().state() instanceof ChannelGate.Fenced f) {
          opened.channel().fence(f.newerEpoch(), f.reason());
        }
        entry.building = entry.building.withChannel(opened.channel(), opened.reaches());
      }
      case TransportCommand.PeerOpenFailed failed -> {
        releaseIfCharged(wasCharged);
        entry.building =
            entry.building.without(
                t.kind(), "the " + t.kind() + " endpoint could not be opened: " + failed.detail());
      }
    }
    entry.step++;
    nextFurther(entry);
  }

  private void releaseIfCharged(boolean charged) {
    if (charged) {
      admission.tell(new Admission.ReleaseEndpoint());
    }
  }

  /**
   * A new entry for an incarnation whose previous entry's own channel closed takes over that
   * entry's live further channels and their charges (a transport keeps one endpoint per
   * incarnation).
   */
  void adoptLiveSlots(TableEntry entry, Collection<TableEntry> entries) {
    for (TableEntry old : entries) {
      if (!old.peer.equals(entry.peer) || !old.answering.isEmpty()) {
        continue;
      }
      var it = old.slots.entrySet().iterator();
      while (it.hasNext()) {
        var s = it.next();
        if (s.getValue().channel().gate().active() && !entry.slots.containsKey(s.getKey())) {
          entry.slots.put(s.getKey(), s.getValue());
          it.remove();
        }
      }
    }
  }
}
