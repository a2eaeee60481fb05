package io.orbite.transport.rdma;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Lifecycle;
import io.orbite.engine.spi.Registration;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The source side's reservation of one requester task (a parent) before any of its slices asks a
 * grant (RESERVE): its whole range and direction checked once and one loan taken on its
 * registration, so that no slice of it can be refused by an unregister or an epoch change after
 * another moved bytes. A reserved parent holds one {@code rdma.maxGrants} slot and its whole length
 * in {@code rdma.maxDirectBytes} (spec 002: "whole-parent grant reservations"), taken at RESERVE
 * before any window exists, all or nothing. Each slice's window is bound inside it; a window's
 * release gives its own length back, and once every declared slice's window was released (or DONE
 * came with none open) the slot and what is left of the bytes go back too. It is due to end when
 * the requester said DONE (every slice of the parent ended there) and every window of it was
 * released; a window that could not be released keeps it, with its slot and the bytes not given
 * back, for good (spec 001: never retried).
 *
 * <p>This record counts the windows where they are opened and released (the session's reader and
 * the lanes: the per-slice path). Most tasks end within milliseconds, and such a reservation ends
 * as a record: the thread that ends it gives the loan back. One that lives on is <em>promoted</em>:
 * once it has been held for {@link SourceSessionOwner#PROMOTE_AFTER} at its session owner's tick,
 * or DONE came while a window of it is open, or a window of it could not be released, its {@link
 * GrantOwner} actor owns the loan from then on, is told when the reservation ends (and then gives
 * the loan back) or is kept (and then keeps it, quarantined). Exactly one of the two happens: its
 * state ({@link GrantState}) is one word, moved forward by compare-and-set, and a promotion and a
 * record's end race on it. A refused reservation holds nothing and is never promoted; it answers
 * each of its slices' grant requests with its reason until DONE. Its counts are guarded by itself;
 * its state is read by any thread.
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

  /** Where it stands (any thread reads it; the moves below are its only writers). */
  private final Lifecycle<GrantState> state;

  /** When it was reserved ({@link System#nanoTime}). */
  final long reservedAtNanos = System.nanoTime();

  /** Its grant's owner, once the session's owner spawned it after a promotion. */
  private volatile ActorRef<GrantOwner.Command> owner;

  /** What the caller must give back after a change: the slot, bytes, and whether it ended. */
  record Settled(boolean slot, long bytes, boolean ended) {
    static final Settled NOTHING = new Settled(false, 0, false);
  }

  /** Grant requests admitted (counted under the lock). */
  private int asked;

  /** Its {@code rdma.maxDirectBytes} charge not given back yet. */
  private long bytesHeld;

  /** Windows open now (admitted and not released). */
  private int windows;

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
    this.state = new Lifecycle<>(refusal == 0 ? GrantState.RESERVED : GrantState.REFUSED);
    this.bytesHeld = refusal == 0 ? length : 0;
  }

  static Reservation reserved(RdmaWire.Reserve r, Op op, Registration loan) {
    return new Reservation(r.parent(), op, r.offset(), r.length(), r.slices(), loan, 0, "");
  }

  static Reservation refused(RdmaWire.Reserve r, Op op, int code, String detail) {
    return new Reservation(r.parent(), op, r.offset(), r.length(), r.slices(), null, code, detail);
  }

  /** Where it stands now. */
  GrantState state() {
    return state.state();
  }

  /**
   * Hands the loan to a grant owner actor, unless the reservation already ended as a record.
   * Lock-free: the session owner's tick races the lanes and the reader on the state word alone.
   *
   * @return whether it is promoted now (by this call or an earlier move)
   */
  boolean promote() {
    while (true) {
      GrantState now = state.state();
      GrantState next =
          switch (now) {
            case RESERVED -> GrantState.PROMOTED;
            case SETTLED -> GrantState.PROMOTED_SETTLED;
            default -> null;
          };
      if (next == null) {
        return now.promoted();
      }
      if (state.moveFrom(now, next)) {
        return true;
      }
    }
  }

  /**
   * Ends the reservation as a record (called once it ended), unless it was promoted.
   *
   * @return true when the caller now gives the loan back itself; false when the grant's owner holds
   *     the loan and must be told
   */
  boolean endAsRecord() {
    while (true) {
      GrantState now = state.state();
      if (now == GrantState.ENDED_AS_RECORD) {
        return true;
      }
      if (now != GrantState.RESERVED && now != GrantState.SETTLED && now != GrantState.REFUSED) {
        return false;
      }
      if (state.moveFrom(now, GrantState.ENDED_AS_RECORD)) {
        return true;
      }
    }
  }

  /** Names the grant's owner (the session's owner, as it spawns it). */
  void owner(ActorRef<GrantOwner.Command> grant) {
    owner = grant;
  }

  /** The grant's owner, or null before it was spawned. */
  ActorRef<GrantOwner.Command> owner() {
    return owner;
  }

  boolean isRefused() {
    return refusal != 0;
  }

  /**
   * Why a grant request of this parent for {@code [off, off + len)} in {@code op} breaks the
   * protocol (outside the reserved range or direction, more slices than declared, or after DONE),
   * or null; a request that does not counts as asked and, for a reserved parent, as a window opened
   * (in the same step, so the parent cannot settle between the two).
   */
  synchronized String admit(Op asking, long off, long len) {
    if (state.state().doneCame()) {
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
    if (!isRefused()) {
      windows++;
    }
    return null;
  }

  /**
   * A window of this parent was released ({@code released}: its {@code bytes} go back), or could
   * not be (the parent is then kept for good, with what it holds: a promotion).
   */
  synchronized Settled windowClosed(boolean released, long bytes) {
    if (!released) {
      // Its window stays counted: the parent never ends.
      while (true) {
        GrantState now = state.state();
        GrantState next =
            switch (now) {
              case RESERVED, PROMOTED -> GrantState.KEPT;
              case DRAINING -> GrantState.KEPT_DONE;
              default -> null; // kept already
            };
        if (next == null || state.moveFrom(now, next)) {
          return Settled.NOTHING;
        }
      }
    }
    windows--;
    bytesHeld -= bytes;
    return settle(bytes, false);
  }

  /** The requester ended every slice of the parent: what goes back now, and whether it ended. */
  synchronized Settled done() {
    return settle(0, true);
  }

  /**
   * Gives the slot and the remaining bytes back once no window is open and none can be asked any
   * more (every declared slice asked, or DONE), unless kept; ends the parent once DONE came too. A
   * promotion racing this move (the owner's tick) only changes which state it lands in.
   */
  private Settled settle(long bytes, boolean doneNow) {
    while (true) {
      GrantState now = state.state();
      GrantState next = null;
      boolean slot = false;
      boolean ended = false;
      switch (now) {
        case REFUSED -> {
          if (doneNow) {
            next = GrantState.ENDED_AS_RECORD;
            ended = true;
          }
        }
        case RESERVED, PROMOTED -> {
          boolean record = now == GrantState.RESERVED;
          if (doneNow && windows == 0) {
            next = record ? GrantState.ENDED_AS_RECORD : GrantState.ENDED;
            slot = true;
            ended = true;
          } else if (doneNow) {
            next = GrantState.DRAINING;
          } else if (windows == 0 && asked >= slices) {
            next = record ? GrantState.SETTLED : GrantState.PROMOTED_SETTLED;
            slot = true;
          }
        }
        case SETTLED, PROMOTED_SETTLED -> {
          if (doneNow) {
            next = now == GrantState.SETTLED ? GrantState.ENDED_AS_RECORD : GrantState.ENDED;
            ended = true;
          }
        }
        case DRAINING -> {
          if (windows == 0) {
            next = GrantState.ENDED;
            slot = true;
            ended = true;
          }
        }
        case KEPT -> {
          if (doneNow) {
            next = GrantState.KEPT_DONE;
          }
        }
        default -> {}
      }
      if (next != null && !state.moveFrom(now, next)) {
        continue; // promoted meanwhile: settle from there
      }
      long back = bytes;
      if (slot) {
        back += bytesHeld;
        bytesHeld = 0;
      }
      return slot || back > 0 || ended ? new Settled(slot, back, ended) : Settled.NOTHING;
    }
  }

  boolean kept() {
    return state.state().kept();
  }

  synchronized int windows() {
    return windows;
  }
}
