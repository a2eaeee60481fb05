package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.tcp.Authority;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source side of one RDMA endpoint: one adopted control connection and the QPs it asked for.
 * Its thread answers the HELLO (EPOCH_MISMATCH for another incarnation, before any QP exists),
 * publishes this engine's rails, makes and connects one QP per requester QP (on this engine's rail
 * of the index it names, lanes in turn), posts each QP's completion receives, then reads
 * reservations, grant requests and DONEs. A task is reserved as a whole first ({@link Reservation}:
 * C2, C3, its whole range checked and one loan taken) and charged as a whole: one {@code
 * rdma.maxGrants} slot and its length in {@code rdma.maxDirectBytes}, all or nothing, or it is
 * refused RESOURCE_EXHAUSTED before any window of it exists. Each of its slices' grant requests
 * must lie inside it; its lane binds the window. After a slice's completion SEND landed and its
 * window was released (its length given back), its lane answers ACK (the source's receipt); once
 * every declared slice's window was released the parent's slot goes back, and the requester's DONE
 * ends the reservation. A window that cannot be released keeps its parent's slot and bytes.
 *
 * <p>A task that ends within a second gives its loan back where it ended. One that lives on (its
 * session owner's tick promotes it), drains (DONE came while a window is open) or keeps a window is
 * promoted ({@link Reservation#promote}): its loan then belongs to its grant's owner actor ({@link
 * GrantOwner}, below this session's {@link SourceSessionOwner}), told when the reservation ends (it
 * gives the loan back), drains, or keeps a window (it keeps the loan for good, quarantined).
 * Nothing here waits for it.
 *
 * <p>When the connection ends or a QP errs, every QP moves to ERR and is destroyed on its lane once
 * flushed, and only then are the outstanding windows deallocated and their grants ended: no remote
 * access can race the release. A window whose deallocation fails keeps its grant's loan (its
 * registration can then never be freed: it stays retained, never retried) and its {@code
 * rdma.maxGrants} charge.
 */
final class SourceSession implements Runnable, RcQp.QpOwner {
  private static final Logger LOG = LoggerFactory.getLogger(SourceSession.class);

  private final String name;
  private final SocketChannel socket;
  private final ByteBuffer hello;
  private final long localEpoch;
  private final int refusal;
  private final List<Rail> rails;
  private final Authority authority;
  private final AtomicInteger grantsHeld;
  private final int maxGrants;
  private final DirectBytes direct;
  private final RdmaCounters counters;
  private final ConcurrentHashMap<Long, Grant> grants = new ConcurrentHashMap<>();

  /** The owner of this session's grants; set before the thread starts. */
  private ActorRef<SourceSessionOwner.Command> owner;

  /** Most parents one session holds reserved at once (each holds a loan until its DONE). */
  static final int MAX_RESERVATIONS = 65_536;

  /** The parents reserved and not ended yet (refused ones too, until their DONE), by id. */
  private final ConcurrentHashMap<Long, Reservation> reservations = new ConcurrentHashMap<>();

  private final Arena arena = Arena.ofShared();
  private MemorySegment[] slabs = new MemorySegment[0];
  private Verbs.Mr[] slabMrs = new Verbs.Mr[0];

  /** The requester's rails, each where it is reached now (a REPAIR names a rail's new address). */
  private List<RdmaWire.Rail> theirs = List.of();

  private final AtomicInteger retained = new AtomicInteger();
  private ControlLink link;
  private RcQp[] qps = new RcQp[0];
  private volatile String closedBecause;

  SourceSession(
      String name,
      SocketChannel socket,
      ByteBuffer hello,
      long localEpoch,
      int refusal,
      List<Rail> rails,
      Authority authority,
      AtomicInteger grantsHeld,
      int maxGrants,
      DirectBytes direct,
      RdmaCounters counters) {
    this.name = name;
    this.socket = socket;
    this.hello = hello;
    this.localEpoch = localEpoch;
    this.refusal = refusal;
    this.rails = rails;
    this.authority = authority;
    this.grantsHeld = grantsHeld;
    this.maxGrants = maxGrants;
    this.direct = direct;
    this.counters = counters;
  }

  /** Names the owner this session tells of its grants; before {@link #run} starts. */
  void owner(ActorRef<SourceSessionOwner.Command> owner) {
    this.owner = owner;
  }

  /** The reservations held now (refused ones too), for the owner's tick. */
  java.util.Collection<Reservation> reservationsNow() {
    return reservations.values();
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

  /** Whether it was closed (its QPs and windows are being released, or were). */
  boolean closing() {
    return closedBecause != null;
  }

  String name() {
    return name;
  }

  int grantsOutstanding() {
    return grants.size();
  }

  @Override
  public void run() {
    try {
      link = new ControlLink(socket);
      if (!acceptHello()) {
        finish();
        return;
      }
      if (!connect()) {
        finish();
        return;
      }
      serve();
    } catch (IOException | RuntimeException e) {
      close(name + ": " + e);
    }
  }

  private boolean acceptHello() throws IOException {
    long epoch = FrameCodec.epoch(hello, 0);
    int status = epoch != localEpoch ? ErrorKind.EPOCH_MISMATCH.code() : refusal;
    ByteBuffer ack = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(
        ack,
        0,
        FrameType.HELLO_ACK,
        status,
        0,
        FrameCodec.requestId(hello, 0),
        localEpoch,
        0,
        0,
        0);
    link.out().write(ack.array());
    link.out().flush();
    if (status != 0) {
      LOG.info(
          "{}: refused an RDMA endpoint for epoch {} (this engine is {}): code {}",
          name,
          Long.toHexString(epoch),
          Long.toHexString(localEpoch),
          status);
      counters.endpointsRefused.increment();
      return false;
    }
    return true;
  }

  private boolean connect() throws IOException {
    RdmaWire.writeRails(
        link.out(),
        rails.stream().map(Rail::published).toList(),
        new RdmaWire.Limits(direct.limitBytes(), maxGrants));
    DataInputStream in = link.in;
    // The requester's limits are its own as a source: this side asks nothing of them.
    theirs = new ArrayList<>(RdmaWire.readRails(in).rails());
    List<RdmaWire.QpEnd> ends = RdmaWire.readConnect(in);
    List<RcQp> made = new ArrayList<>();
    int[] qpns = new int[ends.size()];
    String failure = null;
    for (RdmaWire.QpEnd end : ends) {
      if (end.remoteRail() >= rails.size() || end.localRail() >= theirs.size()) {
        failure = "a QP names rail " + end.remoteRail() + " here or " + end.localRail() + " there";
        break;
      }
      Rail rail = rails.get(end.remoteRail());
      CqLane lane = laneFor(rail, made.size());
      VerbsResult<Verbs.Qp> qp = rail.createQp(lane, true);
      if (!qp.ok()) {
        failure = qp.describe();
        break;
      }
      RcQp rc = new RcQp(qp.value(), lane, rail, made.size(), end.localRail());
      rc.owner = this;
      made.add(rc);
      int err = rc.connect(theirs.get(end.localRail()), end.qpn());
      if (err != 0 && rail.fenced()) {
        // This rail is paused: the QP stays unconnected and its monitor retires it; the
        // requester's QP fails when used and is repaired once the rail recovered.
        rc.broken = rail.device + " is paused (route generation " + rail.generation() + ")";
      } else if (err != 0) {
        failure = "ibv_modify_qp on " + rail.device + ": errno " + err;
        break;
      }
      qpns[rc.index] = qp.value().qpNum();
    }
    if (failure != null) {
      for (RcQp qp : made) {
        qp.lane.destroyUnused(qp);
      }
      RdmaWire.writeConnected(link.out(), null, ErrorKind.RESOURCE_EXHAUSTED, failure);
      return false;
    }
    qps = made.toArray(RcQp[]::new);
    slabs = new MemorySegment[qps.length];
    slabMrs = new Verbs.Mr[qps.length];
    for (RcQp qp : qps) {
      MemorySegment slab = arena.allocate(qp.rail.receivesPerQp() * 8L, 64);
      VerbsResult<Verbs.Mr> mr = qp.rail.verbs.regMr(qp.rail.pd, slab, Ibv.ACCESS_LOCAL_WRITE);
      if (!mr.ok()) {
        RdmaWire.writeConnected(link.out(), null, ErrorKind.RESOURCE_EXHAUSTED, mr.describe());
        close("receive slab: " + mr.describe());
        return false;
      }
      slabs[qp.index] = slab;
      slabMrs[qp.index] = mr.value();
      if (qp.broken == null) {
        postReceives(qp);
      }
    }
    RdmaWire.writeConnected(link.out(), qpns, null, null);
    return true;
  }

  /** Lanes in turn ({@code n}-th QP), skipping a faulted lane while another one is not. */
  private static CqLane laneFor(Rail rail, int n) {
    List<CqLane> lanes = rail.lanes;
    for (int k = 0; k < lanes.size(); k++) {
      CqLane lane = lanes.get((n + k) % lanes.size());
      if (lane.faulted() == null) {
        return lane;
      }
    }
    return lanes.get(n % lanes.size()); // every lane faulted: createQp names why
  }

  /** Posts {@code qp}'s completion receives, on its lane (the only thread that posts on it). */
  private void postReceives(RcQp qp) {
    MemorySegment slab = slabs[qp.index];
    Verbs.Mr mr = slabMrs[qp.index];
    qp.lane.submit(
        () -> {
          for (int slot = 0; slot < qp.rail.receivesPerQp(); slot++) {
            if (!qp.lane.postReceive(this, qp, slab, mr, slot)) {
              qpFailed(qp, "ibv_post_recv refused a completion receive");
              return;
            }
          }
        });
  }

  private void serve() throws IOException {
    DataInputStream in = link.in;
    while (true) {
      int type = RdmaWire.nextType(in);
      if (type < 0) {
        close("the requester closed the RDMA control connection");
        return;
      }
      if (closedBecause != null) {
        return;
      }
      switch (type) {
        case RdmaWire.REPAIR -> repair(RdmaWire.readRepairBody(in));
        case RdmaWire.RESERVE -> {
          if (!reserve(RdmaWire.readReserveBody(in))) {
            return;
          }
        }
        case RdmaWire.DONE -> {
          long parent = RdmaWire.readDoneBody(in);
          Reservation r = reservations.get(parent);
          if (r == null) {
            close("a DONE names parent " + parent + ", which is not reserved");
            return;
          }
          if (!giveBack(r, r.done()) && !r.isRefused()) {
            tellGrant(r, GrantOwner.Draining.INSTANCE);
          }
        }
        case RdmaWire.GRANT_REQ -> {
          if (!grantRequest(RdmaWire.readGrantRequestBody(in))) {
            return;
          }
        }
        default -> {
          close("RDMA control message " + type + " where a reservation or grant request was due");
          return;
        }
      }
    }
  }

  /**
   * Reserves parent {@code req} as a whole, or records why not (every grant request naming it is
   * then refused with that reason): its whole range checked once (C2, C3) and one loan taken on its
   * registration, which every window of it then uses. Never waits: this thread also reads the DONEs
   * that end reservations.
   *
   * @return false when the message broke the protocol (the session is closed)
   */
  private boolean reserve(RdmaWire.Reserve req) {
    if (req.op() > 1
        || req.length() <= 0
        || req.slices() < 1
        || req.slices() > RdmaWire.MAX_SLICES) {
      close(
          "a RESERVE names op "
              + req.op()
              + ", "
              + req.length()
              + " B in "
              + req.slices()
              + " slice(s)");
      return false;
    }
    if (reservations.containsKey(req.parent())) {
      close("a RESERVE names parent " + req.parent() + " again");
      return false;
    }
    if (reservations.size() >= MAX_RESERVATIONS) {
      // C9: a requester that never says DONE cannot make this side hold loans without bound.
      close("more than " + MAX_RESERVATIONS + " parents reserved at once (no DONE for them)");
      return false;
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
    return true;
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
   * One slice's grant request: inside its reserved parent, its window bound on its QP's lane; a
   * refused parent refuses it with its reason, changing nothing.
   *
   * @return false when the message broke the protocol (the session is closed)
   */
  private boolean grantRequest(RdmaWire.GrantRequest req) {
    if (req.qp() >= qps.length || req.op() > 1 || req.length() <= 0) {
      close(
          "a grant request names QP " + req.qp() + ", op " + req.op() + ", " + req.length() + " B");
      return false;
    }
    Reservation parent = reservations.get(req.parent());
    if (parent == null) {
      close("a grant request names parent " + req.parent() + ", which is not reserved");
      return false;
    }
    String broken = parent.admit(Op.values()[req.op()], req.offset(), req.length());
    if (broken != null) {
      close(broken);
      return false;
    }
    if (parent.isRefused()) {
      counters.grantsRefused.increment();
      answer(new RdmaWire.Grant(req.id(), parent.refusal, 0, 0, parent.refusalDetail));
      return true;
    }
    // Its parent's slot and bytes were charged at RESERVE, and admit counted its window.
    RcQp qp = qps[req.qp()];
    Grant g = new Grant(req.id(), parent, qp, req.offset(), req.length());
    if (!qp.lane.submit(() -> qp.lane.bind(this, g))) {
      release(g);
      close(qp.lane.name + " has stopped");
      return false;
    }
    return true;
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

  /** How long a reservation waits for its parent's {@code rdma.maxDirectBytes} charge. */
  private static final long DIRECT_WAIT_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);

  /**
   * Charges a parent's direct bytes, waiting up to {@link #DIRECT_WAIT_NANOS} for windows being
   * released on the lanes (each gives its length back before its ACK, so before the requester
   * returns that slice's share of its own charge; the wait covers what is left of that race and
   * another peer's parents); false when they do not fit by then, or the session closed meanwhile.
   */
  private boolean chargeDirect(long bytes) {
    try {
      return direct.chargeWithin(bytes, DIRECT_WAIT_NANOS, () -> closedBecause != null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Replaces QP {@code r.qp()} (on the reader thread, so no grant request for it is read
   * meanwhile): the old one is retired on its lane (to ERR, flushed, destroyed, its windows
   * released), a fresh one is made on the same rail and lane, connected to the requester's new QP,
   * given its receives, and named in the answer.
   */
  private void repair(RdmaWire.Repair r) {
    if (r.qp() >= qps.length) {
      close("a REPAIR names QP " + r.qp() + " of " + qps.length);
      return;
    }
    RcQp old = qps[r.qp()];
    String failure;
    try {
      retire(old, "the requester replaces it").get(10, java.util.concurrent.TimeUnit.SECONDS);
      if (!old.destroyed) {
        failure = "its QP " + old.qp.qpNum() + " could not be destroyed";
      } else if (old.rail.fenced()) {
        failure =
            old.rail.device + " is paused here (route generation " + old.rail.generation() + ")";
      } else {
        // The lane at the old one's index: a faulted lane is replaced there once drained.
        CqLane lane = old.rail.lanes.get(old.lane.index);
        Rail.Route route = old.rail.route();
        VerbsResult<Verbs.Qp> made = old.rail.createQp(lane, true);
        if (!made.ok()) {
          failure = made.describe();
        } else {
          RdmaWire.Rail there = r.at().applyTo(theirs.get(old.remoteRail));
          theirs.set(old.remoteRail, there);
          // Connected under the route it was made for: refused (EAGAIN) once the monitor fenced it.
          int rc = old.rail.connect(made.value(), route, there, r.qpn());
          if (rc != 0) {
            if (old.rail.verbs.destroyQp(made.value()) == 0) {
              lane.releaseCqes(made.value()); // never adopted by a lane, never posted on
            }
            failure = "ibv_modify_qp on " + old.rail.device + ": errno " + rc;
          } else {
            RcQp fresh = new RcQp(made.value(), lane, old.rail, old.index, old.remoteRail, route);
            fresh.owner = this;
            qps[old.index] = fresh;
            postReceives(fresh);
            counters.qpsRepaired.increment();
            RdmaWire.Address here = fresh.rail.address(fresh.route);
            link.write(
                out -> RdmaWire.writeRepaired(out, r.qp(), 0, made.value().qpNum(), here, ""));
            link.flush();
            return;
          }
        }
      }
    } catch (java.util.concurrent.TimeoutException e) {
      failure = "its old QP was not destroyed within 10 s";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = "interrupted";
    } catch (java.util.concurrent.ExecutionException e) {
      failure = String.valueOf(e.getCause());
    }
    String why = failure;
    link.write(
        out -> RdmaWire.writeRepaired(out, r.qp(), ErrorKind.UNAVAILABLE.code(), 0, null, why));
    link.flush();
  }

  /**
   * Retires {@code qp} alone, on its lane: to ERR, flushed, destroyed; then its windows are
   * released (kept with their loans when the destroy failed). Idempotent.
   */
  private java.util.concurrent.CompletableFuture<Void> retire(RcQp qp, String why) {
    if (!qp.lane.submit(
        () -> {
          if (qp.retiring) {
            return;
          }
          qp.retiring = true;
          qp.lane.close(
              List.of(qp),
              why,
              () -> {
                releaseGrantsOf(qp);
                qp.retired.complete(null);
              });
        })) {
      qp.retired.complete(null);
    }
    return qp.retired;
  }

  private void releaseGrantsOf(RcQp qp) {
    for (Grant g : List.copyOf(grants.values())) {
      if (g.qp == qp && grants.remove(g.id, g)) {
        if (qp.destroyed) {
          release(g);
        } else {
          // A QP that could not be destroyed may still serve the window: keep its parent's loan
          // and charges until a native receipt proves it cancelled (spec 001).
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

  /** Writes {@code g}'s answer from the reader thread, flushed at once. */
  private void answer(RdmaWire.Grant g) {
    link.write(out -> RdmaWire.writeGrant(out, g));
    link.flush();
  }

  // ---------------------------------------------------------------- lane callbacks

  /**
   * The window of {@code g} is bound (on its lane): tell the requester where and with which key.
   */
  void bound(CqLane lane, Grant g, long addr) {
    grants.put(g.id, g);
    counters.grantsBound.increment();
    link.write(out -> RdmaWire.writeGrant(out, new RdmaWire.Grant(g.id, 0, addr, g.rkey, "")));
    lane.wrote(link);
  }

  /** {@code g} cannot be granted (on its lane): release what it holds and say why. */
  void refuse(CqLane lane, Grant g, ErrorKind kind, String detail) {
    counters.grantsRefused.increment();
    release(g);
    link.write(
        out -> RdmaWire.writeGrant(out, new RdmaWire.Grant(g.id, kind.code(), 0, 0, detail)));
    lane.wrote(link);
  }

  /** A completion SEND arrived (on the lane): its slice's payload is done; release the window. */
  void completionArrived(CqLane lane, RcQp qp, long grantId) {
    Grant g = grants.remove(grantId);
    if (g == null || g.qp != qp) {
      qpFailed(qp, "a completion names grant " + grantId + ", which this QP does not hold");
      return;
    }
    if (g.op == Op.READ) {
      counters.engine.add(Count.SOURCE_BYTES_READ, g.length);
    } else {
      counters.engine.add(Count.SOURCE_BYTES_WRITTEN, g.length);
    }
    release(g);
    lane.rail.hooks.beforeRdmaAck(lane.name, grantId);
    // The source's receipt: the exact completion landed, its receive is posted again, the window
    // is released (or kept, with its parent's loan: this side's retention, not the slice's).
    link.write(out -> RdmaWire.writeAck(out, new RdmaWire.Ack(grantId, 0, "")));
    lane.wrote(link);
  }

  private void release(Grant g) {
    if (g.released) {
      return;
    }
    g.released = true;
    if (g.countedOpen) {
      g.countedOpen = false;
      g.qp.lane.openWindows.decrementAndGet(); // no completion SEND is awaited for it now
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
   * A QP erred or its route was fenced (on its lane): it alone is retired, and the requester is
   * told ({@code QP_GONE}, naming the QP's number): its QP connected to this one fails at once and
   * is repaired when a slice needs the slot, even when no payload WR of its own would have failed
   * on it (a grant request would only be refused here).
   */
  @Override
  public void qpFailed(RcQp qp, String why) {
    if (closedBecause == null && !qp.retiring) {
      counters.qpsFailed.increment();
      // Without a payload WR of its own on it, the requester's QP would never fail: say so.
      RdmaWire.QpGone gone = new RdmaWire.QpGone(qp.index, qp.qp.qpNum(), why);
      link.write(out -> RdmaWire.writeQpGone(out, gone));
      qp.lane.wrote(link);
      retire(qp, "QP " + qp.qp.qpNum() + " on " + qp.rail.device + ": " + why);
    }
  }

  /**
   * Closes the session: the link, then every QP on its lane; after the last is destroyed, the
   * windows still held are released and the slabs deregistered. Idempotent.
   */
  void close(String reason) {
    synchronized (this) {
      if (closedBecause != null) {
        return;
      }
      closedBecause = reason;
    }
    LOG.info("{} closing: {}", name, reason);
    if (link != null) {
      link.close();
    } else {
      try {
        socket.close();
      } catch (IOException ignored) {
        // Closing anyway.
      }
    }
    Map<CqLane, List<RcQp>> byLane = new IdentityHashMap<>();
    for (RcQp qp : qps) {
      byLane.computeIfAbsent(qp.lane, l -> new ArrayList<>()).add(qp);
    }
    if (byLane.isEmpty()) {
      finish();
      return;
    }
    AtomicInteger left = new AtomicInteger(byLane.size());
    for (Map.Entry<CqLane, List<RcQp>> e : byLane.entrySet()) {
      Runnable last =
          () -> {
            if (left.decrementAndGet() == 0) {
              releaseAll();
            }
          };
      if (!e.getKey().submit(() -> e.getKey().close(e.getValue(), reason, last))) {
        last.run();
      }
    }
  }

  private void releaseAll() {
    boolean allReleased = true;
    for (RcQp qp : qps) {
      releaseGrantsOf(qp);
      allReleased &= qp.destroyed;
    }
    // No DONE will come now: each parent ends once its windows are released (a kept one stays).
    for (Reservation r : List.copyOf(reservations.values())) {
      if (!giveBack(r, r.done()) && !r.isRefused()) {
        tellGrant(r, GrantOwner.Draining.INSTANCE);
      }
    }
    for (int i = 0; i < slabMrs.length; i++) {
      Verbs.Mr mr = slabMrs[i];
      if (mr == null) {
        continue;
      }
      if (!qps[i].destroyed || qps[i].rail.verbs.deregMr(mr) != 0) {
        allReleased = false;
      }
    }
    if (allReleased) {
      arena.close();
    }
    finish();
  }

  private void finish() {
    if (closedBecause == null) {
      closedBecause = "refused";
      try {
        socket.close();
      } catch (IOException ignored) {
        // Refused: nothing else to do.
      }
    }
    finished = true;
    owner.tell(SourceSessionOwner.Ended.INSTANCE);
  }

  /** Set once the thread ended, just before its owner is told (its last act). */
  private volatile boolean finished;

  /** Whether the thread ended: nothing more will be opened, released or said DONE. */
  boolean finished() {
    return finished;
  }

  /** Windows whose release failed, or whose QP could not be destroyed: held for good. */
  int retained() {
    return retained.get();
  }

  /**
   * Window {@code g} is kept for good, naming why: its grant's owner keeps the task's loan (the
   * registration can then never be freed) and lists the grant in the engine's quarantine.
   */
  private void retain(Grant g, String why) {
    retained.incrementAndGet();
    counters.grantsRetained.increment();
    LOG.warn("{}: {}; its registration stays loaned", name, why);
    tellGrant(g.parent, new GrantOwner.WindowKept(why));
  }
}
