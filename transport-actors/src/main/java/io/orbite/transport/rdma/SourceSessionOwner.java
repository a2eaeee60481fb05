package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
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
 * <p>It runs under the engine's {@link OwnerSupervision}: an unexpected exception in this actor (a
 * bug) does not stop it, nor restart it with its grants' owners lost: it turns quarantined,
 * terminal, listed once ({@code QuarantinedOwner.Kind.OWNER}, {@code RdmaSourceSession <session>}),
 * and answers every later message through {@link AfterFailure}: it closes its session (so the
 * session's thread destroys its QPs and releases what it can, as at a peer's death), keeps its
 * grants' owners and their loans for the life of the process, keeps the loans of reservations
 * promoted after it failed (their news is dropped: no owner is spawned for them), and once the
 * session's thread ended tells the transport, so that closing the source side or the engine does
 * not wait on it. {@link io.orbite.engine.fault.FaultHooks#beforeOwnerMessage} (owner {@code
 * RdmaSourceSession <session>}) lets a test throw inside it.
 *
 * <p>Its row counts the windows bound now ({@code grants}), the reservations held ({@code
 * reservations}), the grants' owners ({@code grantOwners}) and the kept ones ({@code grantsKept});
 * it is published after each message that changed it, each tick among them, when each grant's owner
 * re-publishes its own row too. Its state is the behaviour it is in ({@code serving}, shown {@code
 * closing} once its session is closing; {@code settling}, {@code closing}; {@code keeping}, {@code
 * closed}).
 */
final class SourceSessionOwner {
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

  /** The owner name's prefix ({@code RdmaSourceSession <session>}), and the row's kind. */
  static final String OWNER = "RdmaSourceSession";

  private final ActorContext<Command> ctx;
  private final SourceSession session;
  private final TransportContext context;
  private final AfterFailure told;
  private final ActorRef<GrantOwner.Kept> keptAdapter;
  private final Set<ActorRef<Void>> kept = new HashSet<>();

  /** The grants still alive when the thread ended; empty while serving. */
  private final Set<ActorRef<Void>> settlingOn = new HashSet<>();

  private long sequence;

  private SourceSessionOwner(
      ActorContext<Command> ctx,
      SourceSession session,
      TransportContext context,
      AfterFailure told) {
    this.ctx = ctx;
    this.session = session;
    this.context = context;
    this.told = told;
    this.keptAdapter =
        ctx.messageAdapter(GrantOwner.Kept.class, k -> new GrantKept(k.reservation()));
  }

  /**
   * The owner of {@code session}; {@code ended} is told to {@code transport} once every grant of
   * the session that can end has ended.
   */
  static Behavior<Command> create(
      SourceSession session,
      TransportContext context,
      ActorRef<TransportCommand> transport,
      TransportCommand ended) {
    AfterFailure after = new AfterFailure(session, transport, ended);
    Behavior<Command> owner =
        Behaviors.setup(
            ctx -> {
              after.ctx = ctx;
              SourceSessionOwner o = new SourceSessionOwner(ctx, session, context, after);
              return Behaviors.withTimers(
                  timers -> {
                    timers.startTimerWithFixedDelay(Refresh.INSTANCE, RdmaTransport.VIEW_REFRESH);
                    return OwnerBoard.reporting(context.owners(), o::report, o.serving());
                  });
            });
    return context
        .supervision()
        .supervise(OWNER + " " + session.name(), Command.class, owner, after::refuse);
  }

  /**
   * How a quarantined owner answers (its supervision calls it for the message that failed and for
   * every later one), and the one "ended" told to the transport, whoever tells it. Confined to the
   * actor's thread.
   */
  private static final class AfterFailure {
    private final SourceSession session;
    private final ActorRef<TransportCommand> transport;
    private final TransportCommand ended;
    private ActorContext<Command> ctx;
    private boolean told;

    AfterFailure(
        SourceSession session, ActorRef<TransportCommand> transport, TransportCommand ended) {
      this.session = session;
      this.transport = transport;
      this.ended = ended;
    }

