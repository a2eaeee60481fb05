package io.orbite.engine.notify;

import io.orbite.config.NotificationConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.NotifyCodec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The receiving side of notifications, one per engine: its inbox, its bounds, and the control
 * connections that turned into notification connections (a first NOTIFY). Each such connection is
 * served on the thread the control service started for it ({@link NotifyConnection}), which puts
 * every accepted notification straight into the inbox and answers NOTIFY_ACK. At most {@code
 * budgets.maxEndpoints} connections at once; one more has its first NOTIFY refused
 * RESOURCE_EXHAUSTED and is closed.
 */
public final class NotifyReceiver {
  private final NotificationInbox inbox;
  private final NotificationConfig config;
  private final SegmentDescriptor self;
  private final EngineTally counters;
  private final int maxConnections;
  private final Set<SocketChannel> open = ConcurrentHashMap.newKeySet();

  /**
   * @param config the engine's notification settings
   * @param self this incarnation: NOTIFYs naming another epoch are refused EPOCH_MISMATCH
   * @param counters where receipts and refusals are counted
   * @param maxConnections most notification connections served at once
   */
  public NotifyReceiver(
      NotificationConfig config, SegmentDescriptor self, EngineTally counters, int maxConnections) {
    this.inbox = new NotificationInbox(config.inboxCapacity(), config.inboxBytes());
    this.config = config;
    this.self = self;
    this.counters = counters;
    this.maxConnections = maxConnections;
  }

  /** The engine's inbox. */
  public NotificationInbox inbox() {
    return inbox;
  }

  NotificationConfig config() {
    return config;
  }

  SegmentDescriptor self() {
    return self;
  }

  EngineTally counters() {
    return counters;
  }

  /**
   * Serves NOTIFY frames on {@code conduit} (blocking) until it ends; the caller closes it after.
   *
   * @param conduit a connection whose first NOTIFY's header was read
   * @param firstHeader that header, 56 bytes
   * @throws FrameRejectedException when a frame breaks the protocol (the connection must close)
   * @throws IOException when the connection fails
   */
  public void serve(Conduit conduit, ByteBuffer firstHeader)
      throws IOException, FrameRejectedException {
    SocketChannel channel = conduit.socket();
    open.add(channel);
    try {
      if (open.size() > maxConnections) {
        counters.increment(Count.NOTIFICATIONS_REFUSED);
        ByteBuffer ack =
            NotifyCodec.ack(
                FrameCodec.requestId(firstHeader, 0),
                self.epoch(),
                ErrorKind.RESOURCE_EXHAUSTED.code(),
                "too many notification connections to "
                    + self
                    + " (budgets.maxEndpoints "
                    + maxConnections
                    + ")");
        while (ack.hasRemaining()) {
          conduit.write(ack);
        }
        return;
      }
      new NotifyConnection(this, conduit).run(firstHeader);
    } finally {
      open.remove(channel);
    }
  }

  /** Closes every notification connection (the source side closes); their threads then end. */
  public void closeConnections() {
    for (SocketChannel c : open) {
      try {
        c.close();
      } catch (IOException ignored) {
        // Nothing to report about a socket that fails to close.
      }
    }
  }

  /** The engine closes: the inbox refuses from now on, and every connection is closed. */
  public void close() {
    inbox.close();
    closeConnections();
  }
}
