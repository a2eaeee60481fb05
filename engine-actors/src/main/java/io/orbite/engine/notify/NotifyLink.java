package io.orbite.engine.notify;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import io.orbite.engine.wire.FrameType;
import io.orbite.engine.wire.NotifyCodec;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The one control connection to one peer incarnation that notifications go over, with its own
 * thread ({@code orbite-notify-<peer>}): it connects (blocking, with {@code
 * tcp.connectTimeoutMillis}), then waits in a selector for answers, for room to write what the
 * callers could not, and for the earliest answer deadline. Several notifications may be in flight;
 * each NOTIFY carries the next sequence number and its NOTIFY_ACK echoes it.
 *
 * <p>A caller's thread writes its frame itself, under the link's lock and without blocking (the
 * channel is non-blocking), when the connection is up and nothing is queued before it; whatever it
 * could not write is queued and written by the link's thread. A frame is "started" once a byte of
 * it reached the socket: a frame never started resolves NOT_SENT when the link ends or its deadline
 * passes (it is dropped from the queue, so it is never sent later); a started one resolves UNKNOWN
 * (it may have been delivered) and is never written again.
 */
final class NotifyLink implements Runnable {
  /** Most notifications in flight on one link; past it a new one is NOT_SENT at once. */
  static final int MAX_PENDING = 65_536;

  /** Most bytes queued unwritten on one link; past it a new notification is NOT_SENT at once. */
  static final long MAX_UNSENT_BYTES = 64L << 20;

  /** One notification on its way. */
  private static final class Outgoing {
    final long sequence;
    final ByteBuffer frame;
    final CompletableFuture<NotificationResult> result;
    final long deadline;
    boolean started;

    Outgoing(
        long sequence,
        ByteBuffer frame,
        CompletableFuture<NotificationResult> result,
        long deadline) {
      this.sequence = sequence;
      this.frame = frame;
      this.result = result;
      this.deadline = deadline;
    }
  }

  private final Notifier owner;
  private final SegmentDescriptor peer;
  private final long answerTimeoutNanos;

  // Guarded by this link's monitor.
  private final LinkedHashMap<Long, Outgoing> pending = new LinkedHashMap<>();
  private final ArrayDeque<Outgoing> unsent = new ArrayDeque<>();
  private long unsentBytes;
  private long nextSequence = 1;
  private SocketChannel channel;

  /** The connection as frames move over it: {@link #channel}, or TLS over it. */
  private Conduit conduit;

  private Selector selector;
  private SelectionKey key;
  private boolean ended;

  /** The connection while it is being made, so that close() can abort the connect. */
  private volatile SocketChannel connecting;

  private volatile boolean closing;

  private NotifyLink(Notifier owner, SegmentDescriptor peer) {
    this.owner = owner;
    this.peer = peer;
    this.answerTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(owner.config().answerTimeoutMillis());
  }

  /** A new link to {@code peer}, its thread started (it connects at once). */
  static NotifyLink start(Notifier owner, SegmentDescriptor peer) {
    NotifyLink link = new NotifyLink(owner, peer);
    Thread.ofPlatform().daemon().name("orbite-notify-" + peer).start(link);
    return link;
  }

  /**
   * Takes a frame made by {@link NotifyCodec#encode} and the future its result completes.
   *
   * @return false when the link has ended: nothing of the frame was sent, and the caller may give
   *     it to a fresh link
   */
  boolean offer(ByteBuffer frame, CompletableFuture<NotificationResult> result) {
    NotificationResult refused = null;
    synchronized (this) {
      if (ended) {
        return false;
      }
      if (pending.size() >= MAX_PENDING || unsentBytes + frame.remaining() > MAX_UNSENT_BYTES) {
        refused =
            Notifier.notSent(
                ErrorKind.RESOURCE_EXHAUSTED,
                "too many notifications unanswered on the connection to "
                    + peer
                    + " ("
                    + pending.size()
                    + ", "
                    + unsentBytes
                    + " bytes unwritten)");
      } else {
        long sequence = nextSequence++;
        NotifyCodec.sequence(frame, sequence);
        Outgoing o = new Outgoing(sequence, frame, result, System.nanoTime() + answerTimeoutNanos);
        pending.put(sequence, o);
        unsent.addLast(o);
        unsentBytes += frame.remaining();
        if (channel != null && unsent.size() == 1) {
          try {
            flushLocked();
          } catch (IOException e) {
            // The link's thread finds the connection closed and ends the link.
            closeQuietly(channel);
            selector.wakeup();
          }
        }
      }
    }
    if (refused != null) {
      result.complete(refused);
    }
    return true;
  }

