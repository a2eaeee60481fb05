package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.slicing.SlicePlan;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import java.util.concurrent.TimeUnit;

/**
 * What one RDMA channel's tasks are charged before any of their slices is sent, as one budget: the
 * task's bytes in this engine's {@code rdma.maxDirectBytes}, a unit of its peer's published {@code
 * rdma.maxGrants} (the parents this channel holds reserved there) and a unit of this engine's
 * requester {@code rdma.maxGrants}. A task takes the three in that order, each now or, in arrival
 * order, once an earlier task gave some back ({@link DirectBytes#chargeOrWait}), and is then
 * started ({@link Start}); the common case charges without making the waiters' closures. A task
 * that waited past its deadline, or whose channel closed meanwhile, fails unsent with what it held
 * given back. Each slice gives its share of the bytes back at its drain ({@link #releaseBytes}),
 * and the parent's two units go back together after its last slice ({@link #releaseParent}).
 */
final class ChannelBudget {
  /** Starts a task that holds all three charges. */
  @FunctionalInterface
  interface Start {
    void start(TaskWork work, SlicePlan plan, RailPolicy policy);
  }

  private final SegmentDescriptor peer;
  private final ChannelGate gate;
  private final RdmaCounters counters;

  /** {@code rdma.maxDirectBytes}, shared by this engine's requester slices and source windows. */
  private final DirectBytes direct;

  /** This engine's requester-side {@code rdma.maxGrants}: parents reserved at sources at once. */
  private final DirectBytes units;

  /**
   * The parents this channel holds reserved at its peer, at most the peer's published {@code
   * rdma.maxGrants}: a task beyond it waits here rather than being refused there.
   */
  private final DirectBytes peerUnits;

  /** What the peer admits as a source, from its RAILS: the largest task, the parents at once. */
  private final RdmaWire.Limits peerLimits;

  private final Start start;

  ChannelBudget(
      SegmentDescriptor peer,
      ChannelGate gate,
      RdmaCounters counters,
      DirectBytes direct,
      DirectBytes units,
      RdmaWire.Limits peerLimits,
      Start start) {
    this.peer = peer;
    this.gate = gate;
    this.counters = counters;
    this.direct = direct;
    this.units = units;
    this.peerLimits = peerLimits;
    this.peerUnits =
        new DirectBytes(
            "rdma.maxGrants of " + peer + " (its published limit)", peerLimits.maxParents());
    this.start = start;
  }

