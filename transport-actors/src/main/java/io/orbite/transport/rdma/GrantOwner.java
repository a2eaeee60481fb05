package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.view.OwnerBoard;
import java.time.Instant;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of one source-side grant ({@code .../source-session-<n>/grant-<k>}, kind {@code
 * RdmaGrant}), child of its session's {@link SourceSessionOwner}: the authority one requester task
 * reserved ({@link Reservation}: its whole range and direction checked once) and the loan on its
 * registration that every window of the task uses. The windows themselves are records on the lanes
 * of their QPs, bound, used and deallocated there, and counted in the reservation where that
 * happens (the per-slice path, which never waits for this actor).
 *
 * <p>A grant has an owner actor once its reservation is promoted: it was held for {@link
 * SourceSessionOwner#PROMOTE_AFTER} (at its session owner's tick), DONE came while a window of it
 * was open, or a window of it could not be released. A task that ends sooner, as nearly all do,
 * ends as a record and gives its loan back where it ended: it never outlived its request, so it
 * never needs an owner (an actor per such task would put a spawn and a stop on every task: with
 * one, the null-wire bench lost about a fifth of its slice rate). From its promotion on, this actor
 * holds the loan, and its states are behaviours:
 *
 * <ul>
 *   <li>{@link #active}: the requester may still ask windows of it.
 *   <li>{@link #draining}: the requester said DONE, or the session ended (its QPs destroyed, so no
 *       DONE will come), while a window of it was still being released.
 *   <li>closed: told that the reservation ended (DONE came and every window was released), it gives
 *       the loan back, withdraws its row and stops.
 *   <li>{@link #quarantined}, terminal: a window could not be deallocated, or its QP could not be
 *       destroyed, so it may still authorise remote access to the range. The loan is kept for the
 *       life of the process (the registration can never be freed), nothing is retried, and the
 *       engine's quarantine lists the grant ({@code GRANT}).
 * </ul>
 *
 * <p>Its behaviours are the promoted states of its reservation's {@link GrantState}: {@code active}
 * (PROMOTED), {@code draining} (DRAINING), {@code quarantined} (KEPT), and it stops at ENDED. It
 * hears from the session's reader thread and the lanes straight, or through its session's owner
 * until that spawned it. Its row ({@code bytes}, {@code regionId}, {@code offset} of the reserved
 * range, {@code windows} held) is published when it starts, after each message that changed it, and
 * at each of its session owner's ticks (a {@link Refresh}); it is under the engine's {@link
 * OwnerSupervision}.
 */
final class GrantOwner {
  sealed interface Command {}

  /** DONE came (or the session ended) while a window of it is still open. */
  enum Draining implements Command {
    INSTANCE
  }

  /** The reservation ended: DONE came and every window was released. */
  enum Ended implements Command {
    INSTANCE
  }

  /** A window of this grant could not be released (on its lane), naming why. */
  record WindowKept(String why) implements Command {}

  /** Re-publish the row (its windows' count moves on the lanes); its session's owner's tick. */
  enum Refresh implements Command {
    INSTANCE
  }

  /** Told to the session's owner once the grant will never end: it keeps its loan for good. */
  record Kept(Reservation reservation) {}

  private final Reservation reservation;
  private final String session;
  private final QuarantineLedger quarantine;
  private final ActorRef<Kept> parent;
  private final OwnerBoard board;
  private final String detail;
  private final String key;

  /** Why it is quarantined (data of that state); empty until then. */
  private String why = "";

  private GrantOwner(
      ActorContext<Command> ctx,
      Reservation reservation,
      String session,
      OwnerBoard board,
      QuarantineLedger quarantine,
      ActorRef<Kept> parent) {
    this.reservation = reservation;
    this.session = session;
    this.board = board;
    this.quarantine = quarantine;
    this.parent = parent;
    this.key = board.key(ctx.getSelf());
    this.detail =
        reservation.op
            + " of region "
            + reservation.registration.regionId()
            + " ["
            + reservation.offset
            + ", "
            + (reservation.offset + reservation.length)
            + ") for parent "
            + reservation.id
            + " in "
            + reservation.slices
            + " slice(s)";
  }

  /** The name the engine's supervision and quarantine list know the grant of {@code r} by. */
  static String ownerName(String session, Reservation r) {
    return "RdmaGrant " + session + " parent " + r.id;
  }

  /**
   * The grant of a reserved (not refused) task of {@code session}: from now on it holds the
   * reservation's loan, until it ends. Under {@code supervision}: an unexpected exception keeps the
   * loan, quarantined, instead of stopping the actor.
   */
  static Behavior<Command> create(
      Reservation reservation,
      String session,
      OwnerBoard board,
      QuarantineLedger quarantine,
      OwnerSupervision supervision,
      ActorRef<Kept> parent) {
    Behavior<Command> grant =
        Behaviors.setup(
            ctx -> {
              GrantOwner g = new GrantOwner(ctx, reservation, session, board, quarantine, parent);
              return OwnerBoard.reporting(board, g::report, g.active());
            });
    // Its messages expect no answer: a quarantined grant only keeps its loan.
    return supervision.supervise(
        ownerName(session, reservation), Command.class, grant, (m, why) -> {});
  }

  /** {@link GrantState#PROMOTED}: the requester may still ask windows of it. */
  private Behavior<Command> active() {
    return board.in(
        OwnerState.ACTIVE,
        Behaviors.receive(Command.class)
            .onMessageEquals(Ended.INSTANCE, this::close)
            .onMessageEquals(Draining.INSTANCE, this::draining)
            .onMessage(WindowKept.class, m -> keep(m.why()))
            .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
            .build());
  }

  /** {@link GrantState#DRAINING}: DONE came, or the session ended, while a window is open. */
  private Behavior<Command> draining() {
    return board.in(
        OwnerState.DRAINING,
        Behaviors.receive(Command.class)
            .onMessageEquals(Ended.INSTANCE, this::close)
            .onMessageEquals(Draining.INSTANCE, Behaviors::same)
            .onMessage(WindowKept.class, m -> keep(m.why()))
            .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
            .build());
  }

  /**
   * {@link GrantState#ENDED}: every window is released and no more will be asked: the loan goes
   * back, and the row is withdrawn (grants come and go too often for the retired list).
   */
  private Behavior<Command> close() {
    reservation.registration.returnLoan();
    board.withdraw(key);
    return Behaviors.stopped();
  }

  /** A window may still authorise access: keep the loan for good and list the grant. */
  private Behavior<Command> keep(String reason) {
    quarantine.enter(
        new QuarantinedOwner(
            ownerName(session, reservation),
            QuarantinedOwner.Kind.GRANT,
            reason
                + " (never retried: its loan on region "
                + reservation.registration.regionId()
                + " is kept)",
            0,
            reservation.length,
            Instant.now()),
        () -> true);
    parent.tell(new Kept(reservation));
    why = reason;
    return quarantined();
  }

  /**
   * {@link GrantState#KEPT}, terminal: the reservation never ends now, so no {@link Ended} comes.
   * One more window kept, or DONE, moves only its windows' count (its row, re-published).
   */
  private Behavior<Command> quarantined() {
    return board.in(
        OwnerState.QUARANTINED,
        Behaviors.receive(Command.class)
            .onMessage(WindowKept.class, m -> Behaviors.same())
            .onMessageEquals(Draining.INSTANCE, Behaviors::same)
            .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
            .build());
  }

  /** Its row, published after each message (its windows' count moves on the lanes). */
  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "RdmaGrant",
        Map.of(
            "bytes",
            reservation.length,
            "regionId",
            reservation.registration.regionId(),
            "offset",
            reservation.offset,
            "windows",
            (long) reservation.windows()),
        why.isEmpty() ? detail : detail + ": " + why);
  }
}
