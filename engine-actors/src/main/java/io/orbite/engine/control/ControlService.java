package io.orbite.engine.control;

import io.orbite.engine.OwnerState;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.notify.NotifyReceiver;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.TransferLimits;
import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of the engine's single listener. Child of the EngineGuardian; its acceptor and
 * per-connection threads are plain threads it starts and stops (blocking accept never runs in a
 * mailbox). Connections answer Describe here; data-lane connections are handed to their transport's
 * supervisor.
 *
 * <p>States: {@link #serving}, {@link #stopping} (listener closed, waiting for the acceptor thread
 * to end; skipped when the acceptor already ended while serving), then {@link #stopped}.
 */
public final class ControlService {
  public sealed interface Command {}

  /**
   * Close the listener, every connection not yet handed to a transport and every notification
   * connection.
   */
  public record Stop(ActorRef<Stopped> replyTo) implements Command {}

  public record Stopped() {}

  private enum AcceptorEnded implements Command {
    INSTANCE
  }

  private final ActorContext<Command> ctx;
  private final OwnerBoard board;
  private final ServerSocketChannel listener;
  private final Set<SocketChannel> unclaimed = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private final int maxUnclaimed;
  private final NotifyReceiver notifications;

  private ControlService(
      ActorContext<Command> ctx,
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registry,
      TransferLimits limits,
      Map<Transport, ActorRef<TransportCommand>> transports,
      EngineTally counters,
      OwnerBoard board,
      int firstFrameTimeoutMillis,
      int maxUnclaimed,
      NotifyReceiver notifications,
      PeerAuth auth) {
    this.ctx = ctx;
    this.notifications = notifications;
    this.board = board;
    this.maxUnclaimed = maxUnclaimed;
    this.listener = listener;
    ActorRef<Command> me = ctx.getSelf();
    this.acceptor =
        Thread.ofPlatform()
            .daemon()
            .name("orbite-acceptor-" + self.port())
            .unstarted(
                () -> {
                  try {
                    while (true) {
                      SocketChannel channel = listener.accept();
                      counters.increment(Count.CONNECTIONS_ACCEPTED);
                      if (unclaimed.size() >= maxUnclaimed) {
                        // C9: connections that have not yet said what they are (Describe or a lane)
                        // are
                        // bounded; beyond the bound a new one is closed at once.
                        counters.increment(Count.CONNECTIONS_REFUSED);
                        closeQuietly(channel);
                        continue;
                      }
                      channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                      unclaimed.add(channel);
                      Thread.ofPlatform()
                          .daemon()
                          .name("orbite-control-" + self.port())
                          .start(
                              new ControlConnection(
                                  channel,
                                  self,
                                  registry,
                                  limits,
                                  transports,
                                  counters,
                                  firstFrameTimeoutMillis,
                                  unclaimed::remove,
                                  notifications,
                                  auth));
                    }
                  } catch (ClosedChannelException e) {
                    // The listener was closed by Stop: the normal way out.
                  } catch (IOException e) {
                    ctx.getLog().error("listener on port {} failed: {}", self.port(), e.toString());
                  } finally {
                    me.tell(AcceptorEnded.INSTANCE);
                  }
                });
  }

  /**
   * @param listener a bound listener; the ControlService owns it from now on
   * @param limits what this engine's Describe answers advertise as the largest single transfers it
   *     takes; null advertises none
   * @param maxUnclaimed how many accepted connections may wait for their first frame at once
   * @param notifications serves the connections that carry notifications to this engine
   * @param auth the handshake every connection opens with when this engine authenticates
   */
  public static Behavior<Command> create(
      ServerSocketChannel listener,
      SegmentDescriptor self,
      RegistryView registry,
      TransferLimits limits,
      Map<Transport, ActorRef<TransportCommand>> transports,
      EngineTally counters,
      OwnerBoard board,
      int firstFrameTimeoutMillis,
      int maxUnclaimed,
      NotifyReceiver notifications,
      PeerAuth auth) {
    return Behaviors.setup(
        ctx -> {
          ControlService service =
              new ControlService(
                  ctx,
                  listener,
                  self,
                  registry,
                  limits,
                  Map.copyOf(transports),
                  counters,
                  board,
                  firstFrameTimeoutMillis,
                  maxUnclaimed,
                  notifications,
                  auth);
          service.acceptor.start();
          String security = securityLine(auth);
          return OwnerBoard.reporting(
              board,
              () ->
                  new OwnerBoard.Report(
                      "ControlService",
                      Map.of(
                          "unclaimedConnections",
                          (long) service.unclaimed.size(),
                          "peersRefused",
                          counters.sum(Count.PEERS_REFUSED)),
                      "listening on " + self.endpoint() + security),
              service.serving(true));
        });
  }

  /**
   * What the dashboard's row adds of how peers are authenticated: a warning under {@code
   * security.mode "open"}, the credentials' sources when authenticating, nothing on a loopback-only
   * listener without credentials.
   */
  static String securityLine(PeerAuth auth) {
    if (auth.credentials().open()) {
      return "; WARNING: security.mode \"open\": peers are not authenticated";
    }
    if (!auth.required()) {
      return "";
    }
    return "; peers authenticated: " + auth.credentials();
  }

  /**
   * Serving; {@code accepting} until the acceptor thread has ended (the listener failed under it),
   * after which a Stop has no thread left to wait for. Shown serving either way.
   */
  private Behavior<Command> serving(boolean accepting) {
    return board.in(
        OwnerState.SERVING,
        Behaviors.receive(Command.class)
            .onMessage(Stop.class, m -> onStop(m, accepting))
            .onMessageEquals(
                AcceptorEnded.INSTANCE,
                () -> {
                  ctx.getLog()
                      .warn(
                          "acceptor ended while serving; the engine no longer accepts"
                              + " connections");
                  return serving(false);
                })
            .build());
  }

  private Behavior<Command> onStop(Stop m, boolean accepting) {
    closeQuietly(listener);
    unclaimed.forEach(ControlService::closeQuietly);
    notifications.closeConnections();
    if (!accepting) {
      m.replyTo().tell(new Stopped());
      return stopped();
    }
    // The acceptor thread always ends by telling AcceptorEnded: wait for it even if the thread has
    // already gone, so that message is never left to dead letters.
    return stopping(new ArrayList<>(List.of(m.replyTo())));
  }

  /** Listener closed; every Stop is answered once the acceptor thread has ended. */
  private Behavior<Command> stopping(List<ActorRef<Stopped>> waiters) {
    return board.in(
        OwnerState.STOPPING,
        Behaviors.receive(Command.class)
            .onMessageEquals(
                AcceptorEnded.INSTANCE,
                () -> {
                  waiters.forEach(w -> w.tell(new Stopped()));
                  return stopped();
                })
            .onMessage(
                Stop.class,
                m -> {
                  waiters.add(m.replyTo());
                  return Behaviors.same();
                })
            .build());
  }

  /**
   * Nothing is served any more. The actor stays until its guardian stops, so a later Stop (the
   * source side closed first, then the whole engine) is answered at once instead of dead-lettered.
   */
  private Behavior<Command> stopped() {
    return board.in(
        OwnerState.STOPPED,
        Behaviors.receive(Command.class)
            .onMessage(
                Stop.class,
                m -> {
                  m.replyTo().tell(new Stopped());
                  return Behaviors.same();
                })
            .onMessageEquals(AcceptorEnded.INSTANCE, Behaviors::same)
            .build());
  }

  private static void closeQuietly(java.nio.channels.Channel c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // Nothing to report about a socket that fails to close.
    }
  }
}
