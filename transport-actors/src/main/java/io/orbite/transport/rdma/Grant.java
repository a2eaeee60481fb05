package io.orbite.transport.rdma;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.Verbs;

/**
 * One exact-range authority on the source side: a fresh type-2 memory window bound to the range one
 * slice asked for, in its direction only, on the source QP connected to the requester's; with the
 * loan on the registration it names. Released when the requester's completion SEND naming it lands
 * in one of its QP's posted receives (the payload completed), or when its QP is retired or its
 * session closes: the window is deallocated (after its QP was destroyed, so nothing can use it
 * meanwhile) and the loan returned. Confined to the lane of its QP.
 */
final class Grant {
  final long id;
  final RcQp qp;
  final Op op;
  final Registration registration;
  final long offset;
  final long length;
  Verbs.Mw mw;
  int rkey;
  boolean bound;
  boolean released;

  Grant(long id, RcQp qp, Op op, Registration registration, long offset, long length) {
    this.id = id;
    this.qp = qp;
    this.op = op;
    this.registration = registration;
    this.offset = offset;
    this.length = length;
  }
}