    /** Tells the transport the session ended, once. */
    void tellEnded() {
      if (!told) {
        told = true;
        transport.tell(ended);
      }
    }

    /**
     * Quarantined: the session closes (its thread destroys the QPs and releases what it can), news
     * for a grant with an owner still reaches it (none is spawned now: the loan is kept), the
     * grants' rows are re-published at each tick, and the transport is told once the thread ended.
     */
    void refuse(Command m, String why) {
      session.close("its owner failed: " + why);
      switch (m) {
        case ToGrant t -> {
          ActorRef<GrantOwner.Command> grant = t.reservation().owner();
          if (grant != null) {
            grant.tell(t.event());
          }
        }
        case Refresh r -> refreshGrants(ctx);
        default -> {}
      }
      if (m == Ended.INSTANCE || session.finished()) {
        tellEnded();
      }
    }
  }

  /** Each grant's owner re-publishes its row. */
  private static void refreshGrants(ActorContext<Command> ctx) {
    ctx.getChildren()
        .forEach(c -> c.<GrantOwner.Command>unsafeUpcast().tell(GrantOwner.Refresh.INSTANCE));
  }

  /** While its session's thread runs: promotes held reservations at each tick. */
  private Behavior<Command> serving() {
    return context
        .owners()
        .in(
            OwnerState.SERVING,
            Behaviors.receive(Command.class)
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
                .build());
  }

  /** The thread ended: watching the grants still alive. */
  private Behavior<Command> settling() {
    return context
        .owners()
        .in(
            OwnerState.CLOSING,
            Behaviors.receive(Command.class)
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
                      return settleIfDue(); // after counting it: it may have been the last alive
                    })
                // A session refused while connecting can say it ended twice.
                .onMessageEquals(Ended.INSTANCE, Behaviors::same)
                .onMessageEquals(Refresh.INSTANCE, this::refresh)
                .build());
  }

  /**
   * Terminal, once the transport was told the session ended: only kept grants are left below it,
   * and they never end (their rows and this one are still re-published at each tick).
   */
  private Behavior<Command> keeping() {
    return context
        .owners()
        .in(
            OwnerState.CLOSED,
            Behaviors.receive(Command.class)
                .onMessage(ToGrant.class, this::onToGrant)
                .onMessage(GrantEnded.class, m -> Behaviors.same()) // kept grants stop with it
                .onMessage(
                    GrantKept.class,
                    m -> {
                      onGrantKept(m);
                      return Behaviors.same();
                    })
                .onMessageEquals(Ended.INSTANCE, Behaviors::same)
                .onMessageEquals(Refresh.INSTANCE, this::refresh)
                .build());
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

  /** The tick: each grant's owner re-publishes its row, and so does this actor (after it). */
  private Behavior<Command> refresh() {
    refreshGrants(ctx);
    return Behaviors.same();
  }

  /** The owner of promoted reservation {@code r}, spawned now if it has none. */
  private ActorRef<GrantOwner.Command> ownerOf(Reservation r) {
    ActorRef<GrantOwner.Command> grant = r.owner();
    if (grant == null) {
      grant =
          ctx.spawn(
              GrantOwner.create(
                  r,
                  session.name(),
                  context.owners(),
                  context.quarantine(),
                  context.supervision(),
                  keptAdapter),
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
    told.tellEnded();
    if (settlingOn.isEmpty()) {
      return Behaviors.stopped();
    }
    return keeping();
  }

  /**
   * Its row; its state is the behaviour's, except that a session closing while this owner still
   * serves is shown {@code closing}.
   */
  private OwnerBoard.Report report() {
    OwnerState declared = context.owners().declaredState(ctx.getSelf());
    return new OwnerBoard.Report(
        OWNER,
        declared == OwnerState.SERVING && session.closing() ? OwnerState.CLOSING : null,
        Map.of(
            "grants", (long) session.grantsOutstanding(),
            "reservations", (long) session.reservationsNow().size(),
            "grantOwners", (long) ctx.getChildren().size(),
            "grantsKept", (long) kept.size()),
        session.name());
  }
}
