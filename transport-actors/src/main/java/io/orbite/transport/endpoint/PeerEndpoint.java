package io.orbite.transport.endpoint;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.TransportCommand.OpenPeerReply;
import io.orbite.engine.spi.TransportCommand.PeerOpenFailed;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The owner of one peer incarnation's endpoint on one transport (TCP, SHM, RDMA): the one endpoint
 * lifecycle, and the one opening scaffold (waiters, closers, failures), for every transport. What
 * is a transport's own (lanes, mappings, QPs) is its {@link EndpointLink}. Child of its transport's
 * supervisor, under the engine's {@link io.orbite.engine.spi.OwnerSupervision}.
 *
 * <p>States: {@link #opening} (the link opens on the blocking-I/O executor; every Attach and Close
 * meanwhile waits for it and shares its outcome, and a link whose channel was fenced meanwhile is
 * drained as soon as it is open; a failed open answers them and then {@link #refused}: it answers
 * later Attaches with the same failure until its parent, told, closes it) → {@link #active} (when
 * its workers all end by themselves, the peer lost, it turns {@link #refused} the same way, so an
 * open racing its end is answered rather than lost on a stopped actor) → {@link #draining} (the
 * gate closed or fenced, the workers told to close; it waits for their drain, at most a destruction
 * window) → stopped; or {@link #quarantined} when the drain could not be shown within the window
 * (it keeps what it holds, is listed, answers closers, and stops once the workers end), or when the
 * link kept something for good (never). A lifecycle only moves forward; a peer reached again is a
 * fresh endpoint. Its states map to the one kind table: an Attach to an endpoint that is not active
 * is refused with its channel's kind (C18), a quarantined one UNQUIESCED.
 */
public final class PeerEndpoint {
  /** The endpoint's protocol. */
  public sealed interface Command {}

  /**
   * Answer with the channel once open (at once if it is).
   *
   * @param detail what this open carries for the transport (see {@link EndpointLink#attach}), or
   *     null
   * @param replyTo where the channel, or the refusal, goes
   */
  public record Attach(Object detail, ActorRef<OpenPeerReply> replyTo) implements Command {}

  /**
   * Close the endpoint; answered once its workers have drained (or it was quarantined). Marked
   * {@code DeadLetterSuppression}: sent to an endpoint that has just stopped by itself, it is
   * expected undelivered (the transport's watch removes that endpoint).
   *
   * @param reason why, for messages
   * @param replyTo told {@link Closed}
   */
  public record Close(String reason, ActorRef<Closed> replyTo)
      implements Command, DeadLetterSuppression {}

  /**
   * The endpoint closed (or was quarantined, and lives on listed).
   *
   * @param peer its peer incarnation
   */
  public record Closed(SegmentDescriptor peer) {}

  /**
   * Told to the parent when the open failed: the parent drops the endpoint and closes it, so that
   * no later open waits on it.
   *
   * @param peer its peer incarnation
   * @param endpoint the endpoint
   */
  public record Refused(SegmentDescriptor peer, ActorRef<Command> endpoint) {}

  private record Opened(EndpointLink link, Throwable failure) implements Command {}

  private record Drained(List<String> kept) implements Command {}

  private enum Fenced implements Command {
    INSTANCE
  }

  private enum DrainOverdue implements Command {
    INSTANCE
  }

  private enum Tick implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final OwnerBoard board;
  private final String kind;
  private final SegmentDescriptor peer;
  private final TransportContext context;
  private final Consumer<Refused> refusedTo;
  private EndpointLink link;

  private PeerEndpoint(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      String kind,
      SegmentDescriptor peer,
      TransportContext context,
      Consumer<Refused> refusedTo) {
    this.ctx = ctx;
    this.timers = timers;
    this.board = context.owners();
    this.kind = kind;
    this.peer = peer;
    this.context = context;
    this.refusedTo = refusedTo;
  }

  /**
   * An endpoint that opens its link with {@code opener} at once.
   *
   * @param kind what the owner view calls it ({@code TcpEndpoint}, {@code ShmEndpoint}, ...)
   * @param peer its peer incarnation
   * @param context the transport's context (executor, board, quarantine, supervision)
   * @param opener opens the link, blocking, on the blocking-I/O executor
   * @param first the first open, answered with the outcome (null for none): an Attach told after
   *     the spawn could arrive after a quick refusal had already stopped the endpoint
   * @param refusedTo told when the open failed (the parent then closes the endpoint)
   * @return the behaviour
   */
  public static Behavior<Command> create(
      String kind,
      SegmentDescriptor peer,
      TransportContext context,
      EndpointLink.Opener opener,
      Attach first,
      Consumer<Refused> refusedTo) {
    String owner = kind + " " + peer;
    Behavior<Command> endpoint =
        Behaviors.withTimers(
            timers ->
                Behaviors.setup(
                    ctx -> {
                      PeerEndpoint e =
                          new PeerEndpoint(ctx, timers, kind, peer, context, refusedTo);
                      ActorRef<Command> self = ctx.getSelf();
                      ctx.pipeToSelf(
                          CompletableFuture.supplyAsync(
                              () -> {
                                try {
                                  return opener.open(() -> self.tell(Fenced.INSTANCE));
                                } catch (RuntimeException ex) {
                                  throw ex;
                                } catch (Exception ex) {
                                  throw new CompletionException(ex);
                                }
                              },
                              context.blockingIo()),
                          Opened::new);
                      List<Attach> waiters = new ArrayList<>();
                      if (first != null) {
                        waiters.add(first);
                      }
                      return OwnerBoard.reporting(
                          context.owners(), e::report, e.opening(waiters, new ArrayList<>()));
                    }));
    return context
        .supervision()
        .supervise(owner, Command.class, endpoint, (m, why) -> refuse(m, peer, why));
  }

  /** How a quarantined (supervised) endpoint answers: opens refused, closes answered. */
  private static void refuse(Command m, SegmentDescriptor peer, String why) {
    switch (m) {
      case Attach a -> a.replyTo().tell(new PeerOpenFailed(ErrorKind.UNAVAILABLE, why));
      case Close c -> c.replyTo().tell(new Closed(peer));
      default -> {}
    }
  }

  private OwnerBoard.Report report() {
    EndpointLink l = link;
    ChannelGate gate = l == null ? null : l.channel().gate();
    return new OwnerBoard.Report(
        kind,
        l == null ? Map.of() : l.charges(),
        "peer " + peer + (gate == null || gate.active() ? "" : ": " + gate.refusal()));
  }

  private Behavior<Command> opening(List<Attach> waiters, List<Close> closers) {
    return board.in(
        OwnerState.OPENING,
        Behaviors.receive(Command.class)
            .onMessage(Attach.class, m -> waitWith(waiters, m))
            .onMessage(Close.class, m -> waitWith(closers, m))
            .onMessage(Opened.class, m -> onOpened(m, waiters, closers))
            // A fence before the open returned: the gate keeps it, and onOpened drains the link.
            .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
            .build());
  }

  /** Keeps {@code m} to be answered when the state it waits for is reached. */
  private static <M extends Command> Behavior<Command> waitWith(List<M> waiting, M m) {
    waiting.add(m);
    return Behaviors.same();
  }

  private Behavior<Command> onOpened(Opened m, List<Attach> waiters, List<Close> closers) {
    if (m.failure() != null) {
      Throwable cause =
          m.failure() instanceof CompletionException ce && ce.getCause() != null
              ? ce.getCause()
              : m.failure();
      ErrorKind errorKind =
          cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
      String detail = TransferException.describe(cause);
      ctx.getLog().info("{} to {} not opened: {}", kind, peer, detail);
      waiters.forEach(w -> w.replyTo().tell(new PeerOpenFailed(errorKind, detail)));
      if (!closers.isEmpty()) {
        closers.forEach(c -> c.replyTo().tell(new Closed(peer)));
        return Behaviors.stopped();
      }
      refusedTo.accept(new Refused(peer, ctx.getSelf()));
      return refused(errorKind, detail);
    }
    link = m.link();
    ctx.pipeToSelf(
        link.drained().toCompletableFuture(),
        (kept, failure) -> new Drained(kept != null ? kept : List.of(String.valueOf(failure))));
    for (Attach w : waiters) {
      w.replyTo().tell(link.attach(w.detail()));
    }
    if (!closers.isEmpty()) {
      return startDraining(closers.getFirst().reason(), closers);
    }
    if (link.channel().gate().state() instanceof ChannelGate.Fenced) {
      // Its workers found the incarnation ended while the link opened: drain as a fence would.
      ctx.getLog().info("{} to {} fenced: {}", kind, peer, link.channel().gate().refusal());
      return startDraining("fenced", new ArrayList<>());
    }
    Duration every = link.tickEvery();
    if (every != null) {
      timers.startTimerWithFixedDelay(Tick.INSTANCE, every);
    }
    return active();
  }

  /**
   * The open failed, or the workers of an open link all ended by themselves: later opens get the
   * refusal until the parent, told, closes the endpoint.
   */
  private Behavior<Command> refused(ErrorKind errorKind, String detail) {
    return board.in(
        OwnerState.CLOSED,
        Behaviors.receive(Command.class)
            .onMessage(
                Attach.class,
                m -> {
                  m.replyTo().tell(new PeerOpenFailed(errorKind, detail));
                  return Behaviors.same();
                })
            .onMessage(
                Close.class,
                m -> {
                  m.replyTo().tell(new Closed(peer));
                  return Behaviors.stopped();
                })
            .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
            .build());
  }

  private Behavior<Command> active() {
    return board.in(
        OwnerState.ACTIVE,
        Behaviors.receive(Command.class)
            .onMessage(
                Attach.class,
                m -> {
                  ChannelGate gate = link.channel().gate();
                  m.replyTo()
                      .tell(
                          gate.active()
                              ? link.attach(m.detail())
                              : new PeerOpenFailed(refusalKind(gate), gate.refusal()));
                  return Behaviors.same();
                })
            .onMessage(Close.class, m -> startDraining(m.reason(), new ArrayList<>(List.of(m))))
            .onMessageEquals(
                Fenced.INSTANCE,
                () -> {
                  ctx.getLog()
                      .info("{} to {} fenced: {}", kind, peer, link.channel().gate().refusal());
                  return startDraining("fenced", new ArrayList<>());
                })
            .onMessageEquals(
                Tick.INSTANCE,
                () -> {
                  link.tick();
                  return Behaviors.same();
                })
            .onMessage(
                Drained.class,
                m -> {
                  // Its workers all ended by themselves: the peer was lost.
                  link.channel()
                      .gate()
                      .close(ChannelGate.Why.PEER_LOST, "every worker to " + peer + " ended");
                  ctx.getLog().info("{} to {} ended: {}", kind, peer, link.channel().gate());
                  if (m.kept().isEmpty()) {
                    // The parent drops it from its table and closes it; an open that reaches it
                    // meanwhile is answered with the loss rather than left waiting on a stopped
                    // actor.
                    timers.cancel(Tick.INSTANCE);
                    refusedTo.accept(new Refused(peer, ctx.getSelf()));
                    ChannelGate gate = link.channel().gate();
                    return refused(refusalKind(gate), gate.refusal());
                  }
                  return afterDrain(m.kept(), List.of());
                })
            .build());
  }

  private static ErrorKind refusalKind(ChannelGate gate) {
    ErrorKind k = gate.refusalKind();
    return k == null ? ErrorKind.UNAVAILABLE : k;
  }

  private Behavior<Command> startDraining(String reason, List<Close> closers) {
    timers.cancel(Tick.INSTANCE);
    link.channel().gate().close(ChannelGate.Why.LOCAL_CLOSE, reason);
    link.close(reason);
    timers.startSingleTimer(
        DrainOverdue.INSTANCE,
        Duration.ofMillis(context.config().timeouts().destructionWindowMillis()));
    return draining(closers);
  }

  private Behavior<Command> draining(List<Close> closers) {
    OwnerState shown =
        link.channel().gate().state() instanceof ChannelGate.Fenced
            ? OwnerState.FENCED
            : OwnerState.DRAINING;
    return board.in(
        shown,
        Behaviors.receive(Command.class)
            .onMessage(
                Attach.class,
                m -> {
                  ChannelGate gate = link.channel().gate();
                  m.replyTo().tell(new PeerOpenFailed(refusalKind(gate), gate.refusal()));
                  return Behaviors.same();
                })
            .onMessage(Close.class, m -> waitWith(closers, m))
            .onMessage(Drained.class, m -> afterDrain(m.kept(), closers))
            .onMessageEquals(DrainOverdue.INSTANCE, () -> overdue(closers))
            .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
            .onMessageEquals(Tick.INSTANCE, Behaviors::same)
            .build());
  }

  /** The workers drained: stop, unless the link kept something for good. */
  private Behavior<Command> afterDrain(List<String> kept, List<Close> closers) {
    timers.cancel(DrainOverdue.INSTANCE);
    closers.forEach(c -> c.replyTo().tell(new Closed(peer)));
    if (kept.isEmpty()) {
      return Behaviors.stopped();
    }
    String owner = enterQuarantine("could not release (never retried): " + kept, () -> true);
    link.channel().gate().close(ChannelGate.Why.HELD, "it keeps " + kept);
    ctx.getLog().error("{} quarantined for good: could not release {}", owner, kept);
    return quarantined(owner, true);
  }

  /**
   * Lists this endpoint in the engine's quarantine (no tasks or bytes of its own: the loans stay
   * with their batches).
   *
   * @param reason why, as the listing says
   * @param stillHeld whether it still holds what it kept; it stays listed while this is true
   * @return its name in the listing
   */
  private String enterQuarantine(String reason, BooleanSupplier stillHeld) {
    String owner = kind + " " + peer;
    context
        .quarantine()
        .enter(
            new QuarantinedOwner(
                owner, QuarantinedOwner.Kind.ENDPOINT, reason, 0, 0, Instant.now()),
            stillHeld);
    return owner;
  }

  /**
   * A worker has not ended a destruction window after it was told to close: it cannot be shown to
   * have stopped touching its tasks' memory, so the endpoint is quarantined. Its closers are
   * answered (the engine can finish closing around it); the loans its tasks hold stay with their
   * batches; it stays listed until the workers end.
   */
  private Behavior<Command> overdue(List<Close> closers) {
    List<String> stuck = link.running();
    EndpointLink held = link;
    String owner =
        enterQuarantine(
            stuck.size()
                + " worker(s) still running "
                + context.config().timeouts().destructionWindowMillis()
                + " ms after they were told to close: "
                + String.join(", ", stuck),
            () -> !held.running().isEmpty());
    link.channel()
        .gate()
        .close(ChannelGate.Why.HELD, String.join(", ", stuck) + " did not end within the window");
    ctx.getLog()
        .error(
            "{} quarantined: {} worker(s) did not end within the destruction window: {}",
            owner,
            stuck.size(),
            stuck);
    closers.forEach(c -> c.replyTo().tell(new Closed(peer)));
    return quarantined(owner, false);
  }

  private Behavior<Command> quarantined(String owner, boolean forGood) {
    return board.in(
        OwnerState.QUARANTINED,
        Behaviors.receive(Command.class)
            .onMessage(
                Attach.class,
                m -> {
                  m.replyTo()
                      .tell(
                          new PeerOpenFailed(
                              ErrorKind.UNQUIESCED, kind + " to " + peer + " is quarantined"));
                  return Behaviors.same();
                })
            .onMessage(
                Close.class,
                m -> {
                  m.replyTo().tell(new Closed(peer));
                  return Behaviors.same();
                })
            .onMessage(
                Drained.class,
                m -> {
                  if (forGood || !m.kept().isEmpty()) {
                    return forGood ? Behaviors.same() : afterDrain(m.kept(), List.of());
                  }
                  context.quarantine().leave(owner);
                  ctx.getLog().info("{}: its last worker ended; no longer quarantined", owner);
                  return Behaviors.stopped();
                })
            .onMessageEquals(Fenced.INSTANCE, Behaviors::same)
            .onMessageEquals(DrainOverdue.INSTANCE, Behaviors::same)
            .onMessageEquals(Tick.INSTANCE, Behaviors::same)
            .build());
  }
}
