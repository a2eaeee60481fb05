package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.TaskWork;

/**
 * One slice of a requester task on one QP (C15): asked for (its grant requested), granted, posted
 * (payload WR then the completion SEND), then finished with exactly one receipt. Confined to the
 * lane of its QP once queued there, except {@link #id} lookups by the control reader.
 */
final class Slice {
  enum Stage {
    QUEUED,
    ASKED,
    POSTED,
    FINISHED
  }

  final TaskWork work;
  final long offsetInTask;
  final long length;
  final RcQp qp;
  final RailHealth.Ticket ticket;
  final RdmaChannel channel;
  long id;
  Stage stage = Stage.QUEUED;

  /** Whether the payload WR was posted: a WRITE is then UNKNOWN, never NONE, when it fails. */
  boolean payloadPosted;

  /** Whether the payload WR completed successfully. */
  boolean payloadDone;

  Slice(
      TaskWork work,
      long offsetInTask,
      long length,
      RcQp qp,
      RailHealth.Ticket ticket,
      RdmaChannel channel) {
    this.work = work;
    this.offsetInTask = offsetInTask;
    this.length = length;
    this.qp = qp;
    this.ticket = ticket;
    this.channel = channel;
  }

  boolean finished() {
    return stage == Stage.FINISHED;
  }

  /** Confirms the slice: {@code length} bytes moved. */
  void succeed(ReceiptBatcher receipts) {
    if (finished()) {
      return;
    }
    stage = Stage.FINISHED;
    qp.slicesInFlight--;
    channel.health().succeeded(ticket);
    channel.counted(this);
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
    boolean asked = stage != Stage.QUEUED;
    stage = Stage.FINISHED;
    if (asked) {
      qp.slicesInFlight--;
    }
    if (railFault) {
      channel.health().failed(ticket);
    } else {
      channel.health().cancelled(ticket);
    }
    RemoteEffect effect =
        work.op() == Op.WRITE && payloadPosted ? RemoteEffect.UNKNOWN : RemoteEffect.NONE;
    receipts.failed(work.sink(), work.taskIndex(), kind, effect, detail);
  }
}
