package io.orbite.transport.rdma;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.transport.lane.LaneRuntime;
import java.io.DataInputStream;
import java.io.IOException;

/**
 * The reader of one RDMA channel's control connection, on a blocking thread of its own ({@code
 * orbite-rdma-control-<port>-<epoch-hex>}, made by {@link LaneRuntime#startBlocking}): it reads the
 * source's GRANTs, ACKs, QP_GONEs and REPAIREDs and hands each to the lane of its QP (or to the
 * waiting repair). The connection ending or breaking, or a message out of place, is the peer's loss
 * ({@link RdmaChannel#peerLost}): the channel's gate closes PEER_LOST and the channel closes.
 */
final class ControlReader implements Runnable {
  private final RdmaChannel channel;
  private final ControlLink link;
  private final SegmentDescriptor peer;
  private final io.orbite.engine.fault.FaultHooks hooks;

  /** The lanes handed GRANTs and ACKs since the reader last woke them. */
  private final LaneWakes wakes = new LaneWakes();

  private ControlReader(RdmaChannel channel, io.orbite.engine.fault.FaultHooks hooks) {
    this.channel = channel;
    this.hooks = hooks;
    this.link = channel.link();
    this.peer = channel.peer();
  }

  /**
   * Starts the reader of {@code channel}'s control connection; {@code hooks} (NONE in production)
   * hear of the peer's loss once the gate has closed.
   */
  static void start(RdmaChannel channel, io.orbite.engine.fault.FaultHooks hooks) {
    SegmentDescriptor peer = channel.peer();
    LaneRuntime.startBlocking(
        "orbite-rdma-control-" + peer.port() + "-" + Long.toHexString(peer.epoch()),
        new ControlReader(channel, hooks));
  }

  /** The peer is lost: the channel's gate closes and the channel closes; then the hooks hear. */
  private void lost(String reason) {
    channel.peerLost(reason);
    hooks.rdmaPeerLost(peer.toString());
  }

  @Override
  public void run() {
    try {
      DataInputStream in = link.in;
      while (true) {
        if (link.drained()) {
          wakes.wakeAll(); // the next read may block: what was handed over runs now
        }
        int type = RdmaWire.nextType(in);
        if (type < 0) {
          wakes.wakeAll();
          lost("the RDMA control connection to " + peer + " ended");
          return;
        }
        if (type == RdmaWire.REPAIRED) {
          channel.repairer().answered(RdmaWire.readRepairedBody(in));
          continue;
        }
        if (type == RdmaWire.QP_GONE) {
          RdmaWire.QpGone g = RdmaWire.readQpGoneBody(in);
          if (g.qp() >= channel.qps().count()) {
            lost(
                "the peer "
                    + peer
                    + " named QP "
                    + g.qp()
                    + " of "
                    + channel.qps().count()
                    + " gone");
            return;
          }
          RcQp qp = channel.qps().at(g.qp());
          // Only the QP connected to the one it retired: a repaired slot's fresh QP stays.
          if (qp.remoteQpn == g.qpn()) {
            channel.counters().qpsGoneAtSource.increment();
            qp.lane.submit(
                () ->
                    channel.qpFailed(
                        qp, "the source retired its QP " + g.qpn() + ": " + g.detail()));
          }
          continue;
        }
        if (type == RdmaWire.ACK) {
          RdmaWire.Ack a = RdmaWire.readAckBody(in);
          Slice s = channel.ledger().acked(a.id());
          if (s != null) {
            CqLane lane = s.qp.lane;
            wakes.hand(lane, () -> lane.requester.acked(s, a));
          }
          continue;
        }
        if (type != RdmaWire.GRANT) {
          lost(
              "the peer " + peer + " sent RDMA control message " + type + " where a grant was due");
          return;
        }
        RdmaWire.Grant g = RdmaWire.readGrantBody(in);
        Slice s = channel.ledger().granted(g.id(), g.status() == 0);
        if (s != null) {
          CqLane lane = s.qp.lane;
          wakes.hand(lane, () -> lane.requester.granted(s, g));
        }
      }
    } catch (IOException e) {
      wakes.wakeAll();
      lost("the RDMA control connection to " + peer + " broke: " + TransferException.describe(e));
    }
  }
}
