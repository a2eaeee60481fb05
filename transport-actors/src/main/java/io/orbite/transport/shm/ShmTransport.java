package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.SharedExports;
import io.orbite.nativebind.HostIdentity;
import io.orbite.transport.endpoint.PeerEndpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Supervisor of the SHM transport. Child of the EngineGuardian. Requester side: one endpoint
 * ({@link PeerEndpoint} over an {@link ShmLink}) child per same-host peer incarnation whose memory
 * was proven openable, at most {@code budgets.maxPeerSegments} (C9). The source side has no actor
 * of its own: exported memory is the Registry's (memfds with liveness locks), and peers copy it
 * themselves.
 *
 * <p>States: {@link #serving}, {@link #stopping} (every endpoint's lane closing), then stopped.
 */
final class ShmTransport {
  private record EndpointClosed(SegmentDescriptor peer) implements TransportCommand {}

  private record EndpointRefused(PeerEndpoint.Refused refused) implements TransportCommand {}

  private final ActorContext<TransportCommand> ctx;
  private final TransportContext context;
  private final OwnerBoard board;
  private final HostIdentity local;
  private final Map<SegmentDescriptor, ActorRef<PeerEndpoint.Command>> endpoints = new HashMap<>();
  private final List<ActorRef<TransportCommand.SideClosed>> requesterClosers = new ArrayList<>();
  private long endpointSequence;

  private ShmTransport(
      ActorContext<TransportCommand> ctx, TransportContext context, HostIdentity local) {
    this.ctx = ctx;
    this.context = context;
    this.board = context.owners();
    this.local = local;
  }

  static Behavior<TransportCommand> create(TransportContext context, HostIdentity local) {
    return Behaviors.setup(
        ctx -> {
          ShmTransport transport = new ShmTransport(ctx, context, local);
          return OwnerBoard.reporting(
              context.owners(),
              () ->
                  new OwnerBoard.Report(
                      "ShmTransport", Map.of("endpoints", (long) transport.endpoints.size()), ""),
              transport.serving(true));
        });
  }

  /** Serving; after CloseRequesterSide opens are refused here, and it is still shown serving. */
  private Behavior<TransportCommand> serving(boolean requesterOpen) {
    return board.in(
        OwnerState.SERVING,
        Behaviors.receive(TransportCommand.class)
            .onMessage(
                TransportCommand.OpenPeer.class,
                m -> {
                  if (!requesterOpen) {
                    m.replyTo()
                        .tell(
                            new TransportCommand.PeerOpenFailed(
                                ErrorKind.UNAVAILABLE,
                                "the requester side of this engine is closed"));
                    return Behaviors.same();
                  }
                  return onOpenShared(m);
                })
            .onMessage(
                TransportCommand.AdoptConnection.class,
                m -> {
                  closeQuietly(m.channel());
                  return Behaviors.same();
                })
            .onMessage(EndpointClosed.class, m -> Behaviors.same())
            .onMessage(
                EndpointRefused.class,
                m -> {
                  // Dropped first, so no later open is sent to it; then closed.
                  endpoints.remove(m.refused().peer(), m.refused().endpoint());
                  m.refused()
                      .endpoint()
                      .tell(new PeerEndpoint.Close("its open failed", ctx.getSystem().ignoreRef()));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  requesterClosers.add(m.replyTo());
                  closeEndpoints();
                  answerRequesterClosers();
                  return serving(false);
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  // Nothing runs here on the source side; exported memory is fenced by unregister
                  // and
                  // close.
                  m.replyTo().tell(new TransportCommand.SideClosed("SHM"));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  closeEndpoints();
                  return stopping(new ArrayList<>(List.of(m.replyTo())));
                })
            .onSignal(
                Terminated.class,
                t -> {
                  endpoints.values().removeIf(ref -> ref.equals(t.getRef()));
                  answerRequesterClosers();
                  return Behaviors.same();
                })
            .build());
  }

  private Behavior<TransportCommand> onOpenShared(TransportCommand.OpenPeer m) {
    SharedExports exports = m.description().shared();
    if (exports == null) {
      m.replyTo()
          .tell(
              new TransportCommand.PeerOpenFailed(
                  ErrorKind.UNAVAILABLE, "the peer exports no memory through SHM"));
      return Behaviors.same();
    }
    ActorRef<PeerEndpoint.Command> endpoint = endpoints.get(m.peer());
    if (endpoint == null) {
      int cap = context.config().budgets().maxPeerSegments();
      if (endpoints.size() >= cap) {
        m.replyTo()
            .tell(
                new TransportCommand.PeerOpenFailed(
                    ErrorKind.RESOURCE_EXHAUSTED,
                    "SHM endpoints: " + cap + " peer incarnations are open"));
        return Behaviors.same();
      }
      // The sequence keeps names unique: a refused endpoint is dropped from the map at once but
      // stops later, and a name is reserved until its owner has stopped; an open of the same peer
      // in between used to reuse the name, which threw and stopped this transport.
      ActorRef<PeerEndpoint.Refused> refused =
          ctx.messageAdapter(PeerEndpoint.Refused.class, EndpointRefused::new);
      endpoint =
          ctx.spawn(
              PeerEndpoint.create(
                  "ShmEndpoint",
                  m.peer(),
                  context,
                  fenced -> ShmLink.open(m.peer(), exports, local, context, fenced),
                  new PeerEndpoint.Attach(exports, m.replyTo()),
                  refused::tell),
              "endpoint-"
                  + m.peer().port()
                  + "-"
                  + Long.toHexString(m.peer().epoch())
                  + "-"
                  + (++endpointSequence));
      ctx.watch(endpoint);
      endpoints.put(m.peer(), endpoint);
      return Behaviors.same();
    }
    endpoint.tell(new PeerEndpoint.Attach(exports, m.replyTo()));
    return Behaviors.same();
  }

  private void closeEndpoints() {
    ActorRef<PeerEndpoint.Closed> adapter =
        ctx.messageAdapter(PeerEndpoint.Closed.class, c -> new EndpointClosed(c.peer()));
    endpoints.values().forEach(e -> e.tell(new PeerEndpoint.Close("closing", adapter)));
  }

  private void answerRequesterClosers() {
    if (endpoints.isEmpty() && !requesterClosers.isEmpty()) {
      requesterClosers.forEach(r -> r.tell(new TransportCommand.SideClosed("SHM")));
      requesterClosers.clear();
    }
  }

  /** Every endpoint closing; each Shutdown is answered when they all have stopped. */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo) {
    answerRequesterClosers();
    if (endpoints.isEmpty()) {
      replyTo.forEach(r -> r.tell(new TransportCommand.ShutdownDone("SHM")));
      return Behaviors.stopped();
    }
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(TransportCommand.class)
            .onSignal(
                Terminated.class,
                t -> {
                  endpoints.values().removeIf(ref -> ref.equals(t.getRef()));
                  return stopping(replyTo);
                })
            .onMessage(EndpointClosed.class, m -> Behaviors.same())
            .onMessage(EndpointRefused.class, m -> Behaviors.same()) // closeEndpoints closes it
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  replyTo.add(m.replyTo());
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.OpenPeer.class,
                m -> {
                  m.replyTo()
                      .tell(
                          new TransportCommand.PeerOpenFailed(
                              ErrorKind.UNAVAILABLE, "SHM transport is stopping"));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.AdoptConnection.class,
                m -> {
                  closeQuietly(m.channel());
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  requesterClosers.add(m.replyTo());
                  return stopping(replyTo);
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  m.replyTo().tell(new TransportCommand.SideClosed("SHM"));
                  return Behaviors.same();
                })
            .build());
  }

  private static void closeQuietly(java.nio.channels.SocketChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // SHM has no data connections: a HELLO naming it is refused by closing.
    }
  }
}
