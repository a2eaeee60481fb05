package io.orbite.transport.rdma;

import io.orbite.config.SlicingConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.slicing.SlicePlan;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The requester side of one RDMA endpoint (one peer incarnation): the dispatcher. It owns the QP
 * array (for each local rail and each of its lanes, one QP connected to the peer's rail of the same
 * index modulo the peer's rail count) and the slices asked for and not yet granted or acknowledged;
 * its charges are one {@link ChannelBudget}, its control connection's reader a {@link
 * ControlReader}, its failed QPs' repairs a {@link QpRepairer}. Opened by {@link RdmaLink#open}.
 *
 * <p>{@link #dispatch} runs on the submitting thread: it plans the task into slices (C15: 64 KiB
 * base block, at most 64 READ / 32 WRITE slices, the short tail folded), charges the task as a
 * whole, spreads its slices over the rails by the selector's score, admits each on its (peer epoch,
 * local rail, remote rail) pair through the rail circuit (C13; an open pair's slices go to another
 * rail, or fail UNAVAILABLE when none is healthy; a rail whose route its monitor fenced is refused
 * before the circuit is asked), and hands each to the lane of its QP.
 *
 * <p>Its state is its {@link ChannelGate} alone: active, closed (its peer lost: the control
 * connection ended or broke; or closed here) or fenced (a newer incarnation answers). Work it fails
 * once the gate moved gets the gate's kind ({@link #kindFor}: PEER_LOST, UNAVAILABLE,
 * EPOCH_MISMATCH), whether it was in flight or never sent.
 *
 * <p>Why this file is over 500 lines: a task's whole requester path before its lanes (plan,
 * charges, reservation, rail choice, admission on the circuit, hand-off as one run of dispatches)
 * and the channel's failure path (a QP's, the peer's, a fence's) share the gate, the budget and the
 * ledger; the parts that stand alone are classes of their own already ({@link ChannelBudget},
 * {@link SliceLedger}, {@link QpRepairer}, {@link LaneReleases}).
 */