  /**
   * Refuses {@code work} when {@code plan} makes a slice longer than one work request carries (2
   * GiB - 1), before anything is charged or sent: one receipt, {@code INVALID_ARGUMENT}.
   *
   * @return the receipts promised: 1, or 0 when every slice fits
   */
  static int refuseHugeSlices(TaskWork work, SlicePlan plan) {
    long length = work.lengthBytes();
    if (plan.blockBytes() + (length - plan.blockBytes() * plan.count()) <= Integer.MAX_VALUE) {
      return 0;
    }
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

  /**
   * Refuses {@code work} when it is longer than the whole budget, or than its peer reserves at
   * most, before anything is charged or sent: one receipt, {@code RESOURCE_EXHAUSTED} naming {@code
   * rdma.maxDirectBytes}.
   *
   * @return the receipts promised: 1, or 0 when the task may be charged
   */
  int refuseOversized(TaskWork work) {
    long length = work.lengthBytes();
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
    return 0;
  }

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
   * Charges {@code work}'s bytes, then its two units, and starts it with all three; or queues it in
   * order behind the tasks waiting for any of them. All of the task's slices are charged at once,
   * or none: a task that does not fit now starts on the thread whose drain makes room.
   */
  void charge(TaskWork work, SlicePlan plan, RailPolicy policy) {
    long length = work.lengthBytes();
    if (direct.tryCharge(length)
        || direct.chargeOrWait(
            length,
            this,
            () -> chargePeerUnit(work, plan, policy),
            why -> refuseWaiting(work, plan.count(), why, "rdma.maxDirectBytes"),
            work.deadlineNanos(),
            () -> timedOut(work, plan.count(), "its direct bytes"))) {
      chargePeerUnit(work, plan, policy);
    } else {
      counters.tasksAwaitingDirectBytes.increment();
    }
  }

  /** A task charged its bytes: a unit of its peer's published {@code rdma.maxGrants}. */
  private void chargePeerUnit(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (peerUnits.tryCharge(1)
        || peerUnits.chargeOrWait(
            1,
            this,
            () -> chargeUnit(work, plan, policy),
            why -> {
              direct.release(work.lengthBytes());
              refuseWaiting(work, plan.count(), why, "its peer's rdma.maxGrants");
            },
            work.deadlineNanos(),
            () -> {
              direct.release(work.lengthBytes());
              timedOut(work, plan.count(), "a unit of its peer's rdma.maxGrants");
            })) {
      chargeUnit(work, plan, policy);
    } else {
      counters.tasksAwaitingGrants.increment();
    }
  }

  /** A task charged its bytes and its peer's unit: one unit of this engine's. */
  private void chargeUnit(TaskWork work, SlicePlan plan, RailPolicy policy) {
    if (units.tryCharge(1)
        || units.chargeOrWait(
            1,
            this,
            () -> start.start(work, plan, policy),
            why -> {
              direct.release(work.lengthBytes());
              peerUnits.release(1);
              refuseWaiting(work, plan.count(), why, "rdma.maxGrants");
            },
            work.deadlineNanos(),
            () -> {
              direct.release(work.lengthBytes());
              peerUnits.release(1);
              timedOut(work, plan.count(), "a unit of this engine's rdma.maxGrants");
            })) {
      start.start(work, plan, policy);
    } else {
      counters.tasksAwaitingGrants.increment();
    }
  }

  /**
   * Gives back everything a started task held when it will not be sent after all (its deadline
   * passed, or its channel closed, while it waited): its bytes and both units.
   */
  void releaseTask(long bytes) {
    direct.release(bytes);
    units.release(1);
    peerUnits.release(1);
  }

  /** Gives back a slice's share of its task's bytes, at its drain (its receipt). */
  void releaseBytes(long bytes) {
    direct.release(bytes);
  }

  /**
   * The last slice of a parent ended: its two units go back, so the next waiting task may reserve
   * (the source gave its parent's slot back when its last window was released, before the last
   * ACK).
   */
  void releaseParent() {
    releaseParents(1);
  }

  /** {@code n} parents ended: their units go back at once ({@link LaneReleases}). */
  void releaseParents(int n) {
    units.release(n);
    peerUnits.release(n);
  }

  /**
   * Fails a task whose deadline passed while it waited for {@code waitedFor}, its charges already
   * returned: one {@code TIMEOUT} receipt per planned slice, nothing sent.
   */
  void timedOut(TaskWork work, int receipts, String waitedFor) {
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
   * Fails a task that waited for its charges ({@code waitedFor}) and will not start: one receipt
   * per planned slice, as its dispatch promised, nothing sent and nothing charged; the kind is its
   * channel's (C18).
   */
  void refuseWaiting(TaskWork work, int receipts, String why, String waitedFor) {
    ErrorKind kind = gate.refusalKind();
    failUnsent(
        work,
        receipts,
        kind != null ? kind : ErrorKind.PEER_LOST,
        peer + ": " + why + " while the task waited for " + waitedFor + " (never sent)");
  }

  /** One failure receipt per planned slice of a task of which nothing was sent: effect NONE. */
  static void failUnsent(TaskWork work, int receipts, ErrorKind kind, String detail) {
    for (int i = 0; i < receipts; i++) {
      work.sink().deliver(Receipt.failed(work.taskIndex(), kind, RemoteEffect.NONE, detail));
    }
  }

  /**
   * Tasks of this channel waiting for their charges whose deadline passed fail {@code TIMEOUT} now,
   * on the calling thread (their charges returned, nothing sent; what they held back may start on
   * it and write its RESERVE): the endpoint has this run on the blocking-I/O executor at each of
   * its ticks when {@link #anyWaiting}.
   */
  void expireWaiting() {
    long now = System.nanoTime();
    direct.expire(this, now);
    peerUnits.expire(this, now);
    units.expire(this, now);
  }

  /** Whether any task waits for its charges (of any channel: the engine's budgets are shared). */
  boolean anyWaiting() {
    return direct.waitingBytes() > 0 || peerUnits.waitingBytes() > 0 || units.waitingBytes() > 0;
  }

  /** Refuses every task of this channel waiting for a charge, with {@code why}: none is charged. */
  void cancelWaiting(String why) {
    direct.cancel(this, why); // tasks waiting for their direct bytes: never sent
    peerUnits.cancel(this, why); // and those waiting for a unit (their bytes go back)
    units.cancel(this, why);
  }

  /** What the peer admits as a source (its RAILS limits). */
  RdmaWire.Limits peerLimits() {
    return peerLimits;
  }

  /** Parents this channel holds reserved at its peer now (RESERVE written, DONE not yet). */
  long peerUnitsReserved() {
    return peerUnits.usedBytes();
  }
}
