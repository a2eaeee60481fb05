package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.endpoint.RequesterIncarnations;
import io.orbite.transport.tcp.Authority;
import io.orbite.transport.tcp.RequesterLabel;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source side of one RDMA endpoint: one adopted control connection and the QPs it asked for.
 * Its thread answers the HELLO (EPOCH_MISMATCH for another incarnation, before any QP exists; only
 * once the sessions of its requester's older incarnation, fenced for it, have ended), publishes
 * this engine's rails, makes and connects one QP per requester QP (on this engine's rail of the
 * index it names, lanes in turn), posts each QP's completion receives, then reads reservations,
 * grant requests and DONEs: its QPs are its {@link SourceQps}, its reservations and windows its
 * {@link SourceGrants}. A task is reserved as a whole first ({@link Reservation}: C2, C3, its whole
 * range checked and one loan taken) and charged as a whole: one {@code rdma.maxGrants} slot and its
 * length in {@code rdma.maxDirectBytes}, all or nothing, or it is refused RESOURCE_EXHAUSTED before
 * any window of it exists. Each of its slices' grant requests must lie inside it; its lane binds
 * the window. After a slice's completion SEND landed and its window was released (its length given
 * back), its lane answers ACK (the source's receipt); once every declared slice's window was
 * released the parent's slot goes back, and the requester's DONE ends the reservation. A window
 * that cannot be released keeps its parent's slot and bytes.
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
 * rdma.maxGrants} charge. Its thread is a blocking one of its own, {@code
 * orbite-rdma-source-session-<n>} ({@link io.orbite.transport.lane.LaneRuntime#startBlocking}).
 */
final class SourceSession implements Runnable, RcQp.QpOwner {
  private static final Logger LOG = LoggerFactory.getLogger(SourceSession.class);

  private final String name;
  private final Conduit socket;
  private final ByteBuffer hello;
  private final long localEpoch;
  private final int refusal;

  /** The end of every session of this requester's older incarnations, fenced for this one. */
  private final CompletableFuture<Void> fenced;

  /** How long the HELLO waits on {@link #fenced} before it is refused UNAVAILABLE. */
  private final long fenceWaitMillis;

  private final List<Rail> rails;
  private final int maxGrants;
  private final DirectBytes direct;
  private final RdmaCounters counters;
  private final SourceGrants grants;
  private final SourceQps qps;
  private volatile ControlLink link;

  /** The owner told when the thread ended; set before the thread starts. */
  private ActorRef<SourceSessionOwner.Command> owner;

  /** Why it was closed; null while it serves. */
  private volatile String closedBecause;

  /** Set once the thread ended, just before its owner is told (its last act). */
  private volatile boolean finished;

  /**
   * The requester as the source's ledger names it, and its epoch, from the HELLO; set once the
   * HELLO was accepted (the session is then counted connected until it finishes).
   */
  private volatile String requester;

  private volatile long requesterEpoch;

  /** The ledger row the windows this session serves are counted in; set with the requester. */
  private volatile EngineTally.ServedTo servedTo;

  SourceSession(
      String name,
      Conduit socket,
      ByteBuffer hello,
      long localEpoch,
      int refusal,
      CompletableFuture<Void> fenced,
      long fenceWaitMillis,
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
    this.fenced = fenced;
    this.fenceWaitMillis = fenceWaitMillis;
    this.rails = rails;
    this.maxGrants = maxGrants;
    this.direct = direct;
    this.counters = counters;
    this.grants =
        new SourceGrants(this, authority, localEpoch, grantsHeld, maxGrants, direct, counters);
    this.qps = new SourceQps(this, grants, rails, counters);
  }

  /** Names the owner this session tells of its grants and its end; before {@link #run} starts. */
  void owner(ActorRef<SourceSessionOwner.Command> owner) {
    this.owner = owner;
    grants.owner(owner);
  }

  /** The reservations held now (refused ones too), for the owner's tick. */
  Collection<Reservation> reservationsNow() {
    return grants.reservationsNow();
  }

  /** Whether it was closed (its QPs and windows are being released, or were). */
  boolean closing() {
    return closedBecause != null;
  }

  String name() {
    return name;
  }

  /** The control connection (set when the thread starts). */
  ControlLink link() {
    return link;
  }

  int grantsOutstanding() {
    return grants.outstanding();
  }

  /** Windows whose release failed, or whose QP could not be destroyed: held for good. */
  int retained() {
    return grants.retained();
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
    if (status == 0
        && !fenced.isDone()
        && !RequesterIncarnations.await(fenced, fenceWaitMillis, () -> closedBecause == null)) {
      if (closedBecause != null) {
        return false; // closed while it waited: no answer, the socket is closed
      }
      // Its requester's older sessions still hold grants: no QP is made until they are gone.
      status = ErrorKind.UNAVAILABLE.code();
    }
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
    long epochOfRequester = FrameCodec.regionId(hello, 0);
    String label = RequesterLabel.of(socket.socket(), epochOfRequester);
    requesterEpoch = epochOfRequester;
    servedTo = counters.engine.servedTo(label, epochOfRequester);
    requester = label;
    counters.engine.requesterConnected(label, epochOfRequester, Transport.RDMA);
    return true;
  }

  /** The ledger row of this session's requester; null until its HELLO was accepted. */
  EngineTally.ServedTo servedTo() {
    return servedTo;
  }

  /** Publishes this engine's rails, reads the requester's and its QPs' ends, makes the QPs. */
  private boolean connect() throws IOException {
    RdmaWire.writeRails(
        link.out(),
        rails.stream().map(Rail::published).toList(),
        new RdmaWire.Limits(direct.limitBytes(), maxGrants));
    DataInputStream in = link.in;
    // The requester's limits are its own as a source: this side asks nothing of them.
    List<RdmaWire.Rail> theirs = RdmaWire.readRails(in).rails();
    List<RdmaWire.QpEnd> ends = RdmaWire.readConnect(in);
    int[] qpns = new int[ends.size()];
    String failure = qps.make(theirs, ends, qpns);
    if (failure != null) {
      RdmaWire.writeConnected(link.out(), null, ErrorKind.RESOURCE_EXHAUSTED, failure);
      if (qps.count() > 0) {
        close(failure); // its QPs were made: they close on their lanes
      }
      return false;
    }
    RdmaWire.writeConnected(link.out(), qpns, null, null);
    return true;
  }

  private void serve() throws IOException {
    try {
      serveMessages();
    } finally {
      grants.wakes.wakeAll(); // what was handed over runs (or is refused) on its lanes
    }
  }

  private void serveMessages() throws IOException {
    DataInputStream in = link.in;
    while (true) {
      if (link.drained()) {
        grants.wakes.wakeAll(); // the next read may block: the binds handed over run now
      }
      int type = RdmaWire.nextType(in);
      if (type < 0) {
        close("the requester closed the RDMA control connection");
        return;
      }
      if (closedBecause != null) {
        return;
      }
      String broken =
          switch (type) {
            case RdmaWire.REPAIR -> repair(RdmaWire.readRepairBody(in));
            case RdmaWire.RESERVE -> grants.reserve(RdmaWire.readReserveBody(in));
            case RdmaWire.DONE -> grants.done(RdmaWire.readDoneBody(in));
            case RdmaWire.GRANT_REQ -> grantRequest(RdmaWire.readGrantRequestBody(in));
            default ->
                "RDMA control message " + type + " where a reservation or grant request was due";
          };
      if (broken != null) {
        close(broken);
        return;
      }
    }
  }

  /** One slice's grant request: its QP checked here, the rest by its reservation. */
  private String grantRequest(RdmaWire.GrantRequest req) {
    if (req.qp() >= qps.count() || req.op() > 1 || req.length() <= 0) {
      return "a grant request names QP "
          + req.qp()
          + ", op "
          + req.op()
          + ", "
          + req.length()
          + " B";
    }
    return grants.grantRequest(req, qps.at(req.qp()));
  }

  /** The requester replaces a QP: the answer (REPAIRED) is written at once. */
  private String repair(RdmaWire.Repair r) {
    if (r.qp() >= qps.count()) {
      return "a REPAIR names QP " + r.qp() + " of " + qps.count();
    }
    RdmaWire.Repaired answer = qps.repair(r);
    link.write(
        out ->
            RdmaWire.writeRepaired(
                out, answer.qp(), answer.status(), answer.qpn(), answer.at(), answer.detail()));
    link.flush();
    return null;
  }

  /**
   * A QP erred or its route was fenced (on its lane): it alone is retired, and the requester is
   * told ({@code QP_GONE}, naming the QP's number): its QP connected to this one fails at once and
   * is repaired when a slice needs the slot, even when no payload WR of its own would have failed
   * on it (a grant request would only be refused here).
   */
  @Override
  public void qpFailed(RcQp qp, String why) {
    if (closedBecause == null && !qp.life.retiringOrLater()) {
      counters.qpsFailed.increment();
      // Without a payload WR of its own on it, the requester's QP would never fail: say so.
      RdmaWire.QpGone gone = new RdmaWire.QpGone(qp.index, qp.qp.qpNum(), why);
      link.write(out -> RdmaWire.writeQpGone(out, gone));
      qp.lane.wrote(link);
      qps.retire(qp, "QP " + qp.qp.qpNum() + " on " + qp.rail.device + ": " + why);
    }
  }

  /**
   * Closes the session: the link, then every QP on its lane; after the last is destroyed, the
   * windows still held are released, every reservation whose windows all were ends (no DONE will
   * come), and the slabs are deregistered. Idempotent.
   */
  void close(String reason) {
    synchronized (this) {
      if (closedBecause != null) {
        return;
      }
      closedBecause = reason;
    }
    LOG.info("{} closing: {}", name, reason);
    ControlLink l = link;
    if (l != null) {
      l.close();
    } else {
      try {
        socket.close();
      } catch (IOException ignored) {
        // Closing anyway.
      }
    }
    qps.closeAll(reason, this::releaseAll);
  }

  private void releaseAll() {
    qps.releaseAll();
    // No DONE will come now: each parent ends once its windows are released (a kept one stays).
    grants.sessionEnded();
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
    // Counted disconnected once, however many paths end here.
    String connected;
    synchronized (this) {
      connected = requester;
      requester = null;
    }
    if (connected != null) {
      counters.engine.requesterDisconnected(connected, requesterEpoch, Transport.RDMA);
    }
    finished = true;
    owner.tell(SourceSessionOwner.Ended.INSTANCE);
  }

  /** Whether the thread ended: nothing more will be opened, released or said DONE. */
  boolean finished() {
    return finished;
  }

  /**
   * Answers an RDMA HELLO with a refusal (HELLO_ACK {@code kind}, naming this engine's epoch) and
   * closes the connection; blocking (the blocking-I/O executor).
   */
  static void refuse(Conduit channel, ByteBuffer hello, ErrorKind kind, long localEpoch) {
    try (channel) {
      channel.socket().configureBlocking(true);
      ByteBuffer ack = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(
          ack,
          0,
          FrameType.HELLO_ACK,
          kind.code(),
          0,
          FrameCodec.requestId(hello, 0),
          localEpoch,
          0,
          0,
          0);
      while (ack.hasRemaining()) {
        channel.write(ack);
      }
    } catch (IOException ignored) {
      // The peer went away: it learns nothing more either way.
    }
  }
}
