package io.orbite.transport.rdma;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;

/**
 * Makes the RC QPs of one rail and connects them, the way the conformance suite proved on the
 * software provider and on hardware: by GID on an Ethernet (RoCE or soft) port, from the GID index
 * of the rail's published route, by LID on an InfiniBand one; path MTU the smaller of both ports';
 * PSNs from 0; ACK timeout 14 (67 ms a try), 7 retries, RNR retry 7 (unlimited). A QP reserves its
 * CQ entries on its lane's CQ before it is made, so a CQ never overruns.
 */
final class RailConnector {
  private static final int ACK_TIMEOUT = 14;
  private static final int RETRY_CNT = 7;
  private static final int RNR_RETRY = 7;
  private static final int RD_ATOMIC = 16;
  private static final int MIN_RECEIVES_PER_QP = 32;

  private final Rail rail;

  RailConnector(Rail rail) {
    this.rail = rail;
  }

  /**
   * Completion receives a source posts on each QP: at least 32, and at least {@code rdma.maxSendWr
   * / 4}, the slices a requester with this engine's settings holds on a QP: each completion SEND
   * names at least one of them and each holds its slot until its SEND came back, so such a
   * requester never has more completion SENDs in flight on a QP than it has receives (a requester
   * allowed more waits out RNR, retried without limit).
   */
  int receivesPerQp() {
    return Math.max(MIN_RECEIVES_PER_QP, rail.maxSendWr / 4);
  }

  /**
   * CQ entries a QP reserves on its lane's CQ: every send WR it may have outstanding, and for a
   * source QP its posted completion receives too (a requester QP posts none).
   */
  int cqesPerQp(boolean source) {
    return Math.max(2, rail.maxSendWr) + (source ? receivesPerQp() : 0);
  }

  /**
   * An RC QP in INIT on {@code lane}'s CQ, every WR signalled; its send queue holds at least 2 WRs
   * (one slice posts two). It reserves {@link #cqesPerQp} entries of the lane's CQ first, so the CQ
   * cannot overrun; a CQ without them refuses the QP naming {@code rdma.maxCqes}.
   */
  VerbsResult<Verbs.Qp> createQp(CqLane lane, boolean source) {
    if (lane.faulted() != null) {
      return VerbsResult.failed(
          Errno.EIO.number(),
          lane.name() + " is faulted (" + lane.faulted() + "): no QP is made on it");
    }
    int cqes = cqesPerQp(source);
    if (!lane.qps.reserveCqes(cqes)) {
      return VerbsResult.failed(
          Errno.ENOMEM.number(),
          "rdma.maxCqes: "
              + lane.name()
              + "'s CQ of "
              + lane.qps.cqCapacity
              + " entries has "
              + lane.qps.reservedCqes()
              + " reserved by the QPs on it, and a "
              + (source ? "source" : "requester")
              + " QP needs "
              + cqes);
    }
    VerbsResult<Verbs.Qp> qp =
        rail.verbs.createQp(
            rail.pd,
            new Verbs.QpInitAttr(
                lane.cq, lane.cq, Math.max(2, rail.maxSendWr), receivesPerQp(), 1, 1, 16, true));
    if (!qp.ok()) {
      lane.qps.cancelCqes(cqes);
      return qp;
    }
    lane.qps.recordCqes(qp.value(), cqes);
    int rc =
        rail.verbs.modifyQp(
            qp.value(),
            new Verbs.QpAttr(
                Ibv.QPS_INIT,
                0,
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_WRITE,
                0,
                Rail.PORT,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                null),
            Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS);
    if (rc != 0) {
      if (rail.verbs.destroyQp(qp.value()) == 0) {
        lane.qps.releaseCqes(qp.value());
      }
      return VerbsResult.failed(rc, "ibv_modify_qp to INIT on " + rail.device);
    }
    return qp;
  }

  /**
   * Moves {@code qp} from INIT to RTS, connected to QP {@code remoteQpn} of {@code remote}, from
   * the GID index of {@code route}.
   *
   * @return 0, or the errno of the modify that failed ({@code EAGAIN} when the route is fenced)
   */
  int connect(Verbs.Qp qp, Rail.Route route, RdmaWire.Rail remote, int remoteQpn) {
    if (rail.generation() != route.generation()) {
      return Errno.EAGAIN.number();
    }
    Verbs.Gid rgid = new Verbs.Gid(remote.gidHi(), remote.gidLo());
    Verbs.AddressVector av =
        rail.port.linkLayer() == Ibv.LINK_LAYER_INFINIBAND
            ? new Verbs.AddressVector(remote.lid(), 0, Rail.PORT, Verbs.Gid.ZERO, 0, 64)
            : new Verbs.AddressVector(0, 0, Rail.PORT, rgid, route.gidIndex(), 64);
    int rc =
        rail.verbs.modifyQp(
            qp,
            new Verbs.QpAttr(
                Ibv.QPS_RTR,
                Math.min(rail.port.activeMtu(), remote.mtu()),
                0,
                0,
                Rail.PORT,
                remoteQpn,
                0,
                0,
                0,
                Math.min(RD_ATOMIC, rail.attr.maxQpRdAtom()),
                1,
                0,
                0,
                0,
                av),
            Ibv.RC_RTR_MASK);
    if (rc != 0) {
      return rc;
    }
    return rail.verbs.modifyQp(
        qp,
        new Verbs.QpAttr(
            Ibv.QPS_RTS,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            Math.min(RD_ATOMIC, rail.attr.maxQpRdAtom()),
            0,
            0,
            ACK_TIMEOUT,
            RETRY_CNT,
            RNR_RETRY,
            null),
        Ibv.RC_RTS_MASK);
  }
}
