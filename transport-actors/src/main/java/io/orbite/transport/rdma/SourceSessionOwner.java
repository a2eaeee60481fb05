package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import java.time.Instant;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of one source session ({@code .../transport-rdma/source-session-<n>}, kind {@code
 * RdmaSourceSession}), child of the {@link RdmaTransport}: the parent of the session's grants'
 * owners ({@link GrantOwner}, one per promoted reservation). The session's reader thread and its
 * lanes ({@link SourceSession}) move the bytes and bind and release the windows. A reservation held
 * for {@link #PROMOTE_AFTER} at this actor's tick (every {@link RdmaTransport#VIEW_REFRESH}) is
 * promoted here and given an owner; one that drains or keeps a window is promoted where that
 * happened and told through this actor, which spawns its owner first. Later news goes to the owner
 * straight.
 *
 * <p>States: {@link #serving} until the session's thread ended (every QP destroyed or kept, every
 * reservation whose windows were all released ended); then {@link #settling}, watching the grants
 * still alive. Once only kept grants are left, the transport is told the session ended ({@code
 * ended}): all its loans are back but those of kept grants. With no kept grant the actor stops;
 * otherwise it is {@link #keeping} them, terminal: a kept grant's owner stays below it,
 * quarantined, for the life of the process.
 *
 * <p>An unexpected exception in this actor (a bug) does not stop it, nor restart it with its
 * grants' owners lost: it turns {@link #quarantined}, terminal. It closes its session (so the
 * session's thread destroys its QPs and releases what it can, as at a peer's death), lists itself
 * once ({@code QuarantinedOwner.Kind.OWNER}, {@code RdmaSourceSession <session>}), keeps its
 * grants' owners and their loans for the life of the process, and keeps the loans of reservations
 * promoted after it failed (their news is dropped: no owner is spawned for them); once the
 * session's thread ended it tells the transport, so that closing the source side or the engine does
 * not wait on it. {@link io.orbite.engine.fault.FaultHooks#beforeOwnerMessage} (owner {@code
 * RdmaSourceSession}) lets a test throw inside it.
 *
 * <p>Its row counts the windows bound now ({@code grants}), the reservations held ({@code
 * reservations}), the grants' owners ({@code grantOwners}) and the kept ones ({@code grantsKept});
 * it is published at each change of state and at each tick, when each grant's owner re-publishes
 * its own row too.
 */
final class SourceSessionOwner {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(SourceSessionOwner.class);

  sealed interface Command {}

  /** Something happened to a promoted reservation before its owner was spawned. */
  record ToGrant(Reservation reservation, GrantOwner.Command event) implements Command {}

  /** The session's thread ended: nothing more will be opened, released or said DONE. */
  enum Ended implements Command {
    INSTANCE
  }

  private record GrantEnded(ActorRef<Void> grant) implements Command {}

  private record GrantKept(Reservation reservation) implements Command {}

  /** Re-publishes the rows: the windows bound move on the lanes, between messages. */
  private enum Refresh implements Command {
    INSTANCE
  }

  /**
   * How long a reservation is held before this actor's tick promotes it: longer than a task's
   * normal life, even behind a deep queue, so a grant's owner is spawned for the few that linger.
   */
  static final java.time.Duration PROMOTE_AFTER = java.time.Duration.ofSeconds(1);

  private final ActorContext<Command> ctx;
  private final SourceSession session;
  private final QuarantineLedger quarantine;
  private final OwnerBoard board;
  private final ActorRef<TransportCommand> transport;
  private final TransportCommand ended;
  private final ActorRef<GrantOwner.Kept> keptAdapter;
  private final Set<ActorRef<Void>> kept = new HashSet<>();

  /** The grants still alive when the thread ended; empty while serving. */
  private final Set<ActorRef<Void>> settlingOn = new HashSet<>();

  private long sequence;
  private OwnerState state = OwnerState.SERVING;

  /** Why it is quarantined; empty until then. */
  private String why = "";

  /** Whether the transport was told the session ended (once). */
  private boolean told;

  private SourceSessionOwner(
      ActorContext<Command> ctx,
      SourceSession session,
      OwnerBoard board,
      QuarantineLedger quarantine,
      ActorRef<TransportCommand> transport,
      TransportCommand ended) {
    this.ctx = ctx;
    this.session = session;
    this.board = board;
    this.quarantine = quarantine;
    this.transport = transport;
    this.ended = ended;
    this.keptAdapter =
        ctx.messageAdapter(GrantOwner.Kept.class, k -> new GrantKept(k.reservation()));
  }

  /**
   * The owner of {@code session}; {@code ended} is told to {@code transport} once every grant of
   * the session that can end has ended.
   */
  static Behavior<Command> create(
      SourceSession session,
      OwnerBoard board,
      QuarantineLedger quarantine,
      ActorRef<TransportCommand> transport,
      TransportCommand ended,
      FaultHooks hooks) {
    return Behaviors.setup(
        ctx -> {
          SourceSessionOwner o =
              new SourceSessionOwner(ctx, session, board, quarantine, transport, ended);
          o.publish();
          return Behaviors.withTimers(
              timers -> {
                timers.startTimerWithFixedDelay(Refresh.INSTANCE, RdmaTransport.VIEW_REFRESH);
                return OwnerBoard.retiredOnStop(
                    board, Behaviors.intercept(() -> o.new Guard(hooks), o.serving()));
              });
        });
  }

  /** Turns an unexpected exception in any state into {@link #quarantined}. */
  private final class Guard extends BehaviorInterceptor<Command, Command> {
    private final FaultHooks hooks;

    Guard(FaultHooks hooks) {
      super(Command.class);
      this.hooks = hooks;
    }

    @Override
    public Behavior<Command> aroundReceive(
        TypedActorContext<Command> c, Command msg, ReceiveTarget<Command> target) {
      if (state == OwnerState.QUARANTINED) {
        return target.apply(c, msg);
      }
      try {
        hooks.beforeOwnerMessage(OWNER, msg);
        return target.apply(c, msg);
      } catch (RuntimeException e) {
        return quarantine(msg, e);
      }
    }
  }

  /** The owner name {@link FaultHooks#beforeOwnerMessage} is called with. */
  static final String OWNER = "RdmaSourceSession";

  private Behavior<Command> quarantine(Command msg, RuntimeException e) {
    why = "unexpected " + e + " while it handled " + msg.getClass().getSimpleName();
    LOG.error("{}: its owner is quarantined: {}", session.name(), why, e);
    state = OwnerState.QUARANTINED;
    quarantine.enter(
        new QuarantinedOwner(
            OWNER + " " + session.name(),
            QuarantinedOwner.Kind.OWNER,
            why
                + "; its session closed, and its "
                + ctx.getChildren().size()
                + " grant owner(s) and the grants promoted after keep their loans for good"
                + " (never retried)",
            0,
            0,
            Instant.now()),
        () -> true);
    session.close("its owner failed: " + why);
    publish();
    if (session.finished() || msg == Ended.INSTANCE) {
      tellEnded();
    }
    return quarantined();
  }

  /**
   * Terminal, after an unexpected exception: its grants' owners stay below it, their loans held;
   * news of a reservation without an owner is dropped (its loan is kept); the transport is told the
   * session ended once its thread did.
   */
  private Behavior<Command> quarantined() {
    return Behaviors.receive(Command.class)
        .onMessage(
            ToGrant.class,
            m -> {
              ActorRef<GrantOwner.Command> grant = m.reservation().owner();
              if (grant != null) {
                grant.tell(m.event());
              }
              return Behaviors.same();
            })
        .onMessage(GrantKept.class, m -> Behaviors.same())
        .onMessage(GrantEnded.class, m -> Behaviors.same())
        .onMessageEquals(
            Ended.INSTANCE,
            () -> {
              tellEnded();
              return Behaviors.same();
            })
        .onMessageEquals(Refresh.INSTANCE, this::refresh)
        .build();
  }

  private void tellEnded() {
    if (!told) {
      told = true;
      transport.tell(ended);
    }
  }

  private Behavior<Command> serving() {
    return Behaviors.receive(Command.class)
        .onMessage(ToGrant.class, this::onToGrant)
        .onMessage(
            GrantKept.class,
            m -> {
              onGrantKept(m);
              return Behaviors.same();
            })
        .onMessageEquals(Ended.INSTANCE, this::onEnded)
        .onMessageEquals(
            Refresh.INSTANCE,
            () -> {
              promoteHeld();
              return refresh();
            })
        .build();
  }

  private Behavior<Command> settling() {
    return Behaviors.receive(Command.class)
        .onMessage(ToGrant.class, this::onToGrant)
        .onMessage(
            GrantEnded.class,
            m -> {
              settlingOn.remove(m.grant());
              kept.remove(m.grant());
              return settleIfDue();
            })
        .onMessage(
            GrantKept.class,
            m -> {
              onGrantKept(m);
              return settleIfDue(); // after counting it: it may have been the last one alive
            })
        // A session refused while connecting can say it ended twice.
        .onMessageEquals(Ended.INSTANCE, Behaviors::same)
        .onMessageEquals(Refresh.INSTANCE, this::refresh)
        .build();
  }

  /**
   * Terminal, once the transport was told the session ended: only kept grants are left below it,
   * and they never end (their rows and this one are still re-published at each tick).
   */
  private Behavior<Command> keeping() {
    return Behaviors.receive(Command.class)
        .onMessage(ToGrant.class, this::onToGrant)
        .onMessage(GrantEnded.class, m -> Behaviors.same()) // kept grants stop with this actor
        .onMessage(
            GrantKept.class,
            m -> {
              onGrantKept(m);
              return Behaviors.same();
            })
        .onMessageEquals(Ended.INSTANCE, Behaviors::same)
        .onMessageEquals(Refresh.INSTANCE, this::refresh)
        .build();
  }

  /**
   * While serving, at each tick: every reservation held for {@link #PROMOTE_AFTER} is promoted and
   * given an owner (after the thread ended none is left unpromoted: it ended or was promoted
   * there).
   */
  private void promoteHeld() {
    long due = System.nanoTime() - PROMOTE_AFTER.toNanos();
    for (Reservation r : session.reservationsNow()) {
      if (r.owner() == null && r.reservedAtNanos - due <= 0 && r.promote()) {
        ownerOf(r);
      }
    }
  }

  /** The tick: each grant's owner re-publishes its row, and so does this actor. */
  private Behavior<Command> refresh() {
    ctx.getChildren()
        .forEach(c -> c.<GrantOwner.Command>unsafeUpcast().tell(GrantOwner.Refresh.INSTANCE));
    publish();
    return Behaviors.same();
  }

  /** The owner of promoted reservation {@code r}, spawned now if it has none. */
  private ActorRef<GrantOwner.Command> ownerOf(Reservation r) {
    ActorRef<GrantOwner.Command> grant = r.owner();
    if (grant == null) {
      grant =
          ctx.spawn(
              GrantOwner.create(r, session.name(), board, quarantine, keptAdapter),
              "grant-" + (++sequence));
      r.owner(grant);
    }
    return grant;
  }

  private Behavior<Command> onToGrant(ToGrant m) {
    ownerOf(m.reservation()).tell(m.event());
    return Behaviors.same();
  }

  private void onGrantKept(GrantKept m) {
    kept.add(m.reservation().owner().unsafeUpcast());
    publish();
  }

  /**
   * The thread ended: every QP is destroyed or kept, and each grant was told it ended, drains or is
   * kept (the session's close ends every reservation whose windows are all released); the grants
   * still alive are watched until they stop.
   */
  private Behavior<Command> onEnded() {
    for (ActorRef<Void> child : ctx.getChildren()) {
      settlingOn.add(child);
      ctx.watchWith(child, new GrantEnded(child));
    }
    state = OwnerState.CLOSING;
    publish();
    return settleIfDue();
  }

  /**
   * Once only kept grants are left, tells the transport the session ended, and stops if none is
   * left, else keeps them.
   */
  private Behavior<Command> settleIfDue() {
    if (!kept.containsAll(settlingOn)) {
      return settling();
    }
    state = OwnerState.CLOSED;
    tellEnded();
    if (settlingOn.isEmpty()) {
      return Behaviors.stopped();
    }
    publish();
    return keeping();
  }

  private void publish() {
    OwnerState now = state == OwnerState.SERVING && session.closing() ? OwnerState.CLOSING : state;
    board.publish(
        ctx.getSelf(),
        "RdmaSourceSession",
        now,
        Map.of(
            "grants", (long) session.grantsOutstanding(),
            "reservations", (long) session.reservationsNow().size(),
            "grantOwners", (long) ctx.getChildren().size(),
            "grantsKept", (long) kept.size()),
        why.isEmpty() ? session.name() : session.name() + ": " + why);
  }
}
