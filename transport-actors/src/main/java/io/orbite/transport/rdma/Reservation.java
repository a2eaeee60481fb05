package io.orbite.transport.rdma;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Registration;

/**
 * The source side's reservation of one requester task (a parent) before any of its slices asks a
 * grant (RESERVE): its whole range and direction checked once and one loan taken on its
 * registration, so that no slice of it can be refused by an unregister or an epoch change after
 * another moved bytes. Each slice's window is bound inside it, and charges one {@code
 * rdma.maxGrants} and its own length in {@code rdma.maxDirectBytes} while it is held. It ends when
 * the requester said DONE (every slice of the parent ended there) and every window of it was
 * released: then the loan goes back. A window that could not be released keeps the reservation, and
 * so its loan, for good (spec 001: never retried).
 *
 * <p>A refused reservation holds nothing; it answers each of its slices' grant requests with its
 * reason until DONE. Guarded by itself: the session's reader and the lanes of its windows touch it.
 */
final class Reservation {
  final long id;
  final Op op;
  final long offset;
  final long length;
  final int slices;

  /** The loan on the registration, for every window of the parent; null when refused. */
  final Registration registration;

  /** The refusal's status code (0: reserved) and reason. */
  final int refusal;

  final String refusalDetail;

  private int asked;
  private int windows;
  private boolean done;
  private boolean kept;
  private boolean ended;

  private Reservation(
      long id,
      Op op,
      long offset,
      long length,
      int slices,
      Registration registration,
      int refusal,
      String refusalDetail) {
    this.id = id;
    this.op = op;
    this.offset = offset;
    this.length = length;
    this.slices = slices;
    this.registration = registration;
    this.refusal = refusal;
    this.refusalDetail = refusalDetail;
  }

  static Reservation reserved(RdmaWire.Reserve r, Op op, Registration loan) {
    return new Reservation(r.parent(), op, r.offset(), r.length(), r.slices(), loan, 0, "");
  }

  static Reservation refused(RdmaWire.Reserve r, Op op, int code, String detail) {
    return new Reservation(r.parent(), op, r.offset(), r.length(), r.slices(), null, code, detail);
  }

  boolean isRefused() {
    return refusal != 0;
  }

  /**
   * Why a grant request of this parent for {@code [off, off + len)} in {@code op} breaks the
   * protocol (outside the reserved range or direction, more slices than declared, or after DONE),
   * or null; a request that does not counts as asked.
   */
  synchronized String admit(Op asking, long off, long len) {
    if (done) {
      return "a grant request for parent " + id + " after its DONE";
    }
    if (asking != op) {
      return "a " + asking + " grant request for parent " + id + ", reserved for " + op;
    }
    if (off < offset || len > length || off - offset > length - len) {
      return "a grant request for ["
          + off
          + ", +"
          + len
          + ") outside parent "
          + id
          + "'s reserved ["
          + offset
          + ", +"
          + length
          + ")";
    }
    if (++asked > slices) {
      return "grant request " + asked + " for parent " + id + ", which reserved " + slices;
    }
    return null;
  }

  /** A window of this parent is being bound (it holds the parent until it is released). */
  synchronized void windowOpened() {
    windows++;
  }

  /**
   * A window of this parent was released ({@code released}), or could not be (the parent is then
   * kept for good).
   *
   * @return whether the parent has just ended (DONE came and no window is left)
   */
  synchronized boolean windowClosed(boolean released) {
    if (!released) {
      kept = true;
      return false; // its window stays counted: the parent never ends
    }
    windows--;
    return endIfDue();
  }

  /**
   * The requester ended every slice of the parent.
   *
   * @return whether the parent has just ended (no window is left)
   */
  synchronized boolean done() {
    done = true;
    return endIfDue();
  }

  private boolean endIfDue() {
    if (ended || !done || windows > 0 || kept) {
      return false;
    }
    ended = true;
    return true;
  }

  synchronized boolean kept() {
    return kept;
  }

  synchronized int windows() {
    return windows;
  }
}
