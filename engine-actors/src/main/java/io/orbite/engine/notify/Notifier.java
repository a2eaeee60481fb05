package io.orbite.engine.notify;

import io.orbite.config.NotificationConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.NotificationSender;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.NotifyCodec;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The engine's {@link NotificationSender}: one {@link NotifyLink} (one persistent control
 * connection) per peer incarnation it notifies, opened on first use on the link's own thread, never
 * on the caller's. The caller's thread encodes the frame and hands it to the link, which writes it
 * at once when the connection is up and idle (a non-blocking write: nothing is handed to another
 * thread on that path) and otherwise queues it for the link's thread.
 *
 * <p>Each notification is sent at most once: a link that ended before writing a byte of it resolves
 * it NOT_SENT; one that wrote some of it and then lost the connection, or heard no answer within
 * {@code notifications.answerTimeoutMillis}, resolves it UNKNOWN. Nothing is ever written again on
 * another connection. The futures complete on the link's thread (or the caller's, for what is
 * decided at once); their callbacks must not block.
 */
public final class Notifier implements NotificationSender {
  private final NotificationConfig config;
  private final int connectTimeoutMillis;
  private final byte[] identity;
  private final long epoch;
  private final EngineTally counters;
  private final Supplier<String> requesterClosed;
  private final FaultHooks hooks;
  private final ConcurrentHashMap<SegmentDescriptor, NotifyLink> links = new ConcurrentHashMap<>();
  private volatile boolean closed;
  private final io.orbite.engine.security.PeerAuth auth;

  /**
   * @param config the engine's notification settings
   * @param connectTimeoutMillis how long a link's connect may take ({@code
   *     tcp.connectTimeoutMillis})
   * @param identity this engine's identity, which every NOTIFY carries
   * @param epoch this incarnation's epoch
   * @param counters where sent notifications and opened connections are counted
   * @param requesterClosed why the requester side is closed, or null while it is open
   * @param hooks fault-injection points ({@link FaultHooks#NONE} but in qualification tests)
   * @param auth the handshake every notification connection opens with when this engine
   *     authenticates
   */
  public Notifier(
      NotificationConfig config,
      int connectTimeoutMillis,
      EngineIdentity identity,
      long epoch,
      EngineTally counters,
      Supplier<String> requesterClosed,
      FaultHooks hooks,
      io.orbite.engine.security.PeerAuth auth) {
    this.auth = auth;
    this.config = config;
    this.connectTimeoutMillis = connectTimeoutMillis;
    this.identity = toArray(identity.encode());
    this.epoch = epoch;
    this.counters = counters;
    this.requesterClosed = requesterClosed;
    this.hooks = hooks;
  }

  FaultHooks hooks() {
    return hooks;
  }

  NotificationConfig config() {
    return config;
  }

  io.orbite.engine.security.PeerAuth auth() {
    return auth;
  }

  int connectTimeoutMillis() {
    return connectTimeoutMillis;
  }

  EngineTally counters() {
    return counters;
  }

  /** Why the requester side is closed (nothing may be sent), or null while it is open. */
  public String requesterClosed() {
    return requesterClosed.get();
  }

  /** How long a blocking caller may wait for any result: connect, answer and some margin. */
  public long resultWithinMillis() {
    return connectTimeoutMillis + (long) config.answerTimeoutMillis() + 5_000;
  }

  @Override
  public void check(Notification notification) {
    tagOf(notification);
  }

  /** The checked tag in UTF-8. */
  private byte[] tagOf(Notification n) {
    if (n == null) {
      throw invalid("the notification is null");
    }
    byte[] tag;
    try {
      tag = NotifyCodec.tagBytes(n.tag());
    } catch (CharacterCodingException e) {
      throw invalid("the tag is not valid Unicode (an unpaired surrogate?)");
    }
    if (tag.length > config.maxTagBytes()) {
      throw invalid(
          "the tag of "
              + tag.length
              + " bytes of UTF-8 is over notifications.maxTagBytes ("
              + config.maxTagBytes()
              + ")");
    }
    if (n.length() > config.maxPayloadBytes()) {
      throw invalid(
          "the payload of "
              + n.length()
              + " bytes is over notifications.maxPayloadBytes ("
              + config.maxPayloadBytes()
              + ")");
    }
    return tag;
  }

  @Override
  public CompletableFuture<NotificationResult> send(PeerSegment peer, Notification notification) {
    CompletableFuture<NotificationResult> result = new CompletableFuture<>();
    byte[] tag;
    try {
      tag = tagOf(notification);
    } catch (TransferException e) {
      return CompletableFuture.completedFuture(notSent(ErrorKind.INVALID_ARGUMENT, e.getMessage()));
    }
    String refusal = refusal(peer);
    if (refusal != null) {
      ErrorKind kind =
          peer == null || peer.channel().transport() == Transport.FILE
              ? ErrorKind.INVALID_ARGUMENT
              : closed || requesterClosed.get() != null
                  ? ErrorKind.UNAVAILABLE
                  : peer.channel().gate().refusalKind();
      return CompletableFuture.completedFuture(notSent(kind, refusal));
    }
    SegmentDescriptor to = peer.descriptor();
    ByteBuffer frame = NotifyCodec.encode(to.epoch(), epoch, identity, tag, notification.bytes());
    while (true) {
      NotifyLink link = links.computeIfAbsent(to, d -> NotifyLink.start(this, d));
      if (link.offer(frame, result)) {
        return result;
      }
      // The link ended before it took the frame: nothing of it was sent, so a fresh link may.
      links.remove(to, link);
      if (closed) {
        return CompletableFuture.completedFuture(
            notSent(ErrorKind.UNAVAILABLE, "the engine is closing"));
      }
    }
  }

  /** Why nothing may be sent to {@code peer} now, or null. */
  private String refusal(PeerSegment peer) {
    if (peer == null) {
      return "the segment is null";
    }
    if (peer.channel().transport() == Transport.FILE) {
      return peer.label() + " is a file segment: there is no peer to notify";
    }
    if (closed) {
      return "the engine is closing";
    }
    String requester = requesterClosed.get();
    if (requester != null) {
      return requester;
    }
    ChannelGate gate = peer.channel().gate();
    return gate.active() ? null : gate.refusal();
  }

  /** A link ended: the next notification to its peer opens a fresh one. */
  void ended(SegmentDescriptor peer, NotifyLink link) {
    links.remove(peer, link);
  }

  /** Ends every link: what was never written is NOT_SENT, what was and is unanswered UNKNOWN. */
  public void close() {
    closed = true;
    List.copyOf(links.values()).forEach(NotifyLink::close);
  }

  /** What a NOTIFY_ACK's status and detail say, from {@code peer}. */
  static NotificationResult answered(int status, String detail, SegmentDescriptor peer) {
    if (status == 0) {
      return NotificationResult.DELIVERED;
    }
    ErrorKind kind = ErrorKind.fromCode(status);
    if (kind == null) {
      kind = ErrorKind.PROTOCOL;
    }
    return new NotificationResult(
        NotificationResult.State.REFUSED,
        kind,
        detail.isEmpty() ? peer + " refused it: " + kind : detail);
  }

  static NotificationResult notSent(ErrorKind kind, String detail) {
    return new NotificationResult(NotificationResult.State.NOT_SENT, kind, detail);
  }

  static NotificationResult unknown(ErrorKind kind, String detail) {
    return new NotificationResult(NotificationResult.State.UNKNOWN, kind, detail);
  }

  private static TransferException invalid(String what) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, "notify: " + what);
  }

  private static byte[] toArray(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }
}
