package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Registration;
import io.orbite.transport.tcp.Authority;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The grants of one source session: its requester's tasks reserved as a whole ({@link Reservation}:
 * C2, C3, its whole range checked and one loan taken; one {@code rdma.maxGrants} slot and its
 * length in {@code rdma.maxDirectBytes}, all or nothing, or refused RESOURCE_EXHAUSTED before any
 * window of it exists), each slice's grant request checked against its reservation and its window's
 * bind handed to its lane, and the windows' ends: bound (the GRANT), released after a completion
 * SEND landed (the ACK: the source's receipt), or kept when their release failed. The session's
 * reader thread and the lanes call it; what outlives a second is told to the grant's owner actor
 * ({@link GrantOwner}), through the session's owner until that spawned it.
 */
final class SourceGrants {
  private static final Logger LOG = LoggerFactory.getLogger(SourceGrants.class);

  /** Most parents one session holds reserved at once (each holds a loan until its DONE). */
  static final int MAX_RESERVATIONS = 65_536;

  /** How long a reservation waits for its parent's {@code rdma.maxDirectBytes} charge. */
  private static final long DIRECT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final SourceSession session;
  private final Authority authority;
  private final long localEpoch;
  private final AtomicInteger grantsHeld;
  private final int maxGrants;
  private final DirectBytes direct;
  private final RdmaCounters counters;
  private final ConcurrentHashMap<Long, Grant> grants = new ConcurrentHashMap<>();

  /** The parents reserved and not ended yet (refused ones too, until their DONE), by id. */
  private final ConcurrentHashMap<Long, Reservation> reservations = new ConcurrentHashMap<>();

  private final AtomicInteger retained = new AtomicInteger();

  /** The lanes handed window binds since the session's thread last woke them (that thread only). */
  final LaneWakes wakes = new LaneWakes();

  /** The owner of this session's grants; set before the session's thread starts. */
  private ActorRef<SourceSessionOwner.Command> owner;

  SourceGrants(
      SourceSession session,
      Authority authority,
      long localEpoch,
      AtomicInteger grantsHeld,
      int maxGrants,
      DirectBytes direct,
      RdmaCounters counters) {
    this.session = session;
    this.authority = authority;
    this.localEpoch = localEpoch;
    this.grantsHeld = grantsHeld;
    this.maxGrants = maxGrants;
    this.direct = direct;
    this.counters = counters;
  }

  /** Names the owner this session tells of its grants; before the session's thread starts. */
  void owner(ActorRef<SourceSessionOwner.Command> owner) {
    this.owner = owner;
  }

  /** The reservations held now (refused ones too), for the owner's tick. */
  Collection<Reservation> reservationsNow() {
    return reservations.values();
  }

  /** Windows bound now. */
  int outstanding() {
    return grants.size();
  }

  /** Windows whose release failed, or whose QP could not be destroyed: held for good. */
  int retained() {
    return retained.get();
  }

  /**
   * Promotes {@code r} (if it was not yet) and tells its grant's owner what happened to it:
   * straight to it once it was spawned, else through the session's owner, which spawns it first. (A
   * message sent the first way may pass one sent the second; the reservation decides when it ends,
   * so the order is not what decides.)
   */
  private void tellGrant(Reservation r, GrantOwner.Command event) {
    ActorRef<GrantOwner.Command> grant = r.owner();
    if (grant != null) {
      grant.tell(event);
    } else if (r.promote()) {
      owner.tell(new SourceSessionOwner.ToGrant(r, event));
    }
  }

  /**
   * Reserves parent {@code req} as a whole, or records why not (every grant request naming it is
   * then refused with that reason): its whole range checked once (C2, C3) and one loan taken on its
   * registration, which every window of it then uses. Never waits but for its direct bytes: the
   * reader thread also reads the DONEs that end reservations.
   *
   * @return why the message broke the protocol (the session then closes), or null
   */
  String reserve(RdmaWire.Reserve req) {
    if (req.op() > 1
        || req.length() <= 0
        || req.slices() < 1
        || req.slices() > RdmaWire.MAX_SLICES) {
      return "a RESERVE names op "
          + req.op()
          + ", "
          + req.length()
          + " B in "
          + req.slices()
          + " slice(s)";
    }
    if (reservations.containsKey(req.parent())) {
      return "a RESERVE names parent " + req.parent() + " again";
    }
    if (reservations.size() >= MAX_RESERVATIONS) {
      // C9: a requester that never says DONE cannot make this side hold loans without bound.
      return "more than " + MAX_RESERVATIONS + " parents reserved at once (no DONE for them)";
    }
    Op op = Op.values()[req.op()];
    Registration[] loan = new Registration[1];
    int code = authority.check(op, localEpoch, req.regionId(), req.offset(), req.length(), loan);
    Reservation r;
    if (code != 0) {
      r = Reservation.refused(req, op, code, "region " + req.regionId() + " refused: code " + code);
    } else {
      String full = chargeParent(req);
      if (full != null) {
        loan[0].returnLoan();
        counters.grantsRefused.increment();
        r = Reservation.refused(req, op, ErrorKind.RESOURCE_EXHAUSTED.code(), full);
      } else {
        r = Reservation.reserved(req, op, loan[0]);
      }
    }
    reservations.put(r.id, r);
    return null;
  }

  /**
   * Charges a parent's {@code rdma.maxGrants} slot and its whole length in {@code
   * rdma.maxDirectBytes}, all or nothing, before any window of it exists (spec 002: whole-parent
   * grant reservations); null when charged, else why not.
   */
  private String chargeParent(RdmaWire.Reserve req) {
    if (grantsHeld.incrementAndGet() > maxGrants) {
      grantsHeld.decrementAndGet();
      return "rdma.maxGrants: "
          + maxGrants
          + " parents are reserved here (parent "
          + req.parent()
          + " of region "
          + req.regionId()
          + " refused before any window)";
    }
    if (!chargeDirect(req.length())) {
      grantsHeld.decrementAndGet();
      counters.directBytesRefused.increment();
      return direct.refusal(
          req.length(), "parent " + req.parent() + " of region " + req.regionId());
    }
    return null;
  }

  /**
   * Charges a parent's direct bytes, waiting up to {@link #DIRECT_WAIT_NANOS} for windows being
   * released on the lanes (each gives its length back before its ACK, so before the requester
   * returns that slice's share of its own charge; the wait covers what is left of that race and
   * another peer's parents); false when they do not fit by then, or the session closed meanwhile.
   */
  private boolean chargeDirect(long bytes) {
    if (direct.tryCharge(bytes)) {
      return true;
    }
    wakes.wakeAll(); // the lanes release windows only once they run what was handed to them
    try {
      return direct.chargeWithin(bytes, DIRECT_WAIT_NANOS, session::closing);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * The requester's DONE for {@code parent}: every slice of it ended there.
   *
   * @return why the message broke the protocol, or null
   */
  String done(long parent) {
    Reservation r = reservations.get(parent);
    if (r == null) {
      return "a DONE names parent " + parent + ", which is not reserved";
    }
    doneFor(r);
    return null;
  }

  /** DONE came for {@code r} (or none will: the session closed): it ends, or drains. */
  private void doneFor(Reservation r) {
    if (!giveBack(r, r.done()) && !r.isRefused()) {
      tellGrant(r, GrantOwner.Draining.INSTANCE);
    }
  }

  /** The session closed and every QP was destroyed or kept: no DONE will come for any parent. */
  void sessionEnded() {
    for (Reservation r : List.copyOf(reservations.values())) {
      doneFor(r);
    }
  }

  /**
   * Gives back what a change to {@code r} released (its slot, its bytes) and ends it if it ended.
   *
   * @return whether it ended
   */
  private boolean giveBack(Reservation r, Reservation.Settled s) {
    if (s.bytes() > 0) {
      direct.release(s.bytes());
    }
    if (s.slot()) {
      grantsHeld.decrementAndGet();
    }
    if (s.ended()) {
      end(r);
    }
    return s.ended();
  }

  /**
   * Ends reservation {@code r}: DONE came and every window of it was released. The loan goes back
   * here, or through its grant's owner if it was promoted.
   */
  private void end(Reservation r) {
    reservations.remove(r.id, r);
    if (r.isRefused()) {
      return;
    }
    if (r.endAsRecord()) {
      r.registration.returnLoan();
    } else {
      tellGrant(r, GrantOwner.Ended.INSTANCE);
    }
  }

  /**
   * One slice's grant request on {@code qp}: inside its reserved parent, its window bound on the
   * QP's lane; a refused parent refuses it with its reason, changing nothing.
   *
   * @return why the message broke the protocol (the session then closes), or null
   */
  String grantRequest(RdmaWire.GrantRequest req, RcQp qp) {
    Reservation parent = reservations.get(req.parent());
    if (parent == null) {
      return "a grant request names parent " + req.parent() + ", which is not reserved";
    }
    String broken = parent.admit(Op.values()[req.op()], req.offset(), req.length());
    if (broken != null) {
      return broken;
    }
    if (parent.isRefused()) {
      counters.grantsRefused.increment();
      ControlLink link = session.link();
      RdmaWire.Grant no = new RdmaWire.Grant(req.id(), parent.refusal, 0, 0, parent.refusalDetail);
      link.write(out -> RdmaWire.writeGrant(out, no));
      link.flush();
      return null;
    }
    // Its parent's slot and bytes were charged at RESERVE, and admit counted its window.
    Grant g = new Grant(req.id(), parent, qp, req.offset(), req.length());
    if (!wakes.hand(qp.lane, () -> qp.lane.windows.bind(this, g))) {
      release(g);
      return qp.lane.name() + " has stopped";
    }
    return null;
  }

  /**
   * {@code qp} was destroyed, or kept (its destroy failed): its windows are released, or, on a QP
   * that may still serve them, kept with their parent's loan and charges until a native receipt
   * proves them cancelled (spec 001).
   */
  void releaseGrantsOf(RcQp qp) {
    for (Grant g : List.copyOf(grants.values())) {
      if (g.qp == qp && grants.remove(g.id, g)) {
        if (qp.destroyed()) {
          release(g);
        } else {
          g.released = true;
          g.parent.windowClosed(false, 0);
          retain(
              g,
              "QP "
                  + qp.qp.qpNum()
                  + " could not be destroyed: its window of region "
                  + g.registration.regionId()
                  + " stays bound");
        }
      }
    }
  }

  // ---------------------------------------------------------------- lane callbacks

  /**
   * The window of {@code g} is bound (on its lane): tell the requester where and with which key.
   */
  void bound(CqLane lane, Grant g, long addr) {
    grants.put(g.id, g);
    counters.grantsBound.increment();
    ControlLink link = session.link();
    link.write(out -> RdmaWire.writeGrant(out, new RdmaWire.Grant(g.id, 0, addr, g.rkey, "")));
    lane.wrote(link);
  }

  /** {@code g} cannot be granted (on its lane): release what it holds and say why. */
  void refuse(CqLane lane, Grant g, ErrorKind kind, String detail) {
    counters.grantsRefused.increment();
    release(g);
    ControlLink link = session.link();
    link.write(
        out -> RdmaWire.writeGrant(out, new RdmaWire.Grant(g.id, kind.code(), 0, 0, detail)));
    lane.wrote(link);
  }

  /** A completion SEND arrived (on the lane): its slice's payload is done; release the window. */
  void completionArrived(CqLane lane, RcQp qp, long grantId) {
    Grant g = grants.remove(grantId);
    if (g == null || g.qp != qp) {
      session.qpFailed(qp, "a completion names grant " + grantId + ", which this QP does not hold");
      return;
    }
    if (g.op == Op.READ) {
      counters.engine.add(Count.SOURCE_BYTES_READ, g.length);
    } else {
      counters.engine.add(Count.SOURCE_BYTES_WRITTEN, g.length);
    }
    EngineTally.ServedTo served = session.servedTo();
    if (served != null) {
      served.add(Transport.RDMA, g.op, g.length);
    }
    release(g);
    lane.rail.hooks.beforeRdmaAck(lane.name(), grantId);
    // The source's receipt: the exact completion landed, its receive is posted again, the window
    // is released (or kept, with its parent's loan: this side's retention, not the slice's).
    ControlLink link = session.link();
    link.write(out -> RdmaWire.writeAck(out, new RdmaWire.Ack(grantId, 0, "")));
    lane.wrote(link);
  }

  /** A window's bind or a receive failed on {@code qp} (on its lane): the QP is retired. */
  void qpFailed(RcQp qp, String why) {
    session.qpFailed(qp, why);
  }

  private void release(Grant g) {
    if (g.released) {
      return;
    }
    g.released = true;
    if (g.countedOpen) {
      g.countedOpen = false;
      g.qp.lane.windows.released(); // no completion SEND is awaited for it now
    }
    if (g.mw != null) {
      int rc = g.qp.rail.verbs.deallocMw(g.mw);
      if (rc != 0) {
        // The window may still authorise access: its registration stays loaned and its parent's
        // rdma.maxGrants slot and bytes stay charged, for good (spec 001: never retried).
        g.parent.windowClosed(false, 0);
        retain(
            g,
            "ibv_dealloc_mw failed (errno "
                + rc
                + "): a window of region "
                + g.registration.regionId()
                + " may still authorise access");
        return;
      }
    }
    counters.grantsReleased.increment();
    giveBack(g.parent, g.parent.windowClosed(true, g.length));
  }

  /**
   * Window {@code g} is kept for good, naming why: its grant's owner keeps the task's loan (the
   * registration can then never be freed) and lists the grant in the engine's quarantine.
   */
  private void retain(Grant g, String why) {
    retained.incrementAndGet();
    counters.grantsRetained.increment();
    LOG.warn("{}: {}; its registration stays loaned", session.name(), why);
    tellGrant(g.parent, new GrantOwner.WindowKept(why));
  }
}