  /** Ends the link from outside (the engine closes). */
  void close() {
    closing = true;
    SocketChannel c = connecting;
    if (c != null) {
      closeQuietly(c); // aborts a connect under way
    }
    synchronized (this) {
      if (selector != null) {
        selector.wakeup();
      }
    }
  }

  @Override
  public void run() {
    String why;
    ErrorKind kind;
    try {
      connect();
    } catch (TransferException e) { // the handshake: refused, or the peer failed to prove itself
      end(
          closing ? ErrorKind.UNAVAILABLE : e.kind(),
          closing ? "the engine is closing" : e.getMessage());
      return;
    } catch (IOException | RuntimeException e) { // an unresolvable host is unchecked
      end(
          ErrorKind.UNAVAILABLE,
          closing
              ? "the engine is closing"
              : "could not connect to " + peer.endpoint() + " for notifications: " + e);
      return;
    }
    ByteBuffer in = ByteBuffer.allocate(8192);
    int[] ready = new int[1];
    try {
      while (!closing && channel.isOpen()) {
        ready[0] = 0;
        if (conduit.buffered()) {
          // Answers already here (under TLS) wake no selector.
          selector.selectNow(k -> ready[0] = k.readyOps());
          ready[0] |= SelectionKey.OP_READ;
        } else {
          selector.select(k -> ready[0] = k.readyOps(), selectTimeoutMillis());
        }
        if ((ready[0] & SelectionKey.OP_READ) != 0 && !readAnswers(in)) {
          break;
        }
        if ((ready[0] & SelectionKey.OP_WRITE) != 0) {
          synchronized (this) {
            flushLocked();
          }
        }
        expire();
      }
      kind = closing ? ErrorKind.UNAVAILABLE : ErrorKind.PEER_LOST;
      why = closing ? "the engine is closing" : "the connection to " + peer + " was closed";
    } catch (IOException e) {
      kind = ErrorKind.PEER_LOST;
      why = "the connection to " + peer + " broke: " + e;
    } catch (FrameRejectedException e) {
      owner.counters().increment(Count.FRAMES_REJECTED);
      kind = ErrorKind.PROTOCOL;
      why = peer + " answered outside the protocol: " + e.describe();
    } catch (RuntimeException e) {
      // Never leave a notification unresolved: whatever went wrong ends the link.
      kind = ErrorKind.PEER_LOST;
      why = "the notification link to " + peer + " failed: " + e;
    }
    end(kind, why);
  }

  private void connect() throws IOException {
    SocketChannel c = SocketChannel.open();
    connecting = c;
    try {
      if (closing) {
        throw new IOException("closing");
      }
      c.setOption(StandardSocketOptions.TCP_NODELAY, true);
      c.socket()
          .connect(new InetSocketAddress(peer.host(), peer.port()), owner.connectTimeoutMillis());
      Conduit cd = owner.auth().secure(c, "notifications to " + peer, owner.connectTimeoutMillis());
      if (owner.auth().required()) {
        owner.auth().connect(cd, "notifications to " + peer, owner.connectTimeoutMillis());
      }
      c.configureBlocking(false);
      Selector s = Selector.open();
      owner.counters().increment(Count.CONNECTIONS_OPENED);
      expire(); // what waited past its deadline for the connect is NOT_SENT, not written late
      synchronized (this) {
        channel = c;
        conduit = cd;
        selector = s;
        key = c.register(s, SelectionKey.OP_READ);
        flushLocked();
      }
      owner
          .hooks()
          .notificationLinkStarted(
              peer.toString(),
              () -> {
                closeQuietly(c);
                s.wakeup();
              });
    } catch (IOException | RuntimeException e) {
      closeQuietly(c);
      throw e;
    } finally {
      connecting = null;
    }
  }

