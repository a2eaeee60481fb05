package io.orbite.transport.rdma;

import io.orbite.config.TcpConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.slicing.SlicePlan;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.tcp.LaneConnector;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The requester side of one RDMA endpoint (one peer incarnation): its control link, its QP array
 * (for each local rail and each of its lanes, one QP connected to the peer's rail of the same index
 * modulo the peer's rail count), and the slices asked for and not yet granted. Made cold by {@link
 * #open} on the blocking-I/O executor, once, for every waiter of its {@link RdmaEndpoint}.
 *
 * <p>{@link #dispatch} runs on the submitting thread: it plans the task into slices (C15: 64 KiB
 * base block, at most 64 READ / 32 WRITE slices, the short tail folded), spreads them over the
 * rails by link rate (floor of each rail's share, leftovers to the fastest), admits each on its
 * (peer epoch, local rail, remote rail) pair through the rail circuit (C13; an open pair's slices
 * go to another rail, or fail UNAVAILABLE when none is healthy; a rail whose route its monitor
 * fenced is refused before the circuit is asked), and hands each to the lane of its QP.
 */
final class RdmaChannel implements PeerChannel, RcQp.QpOwner {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RdmaChannel.class);

  private final SegmentDescriptor peer;
  private final ControlLink link;
  private final AtomicReferenceArray<RcQp> qps;

  /** The peer's rails, each where it is reached now (a REPAIRED names a rail's new address). */
  private final AtomicReferenceArray<RdmaWire.Rail> remoteRails;

  private final ConcurrentHashMap<Integer, Repair> repairs = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Integer, CompletableFuture<RdmaWire.Repaired>> repairReplies =
      new ConcurrentHashMap<>();
  private final int lanesPerRail;
  private final int railCount;
  private final RailSelector selector;
  private final RailHealth health;
  private final SlicePlanner planner;
  private final ConcurrentHashMap<Long, Slice> asked = new ConcurrentHashMap<>();

  /** Slices granted and not ended yet: they wait for the source's ACK (its receipt). */
  private final ConcurrentHashMap<Long, Slice> unacked = new ConcurrentHashMap<>();

  private final AtomicLong parentIds = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private final AtomicInteger rotation = new AtomicInteger();
  private final CompletableFuture<List<String>> closed = new CompletableFuture<>();
  private final RdmaCounters counters;
  private final DirectBytes direct;

  /** This engine's requester-side {@code rdma.maxGrants}: parents reserved at sources at once. */
  private final DirectBytes parentUnits;

  /**
   * Per local rail, the link rate in bytes per second the peer published for the rail it reaches
   * (its RAILS): the most its pair can carry, a cap on that rail's bandwidth in the selector's
   * score.
   */
  private final double[] peerCap;

  /** What the peer admits as a source, from its RAILS: the largest task, the parents at once. */
  private final RdmaWire.Limits peerLimits;

  /**
   * The parents this endpoint holds reserved at its peer, at most the peer's published {@code
   * rdma.maxGrants}: a task beyond it waits here rather than being refused there.
   */
  private final DirectBytes peerParents;

  /** The channel's state: active, closed (lost, or closed here), fenced. */
  private final ChannelGate gate;

  /** Set once {@link #close} began its work: it runs once, whoever asks first. */
  private boolean closing;

  private RdmaChannel(
      SegmentDescriptor peer,
      ControlLink link,
      RcQp[] qps,
      List<RdmaWire.Rail> remoteRails,
      RdmaWire.Limits peerLimits,
      int lanesPerRail,
      int railCount,
      RailHealth health,
      RailSelector selector,
      io.orbite.config.SlicingConfig slicing,
      RdmaCounters counters,
      DirectBytes direct,
      DirectBytes parents) {
    this.selector = selector;
    this.direct = direct;
    this.parentUnits = parents;
    this.peerLimits = peerLimits;
    this.peerCap = new double[railCount];
    for (int r = 0; r < railCount; r++) {
      // Each local rail reaches one remote rail (the same index, modulo the peer's count).
      peerCap[r] = remoteRails.get(r % remoteRails.size()).linkMbps() * 1e6 / 8;
    }
    this.peerParents =
        new DirectBytes(
            "rdma.maxGrants of " + peer + " (its published limit)", peerLimits.maxParents());
    this.peer = peer;
    this.gate = new ChannelGate("the RDMA channel to " + peer);
    this.link = link;
    this.qps = new AtomicReferenceArray<>(qps);
    this.remoteRails = new AtomicReferenceArray<>(remoteRails.toArray(RdmaWire.Rail[]::new));
    this.lanesPerRail = lanesPerRail;
    this.railCount = railCount;
    this.health = health;
    this.counters = counters;
    this.planner =
        new SlicePlanner(
            slicing.baseBlockBytes(), slicing.maxReadSlices(), slicing.maxWriteSlices());
    for (RcQp qp : qps) {
      qp.owner = this;
    }
  }

  /**
   * Connects to {@code peer}: the control connection (whose HELLO names the peer's epoch, so a
   * stale one is refused before any QP is made), the peer's rails, then the QPs, connected on both
   * ends. Blocking.
   *
   * @throws TransferException naming the peer and what failed; nothing made is left behind
   */
  static RdmaChannel open(
      SegmentDescriptor peer,
      long localEpoch,
      TcpConfig tcp,
      io.orbite.config.SlicingConfig slicing,
      List<Rail> rails,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters,
      DirectBytes direct,
      DirectBytes parents) {
    SocketChannel socket = LaneConnector.connect(peer, 0, localEpoch, tcp, Transport.RDMA);
    ControlLink link;
    try {
      link = new ControlLink(socket);
    } catch (IOException e) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // Already failing: the cause below says why.
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "RDMA control connection to " + peer + ": " + e, e);
    }
    List<RcQp> made = new ArrayList<>();
    try {
      socket.socket().setSoTimeout(tcp.connectTimeoutMillis());
      DataInputStream in = link.in;
      RdmaWire.Describe described = RdmaWire.readRails(in);
      List<RdmaWire.Rail> remote = described.rails();
      RdmaWire.writeRails(
          link.out(),
          rails.stream().map(Rail::published).toList(),
          new RdmaWire.Limits(direct.limitBytes(), (int) parents.limitBytes()));
      int lanes = rails.getFirst().lanes.size();
      List<RdmaWire.QpEnd> ends = new ArrayList<>();
      for (Rail rail : rails) {
        for (CqLane lane : rail.lanes) {
          VerbsResult<Verbs.Qp> qp = rail.createQp(lane, false);
          if (!qp.ok()) {
            throw new TransferException(
                ErrorKind.RESOURCE_EXHAUSTED, "RDMA QP on " + rail.device + ": " + qp.describe());
          }
          int remoteRail = rail.index % remote.size();
          made.add(new RcQp(qp.value(), lane, rail, made.size(), remoteRail));
          ends.add(new RdmaWire.QpEnd(rail.index, remoteRail, qp.value().qpNum()));
        }
      }
      RdmaWire.writeConnect(link.out(), ends);
      int[] qpns = RdmaWire.readConnected(in, ends.size());
      for (RcQp qp : made) {
        int rc = qp.connect(remote.get(qp.remoteRail), qpns[qp.index]);
        if (rc != 0 && qp.rail.fenced()) {
          // Its rail is paused: the QP stays unconnected, its monitor retires it, and the slot is
          // repaired once the rail recovered; the other rails carry on.
          qp.broken = qp.rail.device + " is paused (route generation " + qp.rail.generation() + ")";
        } else if (rc != 0) {
          throw new TransferException(
              ErrorKind.UNAVAILABLE,
              "RDMA QP on " + qp.rail.device + " to " + peer + ": modify failed, errno " + rc);
        }
      }
      socket.socket().setSoTimeout(0);
      RdmaChannel channel =
          new RdmaChannel(
              peer,
              link,
              made.toArray(RcQp[]::new),
              remote,
              described.limits(),
              lanes,
              rails.size(),
              health,
              selector,
              slicing,
              counters,
              direct,
              parents);
      Thread.ofPlatform()
          .daemon()
          .name("orbite-rdma-control-" + peer.port() + "-" + Long.toHexString(peer.epoch()))
          .start(channel::readControl);
      return channel;
    } catch (IOException | RuntimeException e) {
      link.close();
      for (RcQp qp : made) {
        qp.lane.destroyUnused(qp);
      }
      if (e instanceof TransferException t) {
        throw t;
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "RDMA handshake with " + peer + ": " + TransferException.describe(e),
          e);
    }
  }

  // ---------------------------------------------------------------- PeerChannel

  @Override
  public SegmentDescriptor peer() {
    return peer;
  }

  @Override
  public Transport transport() {
    return Transport.RDMA;
  }

  @Override
  public ChannelGate gate() {
    return gate;
  }

  /**
   * Active, and some rail pair to the peer whose local rail the selection policy allows is healthy
   * (closed circuit) now; so UNSPEC never picks RDMA when the policy allows no rail.
   */
  @Override
  public boolean healthy() {
    if (!gate.active()) {
      return false;
    }
    RailPolicy policy = selector.policy();
    for (int r = 0; r < railCount; r++) {
      RcQp qp = qps.get(r * lanesPerRail);
      if (policy.allowed(qp.rail.index)
          && !qp.rail.fenced()
          && health.healthy(new RailHealth.Pair(peer.epoch(), qp.rail.index, qp.remoteRail))) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void fence(long newerEpoch, String reason) {
    if (gate.fence(newerEpoch, reason)) {
      close(ChannelGate.Why.LOCAL_CLOSE, "fenced: " + reason);
    }
  }

  @Override
  public int dispatch(TaskWork work) {
    if (!gate.active()) {
      return gate.refuse(work);
    }
    long length = work.lengthBytes();
    SlicePlan plan = planner.plan(work.op(), length);
    if (plan.blockBytes() + (length - plan.blockBytes() * plan.count()) > Integer.MAX_VALUE) {
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.INVALID_ARGUMENT,
                  RemoteEffect.NONE,
                  "an RDMA slice is at most 2 GiB - 1 and "
                      + length
                      + " B in "
                      + plan.count()
                      + " slices makes larger ones (never sent)"));
      return 1;
    }
    RailPolicy policy = selector.policy();
    String noRail = policy.noneAllowed();
    if (noRail != null) {
      counters.tasksRefusedByPolicy.increment();
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.UNAVAILABLE,
                  RemoteEffect.NONE,
                  "no RDMA rail to " + peer + ": " + noRail + " (never sent)"));
      return 1;
    }
    if (length > direct.limitBytes()) {
      return tooLarge(work, "the whole budget of " + direct.limitBytes() + " B (never sent)");
    }
    if (length > peerLimits.maxTaskBytes()) {
      return tooLarge(
          work,
          "the "
              + peerLimits.maxTaskBytes()
              + " B that peer reserves at most (its published limit; never sent)");
    }
    // All of the task's slices are charged at once, or none: a task that does not fit now waits,
    // in arrival order, and starts on the thread whose drain makes room for it.
    // The common case charges without making the waiter's two closures.
    if (direct.tryCharge(length)
        || direct.chargeOrWait(
            length,
            this,
            () -> start(work, plan, policy),
            why -> refuseWaiting(work, plan.count(), why, "rdma.maxDirectBytes"),
            work.deadlineNanos(),
            () -> timedOut(work, plan.count(), "its direct bytes"))) {
      start(work, plan, policy);
    } else {
      counters.tasksAwaitingDirectBytes.increment();
    }
    return plan.count();
  }

  /**
   * Refuses {@code work}, longer than {@code limit} says it may be, before anything is charged or
   * sent: one receipt, {@code RESOURCE_EXHAUSTED} naming {@code rdma.maxDirectBytes}.
   *
   * @return the receipts promised: 1
   */
  private int tooLarge(TaskWork work, String limit) {
    counters.directBytesRefused.increment();
    work.sink()
        .deliver(
            Receipt.failed(
                work.taskIndex(),
                ErrorKind.RESOURCE_EXHAUSTED,
                RemoteEffect.NONE,
                "rdma.maxDirectBytes: a task of "
                    + work.lengthBytes()
                    + " B to "
                    + peer
                    + " is larger than "
                    + limit));
    return 1;
  }

  /**
   * A task that was charged its direct bytes: a unit of its peer's published {@code rdma.maxGrants}
   * for its reservation there, then one of this engine's, each now or, in order, once an earlier
   * parent said DONE; then its slices.
   */
  private void start(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (peerParents.tryCharge(1)
        || peerParents.chargeOrWait(
            1,
            this,
            () -> startHere(work, plan, policy),
            why -> {
              direct.release(work.lengthBytes());
              refuseWaiting(work, plan.count(), why, "its peer's rdma.maxGrants");
            },
            work.deadlineNanos(),
            () -> {
              direct.release(work.lengthBytes());
              timedOut(work, plan.count(), "a unit of its peer's rdma.maxGrants");
            })) {
      startHere(work, plan, policy);
    } else {
      counters.tasksAwaitingGrants.increment();
    }
  }

  /** A task charged its direct bytes and its peer's unit: one unit of this engine's. */
  private void startHere(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (parentUnits.tryCharge(1)
        || parentUnits.chargeOrWait(
            1,
            this,
            () -> reserve(work, plan, policy),
            why -> {
              direct.release(work.lengthBytes());
              peerParents.release(1);
              refuseWaiting(work, plan.count(), why, "rdma.maxGrants");
            },
            work.deadlineNanos(),
            () -> {
              direct.release(work.lengthBytes());
              peerParents.release(1);
              timedOut(work, plan.count(), "a unit of this engine's rdma.maxGrants");
            })) {
      reserve(work, plan, policy);
    } else {
      counters.tasksAwaitingGrants.increment();
    }
  }

  /** A task charged its direct bytes and a parent unit: reserved at the source, then sliced. */
  private void reserve(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (System.nanoTime() - work.deadlineNanos() > 0) {
      // Its deadline passed while it waited for its charges: nothing of it was sent.
      direct.release(work.lengthBytes());
      parentUnits.release(1);
      peerParents.release(1);
      timedOut(work, plan.count(), "its charges");
      return;
    }
    if (!gate.active()) {
      // Closed or fenced while it waited for its charges: nothing of it was sent.
      direct.release(work.lengthBytes());
      parentUnits.release(1);
      peerParents.release(1);
      refuseWaiting(work, plan.count(), gate.refusal(), "its charges");
      return;
    }
    boolean[] eligible = new boolean[railCount];
    boolean any = false;
    for (int r = 0; r < railCount; r++) {
      RcQp qp = qps.get(r * lanesPerRail);
      eligible[r] =
          policy.allowed(r)
              && !qp.rail.fenced()
              && health.admissible(new RailHealth.Pair(peer.epoch(), qp.rail.index, qp.remoteRail));
      any |= eligible[r];
    }
    if (!any) {
      // No allowed pair admits work now: let admission refuse each, naming why.
      for (int r = 0; r < railCount; r++) {
        eligible[r] = policy.allowed(r);
      }
    }
    int[] railOfSlice = selector.assign(plan.count(), plan.blockBytes(), eligible, peerCap);
    int turn = rotation.getAndIncrement();
    // The whole task is reserved before any slice asks its grant (the same stream carries both).
    Slice.Parent parent = new Slice.Parent(parentIds.incrementAndGet(), plan.count());
    link.write(
        out ->
            RdmaWire.writeReserve(
                out,
                new RdmaWire.Reserve(
                    parent.id,
                    work.op().ordinal(),
                    work.regionId(),
                    work.remoteOffset(),
                    work.lengthBytes(),
                    plan.count())));
    for (int i = 0; i < plan.count(); i++) {
      admit(work, parent, plan.offset(i), plan.length(i), railOfSlice[i], turn + i);
    }
  }

  /**
   * Fails a task whose deadline passed while it waited for {@code waitedFor}, its charges already
   * returned: one {@code TIMEOUT} receipt per planned slice, nothing sent.
   */
  private void timedOut(TaskWork work, int receipts, String waitedFor) {
    counters.tasksPastDeadline.increment();
    long late = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - work.deadlineNanos());
    failUnsent(
        work,
        receipts,
        ErrorKind.TIMEOUT,
        peer
            + ": the deadline passed "
            + late
            + " ms ago while the task waited for "
            + waitedFor
            + " (never sent)");
  }

  /**
   * Tasks of this endpoint waiting for their charges whose deadline passed fail {@code TIMEOUT}
   * now, on the calling thread (their charges returned, nothing sent; what they held back may start
   * on it and write its RESERVE): the endpoint's owner has this run on the blocking-I/O executor at
   * each of its ticks when {@link #anyWaiting}.
   */
  void expireWaiting() {
    long now = System.nanoTime();
    direct.expire(this, now);
    peerParents.expire(this, now);
    parentUnits.expire(this, now);
  }

  /** Whether any task waits for its charges (of any endpoint: the budgets are shared). */
  boolean anyWaiting() {
    return direct.waitingBytes() > 0
        || peerParents.waitingBytes() > 0
        || parentUnits.waitingBytes() > 0;
  }

  /**
   * Fails a task that waited for its charges ({@code waitedFor}: its direct bytes or its parent
   * unit) and will not start: one receipt per planned slice, as {@link #dispatch} promised, nothing
   * sent and nothing charged.
   */
  private void refuseWaiting(TaskWork work, int receipts, String why, String waitedFor) {
    failUnsent(
        work,
        receipts,
        neverSentKind(),
        peer + ": " + why + " while the task waited for " + waitedFor + " (never sent)");
  }

  /** One failure receipt per planned slice of a task of which nothing was sent: effect NONE. */
  private static void failUnsent(TaskWork work, int receipts, ErrorKind kind, String detail) {
    for (int i = 0; i < receipts; i++) {
      work.sink().deliver(Receipt.failed(work.taskIndex(), kind, RemoteEffect.NONE, detail));
    }
  }

  /**
   * Admits a slice on {@code rail} if its pair is admitted, else on another admitted rail, and
   * queues it on its QP's lane; else its failure receipt is delivered. A slice admitted on a rail
   * whose QP for this turn failed waits for that QP's repair ({@link #awaitRepair}), which queues
   * it, instead of being queued here: a half-open trial (C13) then runs on the fresh QP, and only
   * its own receipt closes the pair.
   */
  private void admit(
      TaskWork work, Slice.Parent parent, long offset, long length, int rail, int turn) {
    String refusals = "";
    RailPolicy policy = selector.policy();
    for (int k = 0; k < railCount; k++) {
      int r = (rail + k) % railCount;
      if (!policy.allowed(r)) {
        continue; // a hard limit: another rail's refusal never sends the slice here
      }
      RcQp live = null;
      for (int j = 0; j < lanesPerRail && live == null; j++) {
        RcQp q = qps.get(r * lanesPerRail + Math.floorMod(turn + j, lanesPerRail));
        if (q.broken == null) {
          live = q;
        }
      }
      int slot = r * lanesPerRail + Math.floorMod(turn, lanesPerRail);
      RcQp qp = live != null ? live : qps.get(slot);
      if (qp.rail.fenced()) {
        // A paused rail's routes are refused before the circuit is asked: no trial is armed on it.
        refusals +=
            (refusals.isEmpty() ? "" : "; ")
                + qp.rail.device
                + " is paused (route generation "
                + qp.rail.generation()
                + ")";
        continue;
      }
      RailHealth.Admission a =
          health.admit(new RailHealth.Pair(peer.epoch(), qp.rail.index, qp.remoteRail));
      if (a instanceof RailHealth.Admission.Admitted admitted) {
        Slice s = new Slice(work, parent, offset, length, qp, admitted.ticket(), this);
        s.id = ids.incrementAndGet();
        selector.charge(qp.rail.index, length);
        if (live == null) {
          // Its repair queues it: deciding here, not after, so that a repair that ends at once
          // cannot queue it a second time (its grant would be asked twice: a protocol violation).
          awaitRepair(slot, s);
        } else {
          counters.slicesDispatched.increment();
          queueOnLane(s);
        }
        return;
      }
      refusals +=
          (refusals.isEmpty() ? "" : "; ")
              + (a instanceof RailHealth.Admission.Refused f
                  ? f.why()
                  : ((RailHealth.Admission.Exhausted) a).why());
    }
    counters.slicesRefusedByHealth.increment();
    parentEnded(parent, null);
    direct.release(length); // its share of the task's charge: this slice never reached a lane
    work.sink()
        .deliver(
            Receipt.failed(
                work.taskIndex(),
                ErrorKind.UNAVAILABLE,
                RemoteEffect.NONE,
                "no healthy RDMA rail to " + peer + ": " + refusals + " (never sent)"));
  }

  @Override
  public void flush() {
    // Each slice woke its lane when it was handed over.
  }

  // ---------------------------------------------------------------- lanes' side

  RailHealth health() {
    return health;
  }

  RailSelector selector() {
    return selector;
  }

  DirectBytes direct() {
    return direct;
  }

  ControlLink link() {
    return link;
  }

  String label() {
    return peer.toString();
  }

  void counted(Slice s) {
    counters.bytes(s.qp.rail.index, s.work.op()).add(s.length);
    s.qp.rail.bytes.add(s.length);
  }

  /**
   * Slice {@code s} ended (its one receipt is being sent): it waits for no ACK any more, and the
   * last slice of its task says DONE.
   */
  void ended(Slice s) {
    unacked.remove(s.id, s);
    parentEnded(s.parent, s.qp.lane);
  }

  /**
   * One slice of {@code parent} ended; after the last, DONE is written (flushed by {@code lane}'s
   * pass when on a lane thread, else at once).
   */
  private void parentEnded(Slice.Parent parent, CqLane lane) {
    if (!parent.sliceEnded()) {
      return;
    }
    if (link.write(out -> RdmaWire.writeDone(out, parent.id))) {
      if (lane != null && Thread.currentThread() == lane.thread()) {
        lane.wrote(link);
      } else {
        link.flush();
      }
    }
    // Its reservation's units: the next waiting task may reserve (the source gave its parent's
    // slot back when its last window was released, before the last ACK).
    parentUnits.release(1);
    peerParents.release(1);
  }

  /** Sends slice {@code s}'s grant request (on its lane); false when the link is closed. */
  boolean askGrant(Slice s) {
    asked.put(s.id, s);
    boolean ok =
        link.write(
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

  /**
   * A QP of this endpoint erred (on its lane): that QP alone is retired (to ERR, flushed, destroyed
   * on its lane; what was asked on it and not granted fails unsent); the endpoint keeps its other
   * QPs, and the slot is repaired when a slice is admitted to it again.
   */
  @Override
  public void qpFailed(RcQp qp, String why) {
    if (qp.retiring || !gate.active()) {
      return;
    }
    qp.retiring = true;
    counters.qpsFailed.increment();
    String reason = "QP " + qp.qp.qpNum() + " on " + qp.rail.device + " failed: " + why;
    qp.lane.close(
        List.of(qp),
        reason,
        () -> {
          failAsked(qp.lane, List.of(qp), reason);
          qp.retired.complete(null);
        });
  }

  /** A slice waiting for slot {@code slot}'s QP to be made again. */
  private void awaitRepair(int slot, Slice s) {
    s.awaitsRepair = true;
    while (true) {
      Repair fresh = new Repair(slot);
      Repair rp = repairs.putIfAbsent(slot, fresh);
      if (rp == null) {
        rp = fresh;
        Repair started = rp;
        Thread.ofVirtual().name("orbite-rdma-repair-" + slot).start(() -> repair(started));
      }
      synchronized (rp) {
        if (!rp.done) {
          rp.waiting.add(s);
          return;
        }
      }
      // That repair has just finished: the slot may be live again, or need another.
      RcQp now = qps.get(slot);
      if (now.broken == null) {
        s.qp = now;
        s.awaitsRepair = false;
        queueOnLane(s);
        return;
      }
    }
  }

  private static final class Repair {
    final int slot;
    final List<Slice> waiting = new ArrayList<>();
    boolean done;

    Repair(int slot) {
      this.slot = slot;
    }
  }

  private static final long REPAIR_TIMEOUT_MILLIS = 10_000;

  /**
   * Makes slot {@code rp.slot}'s QP again (on a virtual thread): waits until the failed one was
   * destroyed on its lane, makes a fresh QP on the same rail and lane, asks the source for its
   * fresh end (REPAIR), connects, and queues the waiting slices on it. A failure fails them unsent,
   * counted against their rail pair.
   */
  private void repair(Repair rp) {
    RcQp old = qps.get(rp.slot);
    Verbs.Qp made = null;
    String failure;
    try {
      old.retired.get(REPAIR_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
      if (!old.destroyed) {
        throw new IllegalStateException("the failed QP could not be destroyed");
      }
      if (old.rail.fenced()) {
        throw new IllegalStateException(
            old.rail.device
                + " is paused (route generation "
                + old.rail.generation()
                + "): its monitor has not validated a route yet");
      }
      // The lane at the old one's index: a faulted lane is replaced there once drained.
      CqLane lane = old.rail.lanes.get(old.lane.index);
      Rail.Route route = old.rail.route();
      VerbsResult<Verbs.Qp> q = old.rail.createQp(lane, false);
      if (!q.ok()) {
        throw new IllegalStateException(q.describe());
      }
      made = q.value();
      CompletableFuture<RdmaWire.Repaired> reply = new CompletableFuture<>();
      repairReplies.put(rp.slot, reply);
      int qpn = made.qpNum();
      RdmaWire.Address here = old.rail.address(route);
      if (!link.write(out -> RdmaWire.writeRepair(out, rp.slot, qpn, here))) {
        throw new IllegalStateException("the control link closed");
      }
      link.flush();
      RdmaWire.Repaired answer = reply.get(REPAIR_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
      if (answer.status() != 0) {
        throw new IllegalStateException("the source refused: " + answer.detail());
      }
      RdmaWire.Rail there = answer.at().applyTo(remoteRails.get(old.remoteRail));
      remoteRails.set(old.remoteRail, there);
      // Connected under the route it was made for: refused (EAGAIN) once the monitor fenced it.
      int rc = old.rail.connect(made, route, there, answer.qpn());
      if (rc != 0) {
        throw new IllegalStateException("ibv_modify_qp: errno " + rc);
      }
      RcQp fresh = new RcQp(made, lane, old.rail, rp.slot, old.remoteRail, route);
      fresh.remoteQpn = answer.qpn();
      made = null; // counted on its lane now: destroyed through it
      fresh.owner = this;
      synchronized (this) {
        if (closing) {
          lane.destroyUnused(fresh);
          throw new IllegalStateException("the endpoint closed: " + gate.refusal());
        }
        qps.set(rp.slot, fresh);
      }
      counters.qpsRepaired.increment();
      for (Slice s : finish(rp)) {
        s.qp = fresh;
        s.awaitsRepair = false;
        queueOnLane(s);
      }
      return;
    } catch (TimeoutException e) {
      failure = "no answer within " + REPAIR_TIMEOUT_MILLIS + " ms";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = "interrupted";
    } catch (ExecutionException e) {
      failure = String.valueOf(e.getCause());
    } catch (RuntimeException e) {
      failure = e.getMessage();
    } finally {
      repairReplies.remove(rp.slot);
    }
    if (made != null && old.rail.verbs.destroyQp(made) == 0) {
      // Never adopted by a lane, never posted on.
      old.rail.lanes.get(old.lane.index).releaseCqes(made);
    }
    for (Slice s : finish(rp)) {
      s.releaseDirect();
      parentEnded(s.parent, null);
      health.failed(s.ticket);
      selector.finished(s.qp.rail.index, s.length, false, false, 0, 0);
      s.work
          .sink()
          .deliver(
              Receipt.failed(
                  s.work.taskIndex(),
                  ErrorKind.UNAVAILABLE,
                  RemoteEffect.NONE,
                  "RDMA QP "
                      + rp.slot
                      + " to "
                      + peer
                      + " on "
                      + old.rail.device
                      + " could not be repaired: "
                      + failure
                      + " (never sent)"));
    }
  }

  /** Ends {@code rp}: later slices start another; the ones that waited are returned. */
  private List<Slice> finish(Repair rp) {
    List<Slice> waiting;
    synchronized (rp) {
      rp.done = true;
      waiting = List.copyOf(rp.waiting);
    }
    repairs.remove(rp.slot, rp);
    return waiting;
  }

  /**
   * Hands {@code s} to its QP's lane, or fails it unsent when that lane has stopped. Its wait for
   * aging (C14) counts from here: time in the lane's inbox is time waited.
   */
  private void queueOnLane(Slice s) {
    long handedAt = System.nanoTime();
    if (!s.qp.lane.submit(() -> s.qp.lane.enqueue(s, handedAt))) {
      s.releaseDirect();
      parentEnded(s.parent, null);
      health.cancelled(s.ticket);
      selector.finished(s.qp.rail.index, s.length, false, false, 0, 0);
      s.work
          .sink()
          .deliver(
              Receipt.failed(
                  s.work.taskIndex(),
                  ErrorKind.UNAVAILABLE,
                  RemoteEffect.NONE,
                  s.qp.lane.name + " has stopped (never sent)"));
    }
  }

  private void readControl() {
    try {
      DataInputStream in = link.in;
      while (true) {
        int type = RdmaWire.nextType(in);
        if (type < 0) {
          close(ChannelGate.Why.PEER_LOST, "the RDMA control connection to " + peer + " ended");
          return;
        }
        if (type == RdmaWire.REPAIRED) {
          RdmaWire.Repaired r = RdmaWire.readRepairedBody(in);
          CompletableFuture<RdmaWire.Repaired> waiting = repairReplies.get(r.qp());
          if (waiting != null) {
            waiting.complete(r);
          }
          continue;
        }
        if (type == RdmaWire.QP_GONE) {
          RdmaWire.QpGone g = RdmaWire.readQpGoneBody(in);
          if (g.qp() >= qps.length()) {
            close(
                ChannelGate.Why.PEER_LOST,
                "the peer " + peer + " named QP " + g.qp() + " of " + qps.length() + " gone");
            return;
          }
          RcQp qp = qps.get(g.qp());
          // Only the QP connected to the one it retired: a repaired slot's fresh QP stays.
          if (qp.remoteQpn == g.qpn()) {
            counters.qpsGoneAtSource.increment();
            qp.lane.submit(
                () -> qpFailed(qp, "the source retired its QP " + g.qpn() + ": " + g.detail()));
          }
          continue;
        }
        if (type == RdmaWire.ACK) {
          RdmaWire.Ack a = RdmaWire.readAckBody(in);
          Slice s = unacked.remove(a.id());
          if (s != null) {
            s.qp.lane.submit(() -> s.qp.lane.acked(s, a));
          }
          continue;
        }
        if (type != RdmaWire.GRANT) {
          close(
              ChannelGate.Why.PEER_LOST,
              "the peer " + peer + " sent RDMA control message " + type + " where a grant was due");
          return;
        }
        RdmaWire.Grant g = RdmaWire.readGrantBody(in);
        Slice s = asked.remove(g.id());
        if (s != null) {
          if (g.status() == 0) {
            unacked.put(s.id, s); // before its lane can post: the ACK follows its SEND
          }
          s.qp.lane.submit(() -> s.qp.lane.granted(s, g));
        }
      }
    } catch (IOException e) {
      close(
          ChannelGate.Why.PEER_LOST,
          "the RDMA control connection to " + peer + " broke: " + TransferException.describe(e));
    }
  }

  /**
   * Closes the endpoint: no new work; every QP moves to ERR on its lane and is destroyed once its
   * work requests were flushed; then what was asked and never granted fails unsent, and the link
   * closes. Idempotent; {@link #closed()} completes when every lane has done its part.
   */
  void close(ChannelGate.Why why, String reason) {
    synchronized (this) {
      if (closing) {
        return;
      }
      closing = true;
      gate.close(why, reason);
    }
    LOG.info("RDMA endpoint to {} closing: {}", peer, reason);
    direct.cancel(this, reason); // tasks waiting for their direct bytes: never sent
    peerParents.cancel(this, reason); // and those waiting for a parent unit (their bytes go back)
    parentUnits.cancel(this, reason);
    Map<CqLane, List<RcQp>> byLane = new IdentityHashMap<>();
    for (int i = 0; i < qps.length(); i++) {
      RcQp qp = qps.get(i);
      byLane.computeIfAbsent(qp.lane, l -> new ArrayList<>()).add(qp);
    }
    AtomicInteger left = new AtomicInteger(byLane.size());
    List<String> problems = java.util.Collections.synchronizedList(new ArrayList<>());
    for (Map.Entry<CqLane, List<RcQp>> e : byLane.entrySet()) {
      CqLane lane = e.getKey();
      List<RcQp> mine = e.getValue();
      Runnable closeOnLane =
          () ->
              lane.close(
                  mine,
                  reason,
                  () -> {
                    failAsked(lane, mine, reason);
                    failUnacked(lane, mine, reason);
                    for (RcQp qp : mine) {
                      if (!qp.destroyed) {
                        problems.add("QP " + qp.qp.qpNum() + " on " + qp.rail.device);
                      }
                    }
                    if (left.decrementAndGet() == 0) {
                      link.close();
                      closed.complete(List.copyOf(problems));
                    }
                  });
      if (!lane.submit(closeOnLane)) {
        // A faulted lane, reclaimed after every QP on it was destroyed, owes nothing.
        if (mine.stream().anyMatch(qp -> !qp.destroyed)) {
          problems.add(lane.name + " had stopped");
        }
        if (left.decrementAndGet() == 0) {
          link.close();
          closed.complete(List.copyOf(problems));
        }
      }
    }
  }

  private void failAsked(CqLane lane, List<RcQp> mine, String reason) {
    ErrorKind kind = neverSentKind();
    var it = asked.values().iterator();
    while (it.hasNext()) {
      Slice s = it.next();
      if (s.qp.lane == lane && mine.contains(s.qp)) {
        it.remove();
        s.fail(lane.receipts(), kind, peer + ": " + reason + " (never sent)", false);
      }
    }
  }

  /**
   * Fails the slices of {@code mine} whose WRs completed but whose ACK never came (the control link
   * is closing) and whose QP was destroyed, so nothing of them touches memory; a WRITE is UNKNOWN.
   */
  private void failUnacked(CqLane lane, List<RcQp> mine, String reason) {
    var it = unacked.values().iterator();
    while (it.hasNext()) {
      Slice s = it.next();
      // A QP that could not be destroyed may still run its WRs: its slices stay (UNQUIESCED).
      if (s.qp.lane == lane && mine.contains(s.qp) && s.qp.destroyed) {
        it.remove();
        s.fail(
            lane.receipts(),
            ErrorKind.PEER_LOST,
            peer + ": " + reason + " before the source confirmed the slice (no ACK)",
            false);
      }
    }
  }

  /** Completes when the endpoint has closed: with the QPs that could not be destroyed, if any. */
  CompletableFuture<List<String>> closed() {
    return closed;
  }

  /** Why the endpoint stopped taking work (its gate's refusal), or null while it is active. */
  String closedBecause() {
    return gate.active() ? null : gate.refusal();
  }

  /** The kind of work this endpoint fails unsent once it stopped: its gate's kind (C18). */
  private ErrorKind neverSentKind() {
    ErrorKind k = gate.refusalKind();
    return k != null ? k : ErrorKind.PEER_LOST;
  }

  /** The highest send-queue debt any QP of this endpoint reached (read after it closed). */
  int maxDebt() {
    int m = 0;
    for (int i = 0; i < qps.length(); i++) {
      m = Math.max(m, qps.get(i).maxDebt);
    }
    return m;
  }

  /** Queued slices moved up a priority tier by aging (C14), over this endpoint's QPs. */
  long promotions() {
    long n = 0;
    for (int i = 0; i < qps.length(); i++) {
      n += qps.get(i).queue.promotions();
    }
    return n;
  }

  /**
   * The rails the peer published (Describe's RAILS: device, port, link rate, NUMA node), each at
   * the address its last REPAIRED named.
   */
  List<RdmaWire.Rail> remoteRails() {
    List<RdmaWire.Rail> now = new java.util.ArrayList<>(remoteRails.length());
    for (int i = 0; i < remoteRails.length(); i++) {
      now.add(remoteRails.get(i));
    }
    return now;
  }

  /** For the owner view. */
  /** A slice of this endpoint was still on the wire past its deadline (its QP is retired). */
  void pastDeadline() {
    counters.slicesPastDeadline.increment();
  }

  /** What the peer admits as a source (its RAILS limits). */
  RdmaWire.Limits peerLimits() {
    return peerLimits;
  }

  /** Parents this endpoint holds reserved at its peer now (RESERVE written, DONE not yet). */
  long peerParentsReserved() {
    return peerParents.usedBytes();
  }

  int qpCount() {
    return qps.length();
  }

  long slicesAwaitingGrant() {
    return asked.size();
  }
}
