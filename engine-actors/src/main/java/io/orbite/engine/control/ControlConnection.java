package io.orbite.engine.control;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.notify.NotifyReceiver;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.DescribeCodec;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.engine.wire.TransferLimits;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one accepted connection until it is handed to a transport or closed: reads the first frame
 * (refusing foreign bytes before the rest of a header arrives), answers DESCRIBE requests from the
 * published registry, passes a HELLO's connection to the transport it names, with the requester's
 * identity the HELLO carries (checked here, once for every transport), and serves a connection
 * whose first frame is a NOTIFY as a notification connection ({@link NotifyReceiver}). With TLS,
 * the connection's first byte must open a TLS handshake, and everything after it runs inside TLS; a
 * connection that starts with a plain frame is refused. Runs on its own thread, started by the
 * ControlService.
 */
final class ControlConnection implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(ControlConnection.class);

  private final SocketChannel channel;
  private final SegmentDescriptor self;
  private final RegistryView registry;
  private final TransferLimits limits;
  private final Map<Transport, ActorRef<TransportCommand>> transports;
  private final EngineTally counters;
  private final int firstFrameTimeoutMillis;
  private final Consumer<SocketChannel> onEnd;
  private final NotifyReceiver notifications;
  private final PeerAuth auth;

  /** The connection as frames move over it: the socket, or TLS over it. */
  private Conduit conduit;

  /** Who this connection's handshake proved its requester to be; null until then, or ever. */
  private AuthenticatedPeer peer;

  /** A connection that began in the clear on an engine that requires TLS: refused, whatever. */
  private boolean plainUnderTls;

  /** In the handshake: a connection that ends now (stalled, broken, garbage) failed it. */
  private boolean handshaking;

  ControlConnection(
      SocketChannel channel,
      SegmentDescriptor self,
      RegistryView registry,
      TransferLimits limits,
      Map<Transport, ActorRef<TransportCommand>> transports,
      EngineTally counters,
      int firstFrameTimeoutMillis,
      Consumer<SocketChannel> onEnd,
      NotifyReceiver notifications,
      PeerAuth auth) {
    this.auth = auth;
    this.channel = channel;
    this.self = self;
    this.registry = registry;
    this.limits = limits;
    this.transports = transports;
    this.counters = counters;
    this.firstFrameTimeoutMillis = firstFrameTimeoutMillis;
    this.onEnd = onEnd;
    this.notifications = notifications;
  }

  @Override
  public void run() {
    boolean handedOver = false;
    // The handshake and the first frame after it share one deadline, so a peer that trickles its
    // bytes holds its connection (one of budgets.maxEndpoints unclaimed ones) no longer.
    long deadline = System.nanoTime() + firstFrameTimeoutMillis * 1_000_000L;
    try {
      channel.socket().setSoTimeout(firstFrameTimeoutMillis);
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      ByteBuffer h = ByteBuffer.wrap(header);
      int got = 0;
      if (auth.tls()) {
        int first = firstByte(deadline);
        if (first < 0) {
          return;
        }
        // From here a connection that ends (stalled, broken) failed its TLS handshake.
        handshaking = first == PeerAuth.TLS_HANDSHAKE_BYTE;
        if (first != PeerAuth.TLS_HANDSHAKE_BYTE) {
          // A peer speaking frames in the clear: its first frame is answered PERMISSION_DENIED
          // below, as any frame without the handshake is.
          header[0] = (byte) first;
          got = 1;
          conduit = Conduit.plain(channel);
          plainUnderTls = true;
        } else {
          try {
            conduit = auth.secureAccepted(channel, first, deadline);
          } catch (SSLException e) {
            handshaking = false;
            refuseUnauthenticated("its TLS handshake was refused: " + e.getMessage());
            return;
          }
        }
        handshaking = false;
      } else {
        conduit = Conduit.plain(channel);
      }
      InputStream in = conduit.in();
      OutputStream out = conduit.out();
      while (true) {
        if (!readHeader(in, header, h, got, deadline)) {
          return;
        }
        got = 0;
        FrameType type = FrameCodec.type(h, 0);
        if (plainUnderTls) {
          // Not even the handshake runs outside TLS here.
          answerUnauthenticated(out, type, h, " (this engine requires TLS)");
          return;
        }
        if (type == FrameType.AUTH_HELLO && peer == null) {
          handshaking = true;
          try {
            peer = auth.accept(conduit, h, deadline);
          } catch (PeerAuth.Refused e) {
            handshaking = false;
            refuseUnauthenticated("its handshake was refused: " + e.getMessage());
            return;
          }
          handshaking = false;
          continue;
        }
        if (auth.required() && peer == null) {
          // Before any payload is read: an unauthenticated peer learns nothing but the refusal.
          answerUnauthenticated(out, type, h, "");
          return;
        }
        if (type == FrameType.DESCRIBE_REQUEST) {
          answerDescribe(out, FrameCodec.requestId(h, 0));
          // Each further request on a Describe connection has the whole time again.
          deadline = System.nanoTime() + firstFrameTimeoutMillis * 1_000_000L;
        } else if (type == FrameType.HELLO) {
          handedOver = handOver(h, in, out);
          return;
        } else if (type == FrameType.NOTIFY) {
          // A notification connection from now on, served on this thread until it ends. Claimed
          // first: it leaves the bound of connections that have not said what they are (the
          // receiver bounds notification connections on its own).
          onEnd.accept(channel);
          channel.socket().setSoTimeout(0);
          notifications.serve(conduit, h);
          return;
        } else {
          reject(
              "first frame of a connection must be DESCRIBE_REQUEST, HELLO, NOTIFY or AUTH_HELLO,"
                  + " got "
                  + type);
          return;
        }
      }
    } catch (FrameRejectedException e) {
      reject(e.getMessage());
    } catch (SocketTimeoutException e) {
      LOG.debug(
          "control connection {}: no frame within {} ms, closing",
          remote(),
          firstFrameTimeoutMillis);
    } catch (IOException e) {
      LOG.debug("control connection {}: {}", remote(), e.toString());
    } finally {
      if (handshaking) {
        refuseUnauthenticated(
            "its handshake ended unfinished (closed, broken, or past its "
                + firstFrameTimeoutMillis
                + " ms)");
      }
      if (!handedOver) {
        closeQuietly();
      }
      onEnd.accept(channel);
    }
  }

  /**
   * Reads one header; refuses a foreign magic from its first four bytes. Returns false on EOF. Each
   * read waits only for what is left until {@code deadline}, so a peer that trickles a header one
   * byte at a time holds the connection no longer than one that sends nothing.
   */
  private boolean readHeader(InputStream in, byte[] header, ByteBuffer h, int got, long deadline)
      throws IOException, FrameRejectedException {
    while (got < FrameCodec.HEADER_BYTES) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        throw new SocketTimeoutException(
            "no whole frame within " + firstFrameTimeoutMillis + " ms");
      }
      channel.socket().setSoTimeout((int) Math.min(firstFrameTimeoutMillis, left));
      int want = got < 4 ? 4 - got : FrameCodec.HEADER_BYTES - got;
      int n = in.read(header, got, want);
      if (n < 0) {
        if (got == 0) {
          return false;
        }
        throw new FrameRejectedException(
            FrameRejectedException.Reason.TRUNCATED_HEADER,
            "connection closed after " + got + " of " + FrameCodec.HEADER_BYTES + " header bytes");
      }
      got += n;
      FrameCodec.check(h, 0, got, 0);
    }
    return true;
  }

  /** The connection's first byte, or -1 when it closes first; waits no later than the deadline. */
  private int firstByte(long deadline) throws IOException {
    long left = (deadline - System.nanoTime()) / 1_000_000L;
    if (left <= 0) {
      throw new SocketTimeoutException("no first byte within " + firstFrameTimeoutMillis + " ms");
    }
    channel.socket().setSoTimeout((int) Math.min(firstFrameTimeoutMillis, left));
    return channel.socket().getInputStream().read();
  }

  private void answerDescribe(OutputStream out, long requestId) throws IOException {
    // Readiness first, then the registrations: an answer that says ready lists every range
    // registered before markReady (see RegistryView#ready).
    boolean ready = registry.ready();
    Map<Long, Registration> visible = registry.snapshot();
    List<RemoteRegion> regions = new ArrayList<>(visible.size());
    SharedHost sharedHost = registry.sharedHost();
    List<SharedRegion> exports = new ArrayList<>();
    for (Registration r : visible.values()) {
      if (!r.allows(peer)) {
        // An allow-list that does not name this peer's proven name hides the range from it.
        continue;
      }
      regions.add(
          new RemoteRegion(r.regionId(), r.lengthBytes(), r.access(), r.name().orElse(null)));
      SharedBacking b = r.shared();
      if (sharedHost != null && b != null) {
        exports.add(
            new SharedRegion(
                r.regionId(), b.fd(), b.inode(), b.offset(), r.lengthBytes(), r.access()));
      }
    }
    SharedExports shared = sharedHost == null ? null : new SharedExports(sharedHost, exports);
    ByteBuffer payload =
        DescribeCodec.encode(
            new Description(
                self.host(),
                self.port(),
                self.epoch(),
                regions,
                shared,
                limits,
                registry.engineName(),
                ready));
    byte[] frame = new byte[FrameCodec.HEADER_BYTES + payload.remaining()];
    ByteBuffer f = ByteBuffer.wrap(frame);
    FrameCodec.encode(
        f,
        0,
        FrameType.DESCRIBE_RESPONSE,
        0,
        payload.remaining(),
        requestId,
        self.epoch(),
        0,
        0,
        0);
    f.put(FrameCodec.HEADER_BYTES, payload, 0, payload.remaining());
    out.write(frame);
    out.flush();
  }

  /**
   * Reads the HELLO's identity (its payload, bounded by the header check), then hands the
   * connection to the transport the HELLO names. A malformed identity is answered HELLO_ACK
   * PROTOCOL and the connection closed: a source must never guess who a requester is, since it
   * fences the other incarnations of whoever it names.
   */
  private boolean handOver(ByteBuffer hello, InputStream in, OutputStream out) throws IOException {
    EngineIdentity requester = null;
    int length = (int) FrameCodec.payloadLength(hello, 0);
    if (length > 0) {
      byte[] payload = new byte[length];
      new java.io.DataInputStream(in).readFully(payload);
      try {
        requester = EngineIdentity.decode(ByteBuffer.wrap(payload));
      } catch (FrameRejectedException e) {
        refuseHello(out, hello, e.getMessage());
        return false;
      }
    }
    if (peer != null
        && (requester == null
            || !requester.name().equals(peer.name())
            || FrameCodec.regionId(hello, 0) != peer.epoch())) {
      // The HELLO must name the engine and the epoch the handshake proved, so no member opens
      // lanes (and fences incarnations) under another's name.
      refuseUnauthenticated(
          "HELLO names "
              + (requester == null ? "no identity" : "'" + requester.name() + "'")
              + " with epoch "
              + Long.toHexString(FrameCodec.regionId(hello, 0))
              + ", not the handshake's '"
              + peer.name()
              + "' with epoch "
              + Long.toHexString(peer.epoch()));
      answer(out, FrameType.HELLO_ACK, hello, ErrorKind.PERMISSION_DENIED);
      return false;
    }
    long code = FrameCodec.count(hello, 0);
    Transport transport = Transport.fromCode(code);
    ActorRef<TransportCommand> target = transport == null ? null : transports.get(transport);
    if (target == null) {
      reject("HELLO for transport code " + code + ", which this engine does not serve");
      return false;
    }
    channel.socket().setSoTimeout(0);
    ByteBuffer copy =
        ByteBuffer.allocate(FrameCodec.HEADER_BYTES).put(0, hello, 0, FrameCodec.HEADER_BYTES);
    // Claimed now: it leaves the unclaimed bound before the transport can answer its HELLO, so a
    // peer that connects again as soon as it has its HELLO_ACK never finds this one still counted
    // (with budgets.maxEndpoints 1, it would be closed unanswered). onEnd runs again at the end; a
    // second removal does nothing.
    onEnd.accept(channel);
    target.tell(new TransportCommand.AdoptConnection(conduit, copy, requester, peer));
    return true;
  }

  /** Answers a HELLO that breaks the protocol with HELLO_ACK PROTOCOL, so the peer learns why. */
  private void refuseHello(OutputStream out, ByteBuffer hello, String why) throws IOException {
    reject(why);
    answer(out, FrameType.HELLO_ACK, hello, ErrorKind.PROTOCOL);
  }

  /**
   * Refuses a first frame sent without the handshake this engine requires: DESCRIBE_REQUEST, HELLO
   * and NOTIFY are answered PERMISSION_DENIED in their own answer's type (without reading a byte of
   * their payload), anything else only closed.
   */
  private void answerUnauthenticated(OutputStream out, FrameType type, ByteBuffer h, String detail)
      throws IOException {
    refuseUnauthenticated(type + " without the authentication handshake" + detail);
    FrameType answer =
        switch (type) {
          case DESCRIBE_REQUEST -> FrameType.DESCRIBE_RESPONSE;
          case HELLO -> FrameType.HELLO_ACK;
          case NOTIFY -> FrameType.NOTIFY_ACK;
          case AUTH_HELLO -> FrameType.AUTH_CHALLENGE;
          default -> null;
        };
    if (answer != null) {
      answer(out, answer, h, ErrorKind.PERMISSION_DENIED);
    }
  }

  private void answer(OutputStream out, FrameType type, ByteBuffer request, ErrorKind status)
      throws IOException {
    byte[] ack = new byte[FrameCodec.HEADER_BYTES];
    FrameCodec.encode(
        ByteBuffer.wrap(ack),
        0,
        type,
        status.code(),
        0,
        FrameCodec.requestId(request, 0),
        self.epoch(),
        0,
        0,
        0);
    out.write(ack);
    out.flush();
  }

  /** Counts and logs a peer refused for want of authentication (C10: everyone else is served). */
  private void refuseUnauthenticated(String why) {
    counters.increment(Count.PEERS_REFUSED);
    LOG.warn("control connection {}: PERMISSION_DENIED: {}", remote(), why);
  }

  private void reject(String why) {
    counters.increment(Count.FRAMES_REJECTED);
    LOG.warn("control connection {}: refused: {}", remote(), why);
  }

  private String remote() {
    try {
      return String.valueOf(channel.getRemoteAddress());
    } catch (IOException e) {
      return "(closed)";
    }
  }

  private void closeQuietly() {
    try {
      channel.close();
    } catch (IOException ignored) {
      // Closing a broken socket has nothing left to report.
    }
  }
}
