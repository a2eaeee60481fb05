package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The slices of one RDMA channel waiting for its source: asked (their grant request written, no
 * GRANT yet) or granted (waiting for the source's ACK, its receipt). The lanes write the requests,
 * the control reader takes the answers ({@link ControlReader}), and a closing QP fails what it left
 * waiting: an asked slice never sent, a granted one whose QP was destroyed without its ACK.
 */
final class SliceLedger {
  private final RdmaChannel channel;
  private final ConcurrentHashMap<Long, Slice> asked = new ConcurrentHashMap<>();

  /** Slices granted and not ended yet: they wait for the source's ACK (its receipt). */
  private final ConcurrentHashMap<Long, Slice> unacked = new ConcurrentHashMap<>();

  SliceLedger(RdmaChannel channel) {
    this.channel = channel;
  }

  /** Sends slice {@code s}'s grant request (on its lane); false when the link is closed. */
  boolean ask(Slice s) {
    asked.put(s.id, s);
    boolean ok =
        channel
            .link()
            .write(
                out ->
                    RdmaWire.writeGrantRequest(
                        out,
                        new RdmaWire.GrantRequest(
                            s.id,
                            s.parent.id,
                            s.qp.index,
                            s.work.op().ordinal(),
                            s.work.regionId(),
                            s.work.remoteOffset() + s.offsetInTask,
                            s.length)));
    if (!ok) {
      asked.remove(s.id);
    }
    return ok;
  }

  /** The slice whose grant request {@code id} was answered, no longer asked; or null. */
  Slice granted(long id, boolean ok) {
    Slice s = asked.remove(id);
    if (s != null && ok) {
      unacked.put(s.id, s); // before its lane can post: the ACK follows its SEND
    }
    return s;
  }

  /** The slice the source's ACK {@code id} confirms, no longer awaited; or null. */
  Slice acked(long id) {
    return unacked.remove(id);
  }

  /** Slice {@code s} ended (its one receipt is being sent): it waits for no ACK any more. */
  void ended(Slice s) {
    unacked.remove(s.id, s);
  }

  /** Slices asked for and not granted yet (the owner view's figure). */
  long awaitingGrant() {
    return asked.size();
  }

  /** Fails the slices of {@code mine} still waiting for a GRANT: never sent, the QP's kind. */
  void failAsked(CqLane lane, List<RcQp> mine, String reason) {
    var it = asked.values().iterator();
    while (it.hasNext()) {
      Slice s = it.next();
      if (s.qp.lane == lane && mine.contains(s.qp)) {
        it.remove();
        s.fail(
            lane.receipts(),
            channel.kindFor(s.qp.life.kind()),
            channel.label() + ": " + reason + " (never sent)",
            false);
      }
    }
  }

  /**
   * Fails the slices of {@code mine} whose WRs completed but whose ACK never came (the control link
   * is closing) and whose QP was destroyed, so nothing of them touches memory; a WRITE is UNKNOWN.
   */
  void failUnacked(CqLane lane, List<RcQp> mine, String reason) {
    var it = unacked.values().iterator();
    while (it.hasNext()) {
      Slice s = it.next();
      // A QP that could not be destroyed may still run its WRs: its slices stay (UNQUIESCED).
      if (s.qp.lane == lane && mine.contains(s.qp) && s.qp.destroyed()) {
        it.remove();
        s.fail(
            lane.receipts(),
            channel.kindFor(ErrorKind.PEER_LOST),
            channel.label() + ": " + reason + " before the source confirmed the slice (no ACK)",
            false);
      }
    }
  }
}