final class RdmaChannel implements PeerChannel, RcQp.QpOwner {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaChannel.class);

  private final SegmentDescriptor peer;
  private final ControlLink link;
  private final ChannelQps qps;
  private final int railCount;
  private final RailSelector selector;
  private final RailHealth health;
  private final SlicePlanner planner;
  private final SliceLedger ledger;

  /** Which rails a task may use: the selection policy, its rail mask, the pairs' health. */
  private final RailEligibility rails;

  private final AtomicLong parentIds = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private final AtomicInteger rotation = new AtomicInteger();
  private final CompletableFuture<List<String>> closed = new CompletableFuture<>();
  private final RdmaCounters counters;
  private final ChannelBudget budget;
  private final QpRepairer repairer;

  /**
   * Per local rail, the link rate in bytes per second the peer published for the rail it reaches
   * (its RAILS): the most its pair can carry, a cap on that rail's bandwidth in the selector's
   * score.
   */
  private final double[] peerCap;

  /** The channel's state: active, closed (lost, or closed here), fenced. */
  private final ChannelGate gate;

  /** Told when the gate is fenced: the endpoint then drains and retires the channel. */
  private final Runnable onFence;

  /** What {@link #mergeLimitBytes} answers ({@link RdmaLink#mergeLimit}). */
  private final long mergeLimitBytes;

  /**
   * The channel over {@code link} and {@code qps} (connected on both ends) to {@code peer}, whose
   * RAILS published {@code peerLimits}; its gate is the one {@code qps} installs repairs under.
   */
  RdmaChannel(
      SegmentDescriptor peer,
      ControlLink link,
      ChannelGate gate,
      ChannelQps qps,
      RdmaWire.Limits peerLimits,
      long mergeLimitBytes,
      RdmaStack stack,
      SlicingConfig slicing,
      Runnable onFence) {
    this.peer = peer;
    this.mergeLimitBytes = mergeLimitBytes;
    this.gate = gate;
    this.onFence = onFence;
    this.link = link;
    this.qps = qps;
    this.railCount = qps.railCount;
    this.selector = stack.selector();
    this.health = stack.health();
    this.counters = stack.counters();
    this.rails = new RailEligibility(peer.epoch(), qps, selector.policy(), health);
    this.peerCap = new double[railCount];
    List<RdmaWire.Rail> remote = qps.remoteRails();
    for (int r = 0; r < railCount; r++) {
      // Each local rail reaches one remote rail (the same index, modulo the peer's count).
      peerCap[r] = remote.get(r % remote.size()).linkMbps() * 1e6 / 8;
    }
    this.planner =
        new SlicePlanner(
            slicing.baseBlockBytes(), slicing.maxReadSlices(), slicing.maxWriteSlices());
    this.budget =
        new ChannelBudget(
            peer, gate, counters, stack.direct(), stack.parents(), peerLimits, this::reserve);
    this.repairer = new QpRepairer(this);
    this.ledger = new SliceLedger(this);
    for (int i = 0; i < qps.count(); i++) {
      qps.at(i).owner = this;
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

  @Override
  public long mergeLimitBytes() {
    return mergeLimitBytes;
  }

  /**
   * Active, and some rail pair to the peer whose local rail the selection policy allows is healthy
   * (closed circuit) now; so UNSPEC never picks RDMA when the policy allows no rail.
   */
  @Override
  public boolean healthy() {
    return gate.active() && rails.anyHealthy();
  }

  /** A rule's rail mask is honoured when a rail it names is allowed and has a healthy pair now. */
  @Override
  public String maskRefusal(long mask) {
    return rails.maskRefusal(mask, true);
  }

  /** Fences the gate; the endpoint, told, closes the channel (its work fails EPOCH_MISMATCH). */
  @Override
  public void fence(long newerEpoch, String reason) {
    if (gate.fence(newerEpoch, reason)) {
      onFence.run();
    }
  }

  /**
   * The lanes the submitting thread handed slices to in its run of {@link #dispatch} calls, woken
   * once by {@link #flush}: a batch of tasks costs each lane one wake-up, not one per slice. Null
   * on a thread not dispatching (a task started by a DONE that freed its charge wakes its lane at
   * once).
   */
  private static final ThreadLocal<LaneWakes> DISPATCHING = new ThreadLocal<>();

  @Override
  public int dispatch(TaskWork work) {
    if (!gate.active()) {
      return gate.refuse(work);
    }
    if (DISPATCHING.get() == null) {
      DISPATCHING.set(new LaneWakes());
    }
    long length = work.lengthBytes();
    SlicePlan plan = planner.plan(work.op(), length);
    if (ChannelBudget.refuseHugeSlices(work, plan) != 0) {
      return 1;
    }
    RailPolicy policy = selector.policy();
    String noRail = rails.noRail(work.railMask());
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
    int refused = budget.refuseOversized(work);
    if (refused != 0) {
      return refused;
    }
    budget.charge(work, plan, policy);
    return plan.count();
  }

  /** A task charged its direct bytes and both units: reserved at the source, then sliced. */
  private void reserve(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (System.nanoTime() - work.deadlineNanos() > 0) {
      // Its deadline passed while it waited for its charges: nothing of it was sent.
      budget.releaseTask(work.lengthBytes());
      budget.timedOut(work, plan.count(), "its charges");
      return;
    }
    if (!gate.active()) {
      // Closed or fenced while it waited for its charges: nothing of it was sent.
      budget.releaseTask(work.lengthBytes());
      budget.refuseWaiting(work, plan.count(), gate.refusal(), "its charges");
      return;
    }
    boolean[] eligible = rails.forSlices(work.railMask());
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
   * Admits a slice on {@code rail} if its pair is admitted, else on another admitted rail, and
   * queues it on its QP's lane; else its failure receipt is delivered. A slice admitted on a rail
   * whose QP for this turn failed waits for that QP's repair ({@link QpRepairer#await}), which
   * queues it, instead of being queued here: a half-open trial (C13) then runs on the fresh QP, and
   * only its own receipt closes the pair.
   */
  private void admit(
      TaskWork work, Slice.Parent parent, long offset, long length, int rail, int turn) {
    String refusals = "";
    for (int k = 0; k < railCount; k++) {
      int r = (rail + k) % railCount;
      if (!rails.allowed(work.railMask(), r)) {
        continue; // a hard limit: another rail's refusal never sends the slice here
      }
      RcQp live = qps.live(r, turn);
      int slot = qps.slot(r, turn);
      RcQp qp = live != null ? live : qps.at(slot);
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
          repairer.await(slot, s);
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
    budget.releaseBytes(length); // its share of the task's charge: this slice never reached a lane
    work.sink()
        .deliver(
            Receipt.failed(
                work.taskIndex(),
                kindFor(ErrorKind.UNAVAILABLE),
                RemoteEffect.NONE,
                "no healthy RDMA rail to " + peer + ": " + refusals + " (never sent)"));
  }

  /**
   * Runs {@code r} as a run of dispatches: the lanes that the tasks it starts hand slices to are
   * woken once, at its end ({@link LaneReleases}); within a run already going on, it joins it.
   */
  static void asOneRun(Runnable r) {
    if (DISPATCHING.get() != null) {
      r.run();
      return;
    }
    LaneWakes wakes = new LaneWakes();
    DISPATCHING.set(wakes);
    try {
      r.run();
    } finally {
      DISPATCHING.remove();
      wakes.wakeAll();
    }
  }

  @Override
  public void flush() {
    LaneWakes wakes = DISPATCHING.get();
    if (wakes != null) {
      DISPATCHING.remove();
      wakes.wakeAll();
    }
  }

  /**
   * Hands {@code s} to its QP's lane, or fails it unsent when that lane has stopped. Its wait for
   * aging (C14) counts from here: time in the lane's inbox is time waited.
   */
  void queueOnLane(Slice s) {
    long handedAt = System.nanoTime();
    CqLane lane = s.qp.lane;
    Runnable work = () -> lane.requester.enqueue(s, handedAt);
    LaneWakes wakes = DISPATCHING.get();
    if (wakes != null ? !wakes.hand(lane, work) : !lane.submit(work)) {
      failUnqueued(s, lane.name() + " has stopped (never sent)", false);
    }
  }

  /**
   * Fails a slice that never reached a lane (its lane stopped, its QP's repair failed): its charges
   * back, its pair told, one receipt with the channel's kind.
   */
  void failUnqueued(Slice s, String detail, boolean railFault) {
    s.releaseDirect();
    parentEnded(s.parent, null);
    if (railFault) {
      health.failed(s.ticket);
    } else {
      health.cancelled(s.ticket);
    }
    selector.finished(s.qp.rail.index, s.length, false, false, 0, 0);
    s.work
        .sink()
        .deliver(
            Receipt.failed(
                s.work.taskIndex(), kindFor(ErrorKind.UNAVAILABLE), RemoteEffect.NONE, detail));
  }

  // ---------------------------------------------------------------- lanes' side

  RailHealth health() {
    return health;
  }

  RailSelector selector() {
    return selector;
  }

  ChannelBudget budget() {
    return budget;
  }

  ControlLink link() {
    return link;
  }

  RdmaCounters counters() {
    return counters;
  }

  String label() {
    return peer.toString();
  }

  /**
   * The kind a task of this channel fails with now: the gate's once it closed or was fenced (C18: a
   * lost peer PEER_LOST, a local close UNAVAILABLE, a fence EPOCH_MISMATCH), else {@code
   * whileActive} (the kind of the failure itself: a QP's, a lane's).
   */
  ErrorKind kindFor(ErrorKind whileActive) {
    ErrorKind k = gate.refusalKind();
    return k != null ? k : whileActive;
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
    ledger.ended(s);
    parentEnded(s.parent, s.qp.lane);
  }

  /**
   * One slice of {@code parent} ended; after the last, DONE is written (flushed by {@code lane}'s
   * pass when on a lane thread, else at once) and its reservation's units go back (at the end of
   * the lane's pass when on a lane thread, else at once).
   */
  void parentEnded(Slice.Parent parent, CqLane lane) {
    if (!parent.sliceEnded()) {
      return;
    }
    if (link.write(out -> RdmaWire.writeDone(out, parent.id))) {
      if (lane != null && lane.onLaneThread()) {
        lane.wrote(link);
      } else {
        link.flush();
      }
    }
    if (lane != null && lane.onLaneThread()) {
      lane.releases.parent(budget); // at the end of the lane's pass, before its receipts
    } else {
      budget.releaseParent();
    }
  }

  /** The slices waiting for the source's GRANT or ACK. */
  SliceLedger ledger() {
    return ledger;
  }

  /** A QP of this endpoint erred (on its lane): {@link #qpFailed(RcQp, String, ErrorKind)}. */
  @Override
  public void qpFailed(RcQp qp, String why) {
    qpFailed(qp, why, ErrorKind.UNAVAILABLE);
  }

  /**
   * A QP of this endpoint erred (on its lane): that QP alone is retired (to ERR, flushed, destroyed
   * on its lane; what was asked on it and not granted fails unsent), what it held failing with
   * {@code kind} (PEER_LOST when its connection failed on the wire); the endpoint keeps its other
   * QPs, and the slot is repaired when a slice is admitted to it again.
   */
  void qpFailed(RcQp qp, String why, ErrorKind kind) {
    if (!gate.active() || qp.life.retiringOrLater()) {
      return;
    }
    String reason = "QP " + qp.qp.qpNum() + " on " + qp.rail.device + " failed: " + why;
    if (!qp.life.retire(reason, kind)) {
      return;
    }
    counters.qpsFailed.increment();
    qp.lane.closer.close(List.of(qp), reason, () -> ledger.failAsked(qp.lane, List.of(qp), reason));
  }

  /**
   * The peer was lost (its control connection ended or broke, or it broke the protocol): the gate
   * closes PEER_LOST and the channel closes; every task it fails from now on, in flight or never
   * sent, fails PEER_LOST.
   */
  void peerLost(String reason) {
    if (gate.close(ChannelGate.Why.PEER_LOST, reason)) {
      close();
    }
  }

  /**
   * Closes the channel once its gate closed or was fenced: tasks waiting for charges are refused;
   * every QP moves to ERR on its lane and is destroyed once its work requests were flushed; then
   * what was asked and never granted fails unsent, and the link closes. Every failure carries the
   * gate's kind. {@link #closed()} completes when every lane has done its part. Idempotent: QPs
   * already closing or destroyed are skipped, so a local close racing a lost peer changes nothing.
   */
  void close() {
    String reason = gate.refusal();
    LOG.info("RDMA endpoint to {} closing: {}", peer, reason);
    budget.cancelWaiting(reason);
    qps.closeAll(
        reason,
        (lane, mine) -> {
          ledger.failAsked(lane, mine, reason);
          ledger.failUnacked(lane, mine, reason);
        },
        kept -> {
          link.close();
          closed.complete(kept);
        });
  }

  /** The channel's QP array. */
  ChannelQps qps() {
    return qps;
  }

  /** The repairs of this channel's failed QPs. */
  QpRepairer repairer() {
    return repairer;
  }

  /** Completes when the endpoint has closed: with the QPs that could not be destroyed, if any. */
  CompletableFuture<List<String>> closed() {
    return closed;
  }
}
