package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of one RDMA endpoint (one peer incarnation): its control link and QP array ({@link
 * RdmaChannel}). Child of the RdmaTransport.
 *
 * <p>States: {@link #opening} (the cold construction runs once on the blocking-I/O executor; every
 * Attach meanwhile waits for it and shares its outcome) → {@link #active} → {@link #closing} (the
 * channel closes on its lanes: QPs to ERR, flushed, destroyed, then unsent work failed) → stopped;
 * or {@link #quarantined} when a QP could not be destroyed: it keeps what it holds, is listed in
 * the engine's quarantine and is never destroyed again.
 */
final class RdmaEndpoint {
  sealed interface Command {}

  record Attach(ActorRef<TransportCommand.OpenPeerReply> replyTo) implements Command {}

  /**
   * Close the endpoint; reply once its QPs are destroyed. Marked {@code DeadLetterSuppression}, as
   * TCP's: sent to an endpoint that has just stopped by itself, it is expected undelivered (the
   * transport's watch removes that endpoint).
   */
  record Close(String reason, ActorRef<Closed> replyTo)
      implements Command, org.apache.pekko.actor.DeadLetterSuppression {}

  record Closed(SegmentDescriptor peer) {}

  private record Opened(RdmaChannel channel, Throwable failure) implements Command {}

  private record ChannelClosed(List<String> undestroyed) implements Command {}

  /** Re-publishes the owner view's figures (they move on lane threads, between messages). */
  private enum Refresh implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final SegmentDescriptor peer;
  private final TransportContext context;
  private OwnerState state = OwnerState.OPENING;
  private RdmaChannel channel;
  private String detail = "";

  private RdmaEndpoint(
      ActorContext<Command> ctx, SegmentDescriptor peer, TransportContext context) {
    this.ctx = ctx;
    this.peer = peer;
    this.context = context;
  }

  static Behavior<Command> create(
      SegmentDescriptor peer,
      TransportContext context,
      List<Rail> rails,
      RailHealth health,
      RailSelector selector,
      RdmaCounters counters,
      DirectBytes direct,
      DirectBytes parents) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  timers.startTimerWithFixedDelay(Refresh.INSTANCE, RdmaTransport.VIEW_REFRESH);
                  RdmaEndpoint e = new RdmaEndpoint(ctx, peer, context);
                  ctx.pipeToSelf(
                      CompletableFuture.supplyAsync(
                          () ->
                              RdmaChannel.open(
                                  peer,
                                  context.localEpoch(),
                                  context.config().tcp(),
                                  context.config().slicing(),
                                  rails,
                                  health,
                                  selector,
                                  counters,
                                  direct,
                                  parents),
                          context.blockingIo()),
                      Opened::new);
                  return OwnerBoard.reporting(
                      context.owners(), e::report, e.opening(new ArrayList<>(), new ArrayList<>()));
                }));
  }

  private OwnerBoard.Report report() {
    RdmaChannel c = channel;
    return new OwnerBoard.Report(
        "RdmaEndpoint",
        state,
        Map.of(
            "qps",
            c == null ? 0L : c.qpCount(),
            "slicesAwaitingGrant",
            c == null ? 0L : c.slicesAwaitingGrant(),
            "maxSqDebt",
            c == null ? 0L : c.maxDebt(),
            "promotions",
            c == null ? 0L : c.promotions(),
            "peerRails",
            c == null ? 0L : c.remoteRails().size(),
            "peerLinkBytesPerSecond",
            c == null
                ? 0L
                : c.remoteRails().stream().mapToLong(r -> r.linkMbps() * 1_000_000 / 8).sum(),
            "peerMaxTaskBytes",
            c == null ? 0L : c.peerLimits().maxTaskBytes(),
            "peerParentsLimit",
            c == null ? 0L : c.peerLimits().maxParents(),
            "peerParentsReserved",
            c == null ? 0L : c.peerParentsReserved()),
        peer + (detail.isEmpty() ? "" : ": " + detail));
  }

  private Behavior<Command> opening(
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters, List<ActorRef<Closed>> closers) {
    return Behaviors.receive(Command.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(
            Attach.class,
            m -> {
              waiters.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(Opened.class, m -> onOpened(m, waiters, closers))
        .build();
  }

  private Behavior<Command> onOpened(
      Opened m,
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters,
      List<ActorRef<Closed>> closers) {
    if (m.failure() != null) {
      Throwable cause =
          m.failure() instanceof java.util.concurrent.CompletionException c
              ? c.getCause()
              : m.failure();
      ErrorKind kind = cause instanceof TransferException t ? t.kind() : ErrorKind.UNAVAILABLE;
      String why = cause instanceof TransferException t ? t.getMessage() : String.valueOf(cause);
      waiters.forEach(w -> w.tell(new TransportCommand.PeerOpenFailed(kind, why)));
      closers.forEach(c -> c.tell(new Closed(peer)));
      return Behaviors.stopped();
    }
    channel = m.channel();
    state = OwnerState.ACTIVE;
    waiters.forEach(w -> w.tell(new TransportCommand.PeerOpened(channel)));
    ctx.pipeToSelf(
        channel.closed(),
        (undestroyed, failure) ->
            new ChannelClosed(
                undestroyed != null ? undestroyed : List.of(String.valueOf(failure))));
    if (!closers.isEmpty()) {
      channel.close(ChannelGate.Why.LOCAL_CLOSE, "the endpoint was closed while it opened");
      return closing(closers);
    }
    return active();
  }

  private Behavior<Command> active() {
    return Behaviors.receive(Command.class)
        .onMessageEquals(
            Refresh.INSTANCE,
            () -> {
              // Tasks waiting for charges past their deadline fail TIMEOUT: off the mailbox (one
              // that starts after them may write its RESERVE to the control connection).
              if (channel.anyWaiting()) {
                java.util.concurrent.CompletableFuture.runAsync(
                    channel::expireWaiting, context.blockingIo());
              }
              return Behaviors.same();
            })
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo().tell(new TransportCommand.PeerOpened(channel));
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              channel.close(ChannelGate.Why.LOCAL_CLOSE, m.reason());
              return closing(new ArrayList<>(List.of(m.replyTo())));
            })
        .onMessage(
            ChannelClosed.class,
            m -> {
              // Closed by itself (a QP erred, the link ended, a fence): retire.
              detail = channel.closedBecause();
              return afterClose(m.undestroyed(), new ArrayList<>());
            })
        .build();
  }

  private Behavior<Command> closing(List<ActorRef<Closed>> closers) {
    state = OwnerState.DRAINING;
    return Behaviors.receive(Command.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNAVAILABLE, "the RDMA endpoint to " + peer + " is closing"));
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(ChannelClosed.class, m -> afterClose(m.undestroyed(), closers))
        .build();
  }

  private Behavior<Command> afterClose(List<String> undestroyed, List<ActorRef<Closed>> closers) {
    closers.forEach(c -> c.tell(new Closed(peer)));
    if (undestroyed.isEmpty()) {
      state = OwnerState.CLOSED;
      return Behaviors.stopped();
    }
    state = OwnerState.QUARANTINED;
    detail = "could not destroy " + undestroyed;
    String owner = "RdmaEndpoint " + peer;
    context
        .quarantine()
        .enter(
            new QuarantinedOwner(
                owner,
                QuarantinedOwner.Kind.ENDPOINT,
                "its QPs could not be destroyed (never retried): " + undestroyed,
                0,
                0,
                java.time.Instant.now()),
            () -> true);
    ctx.getLog().warn("{} quarantined: {}", owner, detail);
    return quarantined();
  }

  /** Terminal: holds what it could not destroy; answers nothing new. */
  private Behavior<Command> quarantined() {
    return Behaviors.receive(Command.class)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNQUIESCED,
                          "the RDMA endpoint to " + peer + " is quarantined"));
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              m.replyTo().tell(new Closed(peer));
              return Behaviors.same();
            })
        .onMessage(ChannelClosed.class, m -> Behaviors.same())
        .build();
  }
}
