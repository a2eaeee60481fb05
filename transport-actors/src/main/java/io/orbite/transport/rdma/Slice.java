package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.TaskWork;

/**
 * One slice of a requester task on one QP (C15): asked for (its grant requested), granted, posted
 * (payload WR then the completion SEND), acknowledged by the source (ACK: its receipt), then
 * finished with exactly one receipt. It succeeds only when its payload WR and its completion SEND
 * completed and the ACK came, in any order. Confined to the lane of its QP once queued there,
 * except {@link #id} lookups by the control reader.
 */
final class Slice {
  /**
   * The task a slice belongs to, as the source reserved it (RESERVE): when the last of its slices
   * ended, the requester says DONE so that the source can end the reservation.
   */
  static final class Parent {
    final long id;
    private final java.util.concurrent.atomic.AtomicInteger left;

    Parent(long id, int slices) {
      this.id = id;
      this.left = new java.util.concurrent.atomic.AtomicInteger(slices);
    }

    /** One slice of it ended; true for the last one. */
    boolean sliceEnded() {
      return left.decrementAndGet() == 0;
    }
  }

  enum Stage {
    QUEUED,
    ASKED,
    POSTED,
    FINISHED
  }

  final TaskWork work;
  final Parent parent;
  final long offsetInTask;
  final long length;

  /** The QP it runs on; set again (before it is queued) when it waited for its QP's repair. */
  RcQp qp;

  final RailHealth.Ticket ticket;
  final RdmaChannel channel;
  long id;
  Stage stage = Stage.QUEUED;

  /** Set while the slice waits for its QP's repair (it is not on any lane yet). */
  volatile boolean awaitsRepair;

  /** Whether the payload WR was posted: a WRITE is then UNKNOWN, never NONE, when it fails. */
  boolean payloadPosted;

  /** Whether the payload WR completed successfully. */
  boolean payloadDone;

  /** Whether the payload WR's completion came (any status) or it was abandoned. */
  boolean payloadCompleted;

  /** A failure seen on the completion SEND while the payload WR was still out; delivered after. */
  ErrorKind deferredKind;

  String deferredDetail;

  /** When its payload WR was posted ({@link System#nanoTime()}). */
  long postedAt;

  /** Whether the completion SEND naming it was posted behind the payload. */
  boolean sendPosted;

  /**
   * Whether its payload was posted and the completion SEND naming it waits for the end of the lane
   * pass ({@link RcQp#awaitingSend}): its slot is held until that SEND comes back.
   */
  boolean sendPending;

  /** Whether the completion SEND completed successfully. */
  boolean sendDone;

  /** Whether the source's ACK came (its exact receive landed and the window was released). */
  boolean acked;

  /** Whether it still holds one of its QP's slots (from its grant request until no WR is left). */
  private boolean holdsSlot;

  /**
   * Whether it still holds its share of the task's {@code rdma.maxDirectBytes} charge: from its
   * task's dispatch until its drain (its receipt). A slice whose receipt never comes (its QP could
   * not be destroyed) keeps it.
   */
  private boolean holdsDirect = true;

  Slice(
      TaskWork work,
      Parent parent,
      long offsetInTask,
      long length,
      RcQp qp,
      RailHealth.Ticket ticket,
      RdmaChannel channel) {
    this.work = work;
    this.parent = parent;
    this.offsetInTask = offsetInTask;
    this.length = length;
    this.qp = qp;
    this.ticket = ticket;
    this.channel = channel;
  }

  boolean finished() {
    return stage == Stage.FINISHED;
  }

  /** Takes a slot of its QP, as its grant is asked for. */
  void takeSlot() {
    holdsSlot = true;
    qp.slicesInFlight++;
  }

  /**
   * Gives its QP's slot back once none of its WRs is left on the send queue (its completion SEND
   * came back, or was abandoned; or nothing was posted), so a QP's debt never passes two WRs per
   * slot. Idempotent.
   */
  void releaseSlot() {
    if (holdsSlot) {
      holdsSlot = false;
      qp.slicesInFlight--;
    }
  }

  /**
   * Returns its share of the direct-bytes charge, at its drain: on its lane's thread at the end of
   * the lane's pass, before the pass's receipts are delivered ({@link LaneReleases}), else at once.
   * Idempotent; {@link #succeed} and {@link #fail} call it, and so does every path that ends the
   * slice with a receipt of its own.
   */
  void releaseDirect() {
    if (holdsDirect) {
      holdsDirect = false;
      CqLane lane = qp.lane;
      if (lane.onLaneThread()) {
        lane.releases.bytes(channel.budget(), length); // at the end of the pass, before receipts
      } else {
        channel.budget().releaseBytes(length);
      }
    }
  }

  /** Confirms the slice once its payload and SEND completed and the source's ACK came. */
  void succeedIfDone(ReceiptBatcher receipts) {
    if (payloadDone && sendDone && acked) {
      succeed(receipts);
    }
  }

  /** Confirms the slice: {@code length} bytes moved. */
  private void succeed(ReceiptBatcher receipts) {
    if (finished()) {
      return;
    }
    stage = Stage.FINISHED;
    channel.ended(this);
    channel.health().succeeded(ticket);
    channel.selector().finished(qp.rail.index, length, true, true, postedAt, System.nanoTime());
    channel.counted(this);
    releaseDirect(); // last: it may start a waiting task on this thread
    receipts.ok(
        work.sink(),
        work.taskIndex(),
        length,
        work.op() == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE);
  }

  /**
   * Fails the slice; a WRITE whose payload was posted reports UNKNOWN (C6: never replayed).
   *
   * @param railFault whether the failure counts against the rail pair (a wire or QP error, not a
   *     refusal by the source)
   */
  void fail(ReceiptBatcher receipts, ErrorKind kind, String detail, boolean railFault) {
    if (finished()) {
      return;
    }
    stage = Stage.FINISHED;
    channel.ended(this);
    if (!payloadPosted) {
      releaseSlot(); // nothing of it is on the send queue
    }
    channel.selector().finished(qp.rail.index, length, false, payloadPosted, postedAt, 0);
    if (railFault) {
      channel.health().failed(ticket);
    } else {
      channel.health().cancelled(ticket);
    }
    releaseDirect(); // after the circuit and selector: it may start a waiting task on this thread
    RemoteEffect effect =
        work.op() == Op.WRITE && payloadPosted ? RemoteEffect.UNKNOWN : RemoteEffect.NONE;
    receipts.failed(work.sink(), work.taskIndex(), kind, effect, detail);
  }
}
