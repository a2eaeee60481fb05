package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.HostIdentity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of the SHM path to one peer incarnation: the proof that its memory opens from here, the
 * copy lane (a thread of its own) with the mappings it holds, and the channel batches dispatch to.
 * Child of the ShmTransport.
 *
 * <p>States: {@link #opening} (proving the peer on the blocking-I/O executor) → {@link #active} →
 * {@link #draining} (closed: the lane fails what is queued, unmaps, ends) or {@link #fenced} (the
 * peer's incarnation ended: the same, failing work EPOCH_MISMATCH) → stopped. A lifecycle only
 * moves forward; a peer opened again after this endpoint stopped gets a fresh one.
 */
final class ShmEndpoint {
  sealed interface Command {}

  /**
   * Answer with the channel once proven (at once if it is), adding the allocations {@code exports}
   * lists.
   */
  record Attach(SharedExports exports, ActorRef<TransportCommand.OpenPeerReply> replyTo)
      implements Command {}

  /**
   * Close the lane; reply when its thread has ended. Marked {@code DeadLetterSuppression}, as
   * TCP's: sent to an endpoint that has just stopped by itself, it is expected undelivered (the
   * transport's watch removes that endpoint).
   */
  record Close(ActorRef<Closed> replyTo)
      implements Command, org.apache.pekko.actor.DeadLetterSuppression {}

  record Closed(SegmentDescriptor peer) {}

  /** Told to the transport: the proof refused SHM to this peer; drop the endpoint and close it. */
  record Refused(SegmentDescriptor peer, ActorRef<Command> endpoint) {}

  private record Proven(Integer tokenFd, Throwable failure) implements Command {}

  private record LaneEnded(Throwable cause) implements Command {}

  private record Fenced(String reason) implements Command {}

  private final ActorContext<Command> ctx;
  private final SegmentDescriptor peer;
  private final SharedExports exports;
  private final int maxMappings;
  private final int laneCount;
  private final EngineTally counters;
  private final QuarantineLedger quarantine;
  private final FaultHooks hooks;
  private final ActorRef<Refused> refusedTo;

  private ShmEndpoint(
      ActorContext<Command> ctx,
      SegmentDescriptor peer,
      SharedExports exports,
      int maxMappings,
      int laneCount,
      EngineTally counters,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      ActorRef<Refused> refusedTo) {
    this.ctx = ctx;
    this.laneCount = laneCount;
    this.refusedTo = refusedTo;
    this.quarantine = quarantine;
    this.hooks = hooks;
    this.peer = peer;
    this.exports = exports;
    this.maxMappings = maxMappings;
    this.counters = counters;
  }

  static Behavior<Command> create(
      SegmentDescriptor peer,
      SharedExports exports,
      HostIdentity local,
      int maxMappings,
      int laneCount,
      Executor blockingIo,
      EngineTally counters,
      io.orbite.engine.view.OwnerBoard owners,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      ActorRef<TransportCommand.OpenPeerReply> first,
      ActorRef<Refused> refusedTo) {
    return Behaviors.setup(
        ctx -> {
          ShmEndpoint endpoint =
              new ShmEndpoint(
                  ctx,
                  peer,
                  exports,
                  maxMappings,
                  laneCount,
                  counters,
                  quarantine,
                  hooks,
                  refusedTo);
          ctx.pipeToSelf(
              CompletableFuture.supplyAsync(
                  () -> PeerProof.prove(peer, exports, local), blockingIo),
              Proven::new);
          return io.orbite.engine.view.OwnerBoard.reporting(
              owners,
              () ->
                  new io.orbite.engine.view.OwnerBoard.Report(
                      "ShmEndpoint",
                      endpoint.state,
                      java.util.Map.of(),
                      "peer " + peer + (endpoint.why.isEmpty() ? "" : ": " + endpoint.why)),
              // The first open waits from the start: an Attach told after the spawn could arrive
              // after a quick refusal had already stopped the endpoint, and never be answered.
              endpoint.opening(
                  new ArrayList<>(List.of(first)),
                  new ArrayList<>(),
                  ShmPeerChannel.exportTable(exports)));
        });
  }

  private OwnerState state = OwnerState.OPENING;
  private String why = "";

  private Behavior<Command> opening(
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters,
      List<ActorRef<Closed>> closers,
      Map<Long, SharedRegion> table) {
    return Behaviors.receive(Command.class)
        .onMessage(
            Attach.class,
            m -> {
              table.putAll(m.exports().byRegion());
              waiters.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(Proven.class, m -> onProven(m, waiters, closers, table))
        .build();
  }

  private Behavior<Command> onProven(
      Proven m,
      List<ActorRef<TransportCommand.OpenPeerReply>> waiters,
      List<ActorRef<Closed>> closers,
      Map<Long, SharedRegion> table) {
    if (m.failure() != null) {
      Throwable cause =
          m.failure() instanceof CompletionException ce && ce.getCause() != null
              ? ce.getCause()
              : m.failure();
      counters.increment(Count.SHM_OPENS_REFUSED);
      ctx.getLog().info("SHM to {} not used: {}", peer, cause.getMessage());
      String detail = TransferException.describe(cause);
      waiters.forEach(
          w -> w.tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, detail)));
      if (!closers.isEmpty()) {
        closers.forEach(c -> c.tell(new Closed(peer)));
        return Behaviors.stopped();
      }
      refusedTo.tell(new Refused(peer, ctx.getSelf()));
      return refused(detail);
    }
    ActorRef<Command> self = ctx.getSelf();
    ShmLane.Token token = new ShmLane.Token(m.tokenFd(), laneCount);
    List<ShmLane> lanes = new ArrayList<>(laneCount);
    ShmPeerChannel[] channelOf = new ShmPeerChannel[1];
    Consumer<String> onFenced =
        reason -> {
          channelOf[0].laneFenced(reason);
          self.tell(new Fenced(reason));
        };
    for (int i = 0; i < laneCount; i++) {
      lanes.add(
          new ShmLane(
              (laneCount == 1 ? "shm lane to " : "shm lane " + i + " to ") + peer,
              peer,
              exports.host(),
              token,
              table,
              maxMappings,
              counters,
              quarantine,
              hooks,
              onFenced,
              cause -> self.tell(new LaneEnded(cause))));
    }
    lanes.forEach(l -> l.siblings(lanes));
    ShmPeerChannel channel = new ShmPeerChannel(peer, lanes, table, () -> {});
    channelOf[0] = channel;
    for (ShmLane lane : lanes) {
      Thread.ofPlatform().daemon().name("orbite-" + lane.name()).start(lane);
    }
    waiters.forEach(w -> w.tell(new TransportCommand.PeerOpened(channel)));
    if (!closers.isEmpty()) {
      return startDraining(channel, lanes, closers);
    }
    return active(channel, lanes);
  }

  /**
   * The proof refused SHM: every open that still reaches this endpoint (the transport may have sent
   * one before it learned of the refusal) gets the same refusal, until the transport, having
   * dropped it, closes it.
   */
  private Behavior<Command> refused(String detail) {
    state = OwnerState.CLOSED;
    why = detail;
    return Behaviors.receive(Command.class)
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo().tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, detail));
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              m.replyTo().tell(new Closed(peer));
              return Behaviors.stopped();
            })
        .onAnyMessage(m -> Behaviors.same())
        .build();
  }

  private Behavior<Command> active(ShmPeerChannel channel, List<ShmLane> lanes) {
    state = OwnerState.ACTIVE;
    return Behaviors.receive(Command.class)
        .onMessage(
            Attach.class,
            m -> {
              channel.addExports(m.exports());
              m.replyTo()
                  .tell(
                      channel.active()
                          ? new TransportCommand.PeerOpened(channel)
                          : new TransportCommand.PeerOpenFailed(
                              ErrorKind.UNAVAILABLE, "the SHM lane to " + peer + " has ended"));
              return Behaviors.same();
            })
        .onMessage(
            Fenced.class,
            m -> {
              channel.deactivate();
              return fenced(m.reason(), new ArrayList<>());
            })
        .onMessage(
            LaneEnded.class,
            m -> {
              // A lane ended by itself (a broken invariant): the others close too, and the
              // endpoint stops once every lane's thread has ended.
              ctx.getLog()
                  .info(
                      "an SHM lane to {} ended{}", peer, m.cause() == null ? "" : ": " + m.cause());
              channel.deactivate();
              lanesEnded++;
              lanes.forEach(ShmLane::close);
              return lanesEnded == laneCount ? Behaviors.stopped() : draining(new ArrayList<>());
            })
        .onMessage(
            Close.class, m -> startDraining(channel, lanes, new ArrayList<>(List.of(m.replyTo()))))
        .build();
  }

  private Behavior<Command> startDraining(
      ShmPeerChannel channel, List<ShmLane> lanes, List<ActorRef<Closed>> closers) {
    channel.deactivate();
    lanes.forEach(ShmLane::close);
    return draining(closers);
  }

  /** Lanes whose thread has ended; the endpoint stops once all {@link #laneCount} have. */
  private int lanesEnded;

  private Behavior<Command> draining(List<ActorRef<Closed>> closers) {
    state = OwnerState.DRAINING;
    return Behaviors.receive(Command.class)
        .onMessage(
            LaneEnded.class,
            m -> {
              if (++lanesEnded < laneCount) {
                return Behaviors.same();
              }
              closers.forEach(c -> c.tell(new Closed(peer)));
              return Behaviors.stopped();
            })
        .onMessage(Fenced.class, m -> Behaviors.same())
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.UNAVAILABLE, "SHM endpoint " + peer + " is closing"));
              return Behaviors.same();
            })
        .build();
  }

  /** The peer's incarnation ended: the lane is failing its work EPOCH_MISMATCH and unmapping. */
  private Behavior<Command> fenced(String reason, List<ActorRef<Closed>> closers) {
    state = OwnerState.FENCED;
    why = reason;
    return Behaviors.receive(Command.class)
        .onMessage(
            LaneEnded.class,
            m -> {
              if (++lanesEnded < laneCount) {
                return Behaviors.same();
              }
              closers.forEach(c -> c.tell(new Closed(peer)));
              return Behaviors.stopped();
            })
        .onMessage(Fenced.class, m -> Behaviors.same())
        .onMessage(
            Close.class,
            m -> {
              closers.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            Attach.class,
            m -> {
              m.replyTo()
                  .tell(
                      new TransportCommand.PeerOpenFailed(
                          ErrorKind.EPOCH_MISMATCH,
                          "SHM endpoint " + peer + " is fenced: " + reason));
              return Behaviors.same();
            })
        .build();
  }
}
