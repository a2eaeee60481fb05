package io.orbite.transport.endpoint;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportCommand.AdoptConnection;
import io.orbite.engine.spi.TransportCommand.OpenPeer;
import io.orbite.engine.spi.TransportCommand.ShutdownDone;
import io.orbite.engine.spi.TransportCommand.SideClosed;
import io.orbite.engine.spi.TransportContext;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The requester side of a transport supervisor (TCP, SHM, RDMA): its {@link PeerEndpoint} children,
 * one per peer incarnation, spawned, watched, closed and dropped alike, and the closes of the
 * requester side (C8) that wait for them; and the answers every such supervisor gives alike (a
 * refused open, a refused connection, the start of its stopping state). Used on the supervisor's
 * thread only; the supervisor routes the {@link Event}s to {@link #on}.
 */
public final class PeerEndpoints {
  /** What the supervisor's endpoints tell it; internal to the transports. */
  public sealed interface Event extends TransportCommand {}

  /**
   * An endpoint answered a close: it closed, or was quarantined (it then lives on, listed in the
   * engine's quarantine).
   *
   * @param peer its peer incarnation
   */
  public record EndpointClosed(SegmentDescriptor peer) implements Event {}

  /**
   * An endpoint stopped (its watch).
   *
   * @param peer its peer incarnation
   * @param endpoint the endpoint that stopped
   */
  public record EndpointStopped(SegmentDescriptor peer, ActorRef<PeerEndpoint.Command> endpoint)
      implements Event {}

  /**
   * An endpoint's open failed: it is dropped, so no later open waits on it, and closed.
   *
   * @param refused which endpoint
   */
  public record EndpointRefused(PeerEndpoint.Refused refused) implements Event {}

  /** Why an open is refused once the requester side of this engine was closed. */
  public static final String REQUESTER_SIDE_CLOSED = "the requester side of this engine is closed";

  private final ActorContext<TransportCommand> ctx;
  private final String transport;
  private final Map<SegmentDescriptor, ActorRef<PeerEndpoint.Command>> endpoints = new HashMap<>();
  private final SideClosers requesterClosers;
  private long sequence;

  /**
   * The endpoints of one transport supervisor.
   *
   * @param ctx the supervisor's context (the endpoints are its children)
   * @param transport what answers name ({@code TCP}, {@code SHM}, {@code RDMA})
   */
  public PeerEndpoints(ActorContext<TransportCommand> ctx, String transport) {
    this.ctx = ctx;
    this.transport = transport;
    this.requesterClosers = new SideClosers(transport);
  }

  /**
   * The endpoint of {@code peer}.
   *
   * @param peer a peer incarnation
   * @return its endpoint, or null when none is open
   */
  public ActorRef<PeerEndpoint.Command> get(SegmentDescriptor peer) {
    return endpoints.get(peer);
  }

  /**
   * How many endpoints there are, for the owner view and the budgets.
   *
   * @return the count
   */
  public int size() {
    return endpoints.size();
  }

  /**
   * Whether no endpoint is left.
   *
   * @return true when none is
   */
  public boolean isEmpty() {
    return endpoints.isEmpty();
  }

  /**
   * Spawns and watches the endpoint of {@code peer}, which opens its link and answers {@code first}
   * with the outcome.
   *
   * @param kind what the owner view calls it ({@code TcpEndpoint}, ...)
   * @param peer its peer incarnation
   * @param context the transport's context
   * @param opener opens the link on the blocking-I/O executor
   * @param first the open that asked for it
   */
  public void open(
      String kind,
      SegmentDescriptor peer,
      TransportContext context,
      EndpointLink.Opener opener,
      PeerEndpoint.Attach first) {
    ActorRef<PeerEndpoint.Refused> refused =
        ctx.messageAdapter(PeerEndpoint.Refused.class, EndpointRefused::new);
    // The sequence keeps names unique: a refused or quarantined endpoint leaves the map at once
    // but stops later, and a name is reserved until its owner has stopped.
    ActorRef<PeerEndpoint.Command> endpoint =
        ctx.spawn(
            PeerEndpoint.create(kind, peer, context, opener, first, refused::tell),
            "endpoint-" + peer.port() + "-" + Long.toHexString(peer.epoch()) + "-" + (++sequence));
    ctx.watchWith(endpoint, new EndpointStopped(peer, endpoint));
    endpoints.put(peer, endpoint);
  }

  /**
   * Asks every endpoint to close; each answers ({@link EndpointClosed}) once its workers drained.
   *
   * @param reason why, for messages
   */
  public void closeAll(String reason) {
    ActorRef<PeerEndpoint.Closed> adapter =
        ctx.messageAdapter(PeerEndpoint.Closed.class, c -> new EndpointClosed(c.peer()));
    endpoints.values().forEach(e -> e.tell(new PeerEndpoint.Close(reason, adapter)));
  }

  /**
   * Closes the requester side: every endpoint is asked to close, and {@code replyTo} is answered
   * once none is left.
   *
   * @param replyTo the close
   * @param reason why, for messages
   */
  public void closeRequesterSide(ActorRef<SideClosed> replyTo, String reason) {
    requesterClosers.add(replyTo);
    closeAll(reason);
    requesterClosers.answerIf(endpoints.isEmpty());
  }

  /**
   * Drops an endpoint as {@code event} says, and answers the requester-side closes once none is
   * left.
   *
   * @param event what an endpoint told
   */
  public void on(Event event) {
    switch (event) {
      case EndpointClosed c -> endpoints.remove(c.peer());
      case EndpointStopped s -> endpoints.remove(s.peer(), s.endpoint());
      case EndpointRefused r -> {
        endpoints.remove(r.refused().peer(), r.refused().endpoint());
        r.refused()
            .endpoint()
            .tell(new PeerEndpoint.Close("its open failed", ctx.getSystem().ignoreRef()));
      }
    }
    answerRequesterClosers();
  }

  /**
   * A serving supervisor's handler of its endpoints' events: {@link #on}, and the supervisor stays
   * as it is.
   *
   * @param event what an endpoint told
   * @return the same behaviour
   */
  public Behavior<TransportCommand> onEvent(Event event) {
    on(event);
    return Behaviors.same();
  }

  /** Answers the requester-side closes if no endpoint is left. */
  public void answerRequesterClosers() {
    requesterClosers.answerIf(endpoints.isEmpty());
  }

  /**
   * Refuses an open, UNAVAILABLE.
   *
   * @param m the open
   * @param why what the refusal says
   */
  public static void refuse(OpenPeer m, String why) {
    m.replyTo().tell(new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, why));
  }

  /**
   * Refuses an open once the requester side of this engine was closed: UNAVAILABLE, {@link
   * #REQUESTER_SIDE_CLOSED}.
   *
   * @param m the open
   * @return the same behaviour
   */
  public static Behavior<TransportCommand> refuseRequesterSideClosed(OpenPeer m) {
    refuse(m, REQUESTER_SIDE_CLOSED);
    return Behaviors.same();
  }

  /**
   * Refuses a connection the control service handed over by closing it, for a transport that does
   * not serve it: SHM has no data connections, and TCP's source side is closed or stopping. The
   * peer learns of it from the closed connection.
   *
   * @param m the connection
   * @return the same behaviour
   */
  public static Behavior<TransportCommand> refuseByClosing(AdoptConnection m) {
    try {
      m.channel().close();
    } catch (IOException ignored) {
      // Refusing a connection: nothing else to do.
    }
    return Behaviors.same();
  }

  /**
   * The start of a stopping state, what every such transport answers alike while its endpoints
   * close: an open is refused, a further Shutdown waits with the first, and a requester-side close
   * waits for the endpoints. The supervisor adds what is its own.
   *
   * @param replyTo the Shutdowns that wait
   * @param again the stopping state entered again (it answers the closes once nothing is left)
   * @return the builder
   */
  public BehaviorBuilder<TransportCommand> stopping(
      List<ActorRef<ShutdownDone>> replyTo, Supplier<Behavior<TransportCommand>> again) {
    return Behaviors.receive(TransportCommand.class)
        .onMessage(
            OpenPeer.class,
            m -> {
              refuse(m, transport + " transport is stopping");
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.Shutdown.class,
            m -> {
              replyTo.add(m.replyTo());
              return Behaviors.same();
            })
        .onMessage(
            TransportCommand.CloseRequesterSide.class,
            m -> {
              requesterClosers.add(m.replyTo());
              return again.get();
            });
  }
}
