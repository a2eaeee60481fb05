package io.orbite.transport.rdma;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.Verbs;

/**
 * One exact-range authority on the source side: a fresh type-2 memory window bound to the range one
 * slice asked for, in its direction only, on the source QP connected to the requester's, inside its
 * parent task's reservation. Released when the requester's completion SEND naming it lands in one
 * of its QP's posted receives (the payload completed), or when its QP is retired or its session
 * closes: the window is deallocated (after its QP was destroyed, so nothing can use it meanwhile);
 * its parent's {@link Reservation} holds the loan and the charges, and ends once its last window is
 * released. Confined to the lane of its QP.
 */
final class Grant {
  final long id;
  final Reservation parent;
  final RcQp qp;
  final Op op;
  final Registration registration;
  final long offset;
  final long length;
  Verbs.Mw mw;
  int rkey;
  boolean bound;
  boolean released;

  /**
   * Whether it counts among its lane's open windows ({@link SourceWindows#open}) until released.
   */
  boolean countedOpen;

  Grant(long id, Reservation parent, RcQp qp, long offset, long length) {
    this.id = id;
    this.parent = parent;
    this.qp = qp;
    this.op = parent.op;
    this.registration = parent.registration;
    this.offset = offset;
    this.length = length;
  }
}
