package io.orbite.transport.rdma;

import io.orbite.engine.spi.Lifecycle;

/**
 * Where one source-side grant stands: a requester task's {@link Reservation} and, once promoted,
 * its {@link GrantOwner} (whose behaviours are these states: {@code active}, {@code draining},
 * {@code quarantined}). One value, moved forward by compare-and-set ({@link Lifecycle}), so the
 * session's reader, the lanes and the owner's tick race without undoing each other: promotion (the
 * loan handed to an owner actor) and a record's end are one word, and exactly one of them happens.
 *
 * <pre>
 *   REFUSED ───────────────────────────────────────────────────────► ENDED_AS_RECORD
 *   RESERVED ──► SETTLED ──────────────────────────────────────────► ENDED_AS_RECORD
 *      │            │ (promoted)
 *      │            ▼
 *      ├──► PROMOTED ──► PROMOTED_SETTLED ─────────────────────────► ENDED
 *      │        │
 *      ├────────┴──► DRAINING ─────────────────────────────────────► ENDED
 *      │        │        └──────────────────► KEPT_DONE
 *      └────────┴──► KEPT ──────────────────► KEPT_DONE
 *   (RESERVED ─DONE, no window open─► ENDED_AS_RECORD; PROMOTED ─the same─► ENDED)
 * </pre>
 *
 * <p>{@code REFUSED}: the reservation was refused (authority or a budget); it holds nothing and
 * answers its slices' grant requests with its reason until DONE. {@code RESERVED}: a record holding
 * the loan, one {@code rdma.maxGrants} slot and its bytes; windows open and close in it. {@code
 * SETTLED}: every declared slice's window was released before DONE: its slot and bytes went back;
 * it waits for DONE. {@code PROMOTED} and {@code PROMOTED_SETTLED}: the same, its loan held by its
 * grant's owner actor (held for a second at its session owner's tick). {@code DRAINING}: DONE came
 * while a window was open (a promotion). {@code KEPT}: a window could not be released (its
 * deallocation or its QP's destroy failed): the slot, the unreleased bytes and the loan are kept
 * for good (a promotion; spec 001). {@code KEPT_DONE}: kept, and DONE came. {@code
 * ENDED_AS_RECORD}: DONE came and no window is open, before any promotion: the thread that ended it
 * gave the loan back. {@code ENDED}: the same after a promotion: its owner gives the loan back.
 */
enum GrantState implements Lifecycle.Stage<GrantState> {
  REFUSED,
  RESERVED,
  SETTLED,
  PROMOTED,
  PROMOTED_SETTLED,
  DRAINING,
  KEPT,
  KEPT_DONE,
  ENDED_AS_RECORD,
  ENDED;

  @Override
  public boolean terminal() {
    return this == KEPT_DONE || this == ENDED_AS_RECORD || this == ENDED;
  }

  @Override
  public boolean mayMoveTo(GrantState next) {
    return switch (this) {
      case REFUSED -> next == ENDED_AS_RECORD;
      case RESERVED ->
          next == SETTLED
              || next == PROMOTED
              || next == DRAINING
              || next == KEPT
              || next == ENDED_AS_RECORD;
      case SETTLED -> next == PROMOTED_SETTLED || next == ENDED_AS_RECORD;
      case PROMOTED ->
          next == PROMOTED_SETTLED || next == DRAINING || next == KEPT || next == ENDED;
      case PROMOTED_SETTLED -> next == ENDED;
      case DRAINING -> next == KEPT_DONE || next == ENDED;
      case KEPT -> next == KEPT_DONE;
      case KEPT_DONE, ENDED_AS_RECORD, ENDED -> false;
    };
  }

  /** Whether its loan belongs to a grant owner actor (it was promoted, or must be). */
  boolean promoted() {
    return switch (this) {
      case PROMOTED, PROMOTED_SETTLED, DRAINING, KEPT, KEPT_DONE, ENDED -> true;
      default -> false;
    };
  }

  /** Whether the requester's DONE came (or, refused, it ended). */
  boolean doneCame() {
    return switch (this) {
      case DRAINING, KEPT_DONE, ENDED_AS_RECORD, ENDED -> true;
      default -> false;
    };
  }

  /** Whether a window of it could not be released: it never ends. */
  boolean kept() {
    return this == KEPT || this == KEPT_DONE;
  }
}