  /** Until the earliest answer deadline (every deadline is the same time after its send). */
  private synchronized long selectTimeoutMillis() {
    Iterator<Outgoing> first = pending.values().iterator();
    long until = first.hasNext() ? first.next().deadline - System.nanoTime() : answerTimeoutNanos;
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(until) + 1);
  }

  /** Writes queued frames until done or the socket is full; then waits for room or not. */
  private void flushLocked() throws IOException {
    while (!unsent.isEmpty()) {
      Outgoing o = unsent.peekFirst();
      int before = o.frame.position();
      conduit.write(o.frame);
      unsentBytes -= o.frame.position() - before;
      if (!o.started && o.frame.position() > 0) {
        o.started = true;
        owner.counters().increment(Count.NOTIFICATIONS_SENT);
      }
      if (o.frame.hasRemaining()) {
        interest(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
        selector.wakeup();
        return;
      }
      unsent.pollFirst();
    }
    if (!conduit.flush()) {
      interest(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
      selector.wakeup();
      return;
    }
    interest(SelectionKey.OP_READ);
  }

  /** Sets what the link's thread waits for; a connection closed under it is a broken one. */
  private void interest(int ops) throws IOException {
    try {
      key.interestOps(ops);
    } catch (CancelledKeyException e) {
      throw new ClosedChannelException();
    }
  }

  /**
   * Reads what the peer answered and resolves those notifications.
   *
   * @return false at the end of the stream
   */
  private boolean readAnswers(ByteBuffer in) throws IOException, FrameRejectedException {
    int n = conduit.read(in);
    if (n < 0) {
      return false;
    }
    in.flip();
    List<Runnable> resolved = new ArrayList<>();
    while (in.remaining() >= FrameCodec.HEADER_BYTES) {
      int at = in.position();
      FrameCodec.check(in, at, in.remaining(), 0);
      if (FrameCodec.type(in, at) != FrameType.NOTIFY_ACK) {
        throw new FrameRejectedException(
            Reason.UNEXPECTED_TYPE, FrameCodec.type(in, at) + " on a notification connection");
      }
      int length = (int) FrameCodec.payloadLength(in, at);
      if (in.remaining() < FrameCodec.HEADER_BYTES + length) {
        break;
      }
      int status = FrameCodec.status(in, at);
      long epoch = FrameCodec.epoch(in, at);
      if (status == 0 && epoch != peer.epoch()) {
        throw new FrameRejectedException(
            Reason.WRONG_EPOCH,
            "an acceptance in the name of epoch "
                + Long.toHexString(epoch)
                + ", not "
                + Long.toHexString(peer.epoch()));
      }
      String detail = NotifyCodec.detail(in.slice(at + FrameCodec.HEADER_BYTES, length));
      long sequence = FrameCodec.requestId(in, at);
      in.position(at + FrameCodec.HEADER_BYTES + length);
      Outgoing o;
      synchronized (this) {
        o = pending.remove(sequence);
      }
      if (o != null) { // null: its deadline passed, it is UNKNOWN already
        NotificationResult r = Notifier.answered(status, detail, peer);
        resolved.add(() -> o.result.complete(r));
      }
    }
    in.compact();
    resolved.forEach(Runnable::run);
    return true;
  }

  /** Resolves the notifications whose answer deadline passed. */
  private void expire() {
    long now = System.nanoTime();
    List<Outgoing> late = new ArrayList<>();
    synchronized (this) {
      Iterator<Outgoing> it = pending.values().iterator();
      while (it.hasNext()) {
        Outgoing o = it.next();
        if (o.deadline - now > 0) {
          break;
        }
        it.remove();
        if (!o.started) {
          unsent.remove(o); // never written: it never will be
          unsentBytes -= o.frame.remaining();
        }
        late.add(o);
      }
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(answerTimeoutNanos);
    for (Outgoing o : late) {
      o.result.complete(
          o.started
              ? Notifier.unknown(
                  ErrorKind.TIMEOUT,
                  peer
                      + " did not answer within notifications.answerTimeoutMillis ("
                      + millis
                      + "); it may have been delivered, and it is not sent again")
              : Notifier.notSent(
                  ErrorKind.TIMEOUT,
                  "the connection to "
                      + peer
                      + " took no byte of it within notifications.answerTimeoutMillis ("
                      + millis
                      + ")"));
    }
  }

  /** The link ends: every notification still on it is resolved, and the connection closed. */
  private void end(ErrorKind kind, String why) {
    List<Outgoing> left;
    synchronized (this) {
      ended = true;
      left = new ArrayList<>(pending.values());
      pending.clear();
      unsent.clear();
      unsentBytes = 0;
      if (channel != null) {
        closeQuietly(channel);
      }
      if (selector != null) {
        try {
          selector.close();
        } catch (IOException ignored) {
          // Nothing to report about a selector that fails to close.
        }
      }
    }
    owner.ended(peer, this);
    for (Outgoing o : left) {
      o.result.complete(
          o.started
              ? Notifier.unknown(
                  kind == ErrorKind.UNAVAILABLE ? ErrorKind.UNAVAILABLE : ErrorKind.PEER_LOST,
                  why + "; sent, unanswered: it may have been delivered, and it is not sent again")
              : Notifier.notSent(kind, why + "; never sent"));
    }
  }

  private static void closeQuietly(SocketChannel c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // Closing a broken socket has nothing left to report.
    }
  }
}
