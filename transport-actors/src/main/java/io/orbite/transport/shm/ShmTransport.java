package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.SharedExports;
import io.orbite.nativebind.HostIdentity;
import io.orbite.transport.endpoint.PeerEndpoint;
import io.orbite.transport.endpoint.PeerEndpoints;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
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
  private final TransportContext context;
  private final OwnerBoard board;
  private final HostIdentity local;
  private final PeerEndpoints endpoints;

  private ShmTransport(
      ActorContext<TransportCommand> ctx, TransportContext context, HostIdentity local) {
    this.context = context;
    this.board = context.owners();
    this.local = local;
    this.endpoints = new PeerEndpoints(ctx, "SHM");
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
                m -> requesterOpen ? onOpenShared(m) : PeerEndpoints.refuseRequesterSideClosed(m))
            .onMessage(TransportCommand.AdoptConnection.class, PeerEndpoints::refuseByClosing)
            // An endpoint leaves only once it has stopped: a quarantined one holds the closes.
            .onMessage(PeerEndpoints.EndpointClosed.class, m -> Behaviors.same())
            .onMessage(PeerEndpoints.Event.class, endpoints::onEvent)
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  endpoints.closeRequesterSide(m.replyTo(), "closing");
                  return serving(false);
                })
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  // Nothing runs here on the source side; exported memory is fenced by unregister
                  // and close.
                  m.replyTo().tell(new TransportCommand.SideClosed("SHM"));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  endpoints.closeAll("closing");
                  return stopping(new ArrayList<>(List.of(m.replyTo())));
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
      endpoints.open(
          "ShmEndpoint",
          m.peer(),
          context,
          fenced ->
              ShmLink.open(m.peer(), exports, m.description().limits(), local, context, fenced),
          new PeerEndpoint.Attach(exports, m.replyTo()));
      return Behaviors.same();
    }
    endpoint.tell(new PeerEndpoint.Attach(exports, m.replyTo()));
    return Behaviors.same();
  }

  /** Every endpoint closing; each Shutdown is answered when they all have stopped. */
  private Behavior<TransportCommand> stopping(
      List<ActorRef<TransportCommand.ShutdownDone>> replyTo) {
    endpoints.answerRequesterClosers();
    if (endpoints.isEmpty()) {
      replyTo.forEach(r -> r.tell(new TransportCommand.ShutdownDone("SHM")));
      return Behaviors.stopped();
    }
    return board.in(
        OwnerState.STOPPING,
        endpoints
            .stopping(replyTo, () -> stopping(replyTo))
            .onMessage(
                PeerEndpoints.EndpointStopped.class,
                m -> {
                  endpoints.on(m);
                  return stopping(replyTo);
                })
            .onMessage(PeerEndpoints.EndpointClosed.class, m -> Behaviors.same())
            .onMessage(PeerEndpoints.EndpointRefused.class, m -> Behaviors.same()) // closeAll did
            .onMessage(TransportCommand.AdoptConnection.class, PeerEndpoints::refuseByClosing)
            .onMessage(
                TransportCommand.CloseSourceSide.class,
                m -> {
                  m.replyTo().tell(new TransportCommand.SideClosed("SHM"));
                  return Behaviors.same();
                })
            .build());
  }
}
