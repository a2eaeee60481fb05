package io.orbite.transport.tcp;

import io.orbite.config.TcpConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.Transport;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * Opens one data lane: connect, then the HELLO handshake that names the peer incarnation (epoch)
 * the lane is for. A source of another epoch refuses with EPOCH_MISMATCH. Blocking; runs on the
 * engine's blocking-I/O executor, never in a mailbox.
 */
public final class LaneConnector {
  private LaneConnector() {}

  /** Opens TCP data lane {@code laneIndex} to {@code peer}, as {@code context}'s engine. */
  static Conduit connect(SegmentDescriptor peer, int laneIndex, TransportContext context) {
    return connect(peer, laneIndex, context, Transport.TCP);
  }

  /**
   * Opens a data connection of {@code transport} (its HELLO names it, so the peer's control service
   * hands the connection to that transport) to the incarnation {@code peer} names. The HELLO names
   * this engine's epoch and its {@link TransportContext#identity()}: a source that still serves an
   * older incarnation of this engine fences it before it answers.
   *
   * @throws TransferException EPOCH_MISMATCH when another incarnation answers, UNAVAILABLE or
   *     TIMEOUT when none does, PROTOCOL when the answer breaks the protocol
   */
  public static Conduit connect(
      SegmentDescriptor peer, int laneIndex, TransportContext context, Transport transport) {
    return connect(
        peer,
        laneIndex,
        context.localEpoch(),
        context.identity(),
        context.config().tcp(),
        transport,
        context.auth());
  }

  private static Conduit connect(
      SegmentDescriptor peer,
      int laneIndex,
      long localEpoch,
      EngineIdentity identity,
      TcpConfig tcp,
      Transport transport,
      PeerAuth auth) {
    SocketChannel channel = null;
    try {
      channel = SocketChannel.open();
      channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
      channel.setOption(StandardSocketOptions.SO_SNDBUF, tcp.socketBufferBytes());
      channel.setOption(StandardSocketOptions.SO_RCVBUF, tcp.socketBufferBytes());
      channel
          .socket()
          .connect(new InetSocketAddress(peer.host(), peer.port()), tcp.connectTimeoutMillis());
      Conduit conduit =
          auth.secure(channel, "lane " + laneIndex + " to " + peer, tcp.connectTimeoutMillis());
      if (auth.required()) {
        auth.connect(conduit, "lane " + laneIndex + " to " + peer, tcp.connectTimeoutMillis());
      }
      ByteBuffer payload = identity.encode();
      ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.remaining());
      hello.put(FrameCodec.HEADER_BYTES, payload, 0, payload.remaining());
      FrameCodec.encode(
          hello,
          0,
          FrameType.HELLO,
          0,
          payload.remaining(),
          laneIndex + 1L,
          peer.epoch(),
          localEpoch,
          laneIndex,
          transport.code());
      conduit.out().write(hello.array());
      channel.socket().setSoTimeout(tcp.connectTimeoutMillis());
      byte[] ack = new byte[FrameCodec.HEADER_BYTES];
      new DataInputStream(conduit.in()).readFully(ack);
      ByteBuffer a = ByteBuffer.wrap(ack);
      FrameCodec.check(a, 0, ack.length, 0);
      if (FrameCodec.type(a, 0) != FrameType.HELLO_ACK) {
        throw new TransferException(
            ErrorKind.PROTOCOL,
            "lane "
                + laneIndex
                + " to "
                + peer
                + ": answered "
                + FrameCodec.type(a, 0)
                + " to HELLO");
      }
      int status = FrameCodec.status(a, 0);
      if (status != 0) {
        ErrorKind kind = ErrorKind.fromCode(status);
        EpochRefused replaced =
            kind == ErrorKind.EPOCH_MISMATCH ? new EpochRefused(FrameCodec.epoch(a, 0)) : null;
        throw new TransferException(
            kind == null ? ErrorKind.PROTOCOL : kind,
            "lane "
                + laneIndex
                + " to "
                + peer
                + " refused"
                + switch (kind) {
                  case EPOCH_MISMATCH ->
                      ": the peer now runs epoch " + Long.toHexString(FrameCodec.epoch(a, 0));
                  case PROTOCOL -> ": the peer found the HELLO malformed (its log says why)";
                  case PERMISSION_DENIED ->
                      auth.required()
                          ? ": the HELLO does not name the engine its handshake proved"
                          : ": the peer requires authentication (security.secretFile,"
                              + " security.peerKeysDir or security.tlsKeyStore), and none is"
                              + " configured here";
                  case null, default -> "";
                },
            replaced);
      }
      if (FrameCodec.epoch(a, 0) != peer.epoch()) {
        // An acceptance must come from the incarnation the HELLO named.
        throw new TransferException(
            ErrorKind.PROTOCOL,
            "lane "
                + laneIndex
                + " to "
                + peer
                + ": HELLO for epoch "
                + Long.toHexString(peer.epoch())
                + " accepted by epoch "
                + Long.toHexString(FrameCodec.epoch(a, 0)));
      }
      channel.socket().setSoTimeout(0);
      return conduit;
    } catch (SocketTimeoutException e) {
      closeQuietly(channel);
      throw new TransferException(
          ErrorKind.TIMEOUT,
          "lane "
              + laneIndex
              + " to "
              + peer
              + ": no answer within "
              + tcp.connectTimeoutMillis()
              + " ms",
          e);
    } catch (FrameRejectedException e) {
      closeQuietly(channel);
      throw new TransferException(
          ErrorKind.PROTOCOL, "lane " + laneIndex + " to " + peer + ": " + e.describe(), e);
    } catch (java.nio.channels.UnresolvedAddressException e) {
      closeQuietly(channel);
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "lane "
              + laneIndex
              + " to "
              + peer
              + ": unknown host "
              + peer.host()
              + " (the name does not resolve)",
          e);
    } catch (IOException e) {
      closeQuietly(channel);
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "lane " + laneIndex + " to " + peer + ": " + TransferException.describe(e),
          e);
    } catch (RuntimeException e) {
      closeQuietly(channel);
      throw e;
    }
  }

  /** The cause of an EPOCH_MISMATCH refusal of a HELLO: the epoch the peer's endpoint runs now. */
  public static final class EpochRefused extends Exception {
    private static final long serialVersionUID = 1L;

    /** The epoch that answered. */
    private final long epoch;

    EpochRefused(long epoch) {
      super("the peer now runs epoch " + Long.toHexString(epoch), null, false, false);
      this.epoch = epoch;
    }

    /**
     * The epoch that answered.
     *
     * @return the newer incarnation's epoch
     */
    public long epoch() {
      return epoch;
    }

    /**
     * The epoch a refusal names, if it is an EPOCH_MISMATCH refusal of a HELLO.
     *
     * @param e what {@link #connect} threw
     * @return the epoch, or null
     */
    public static Long of(TransferException e) {
      return e.getCause() instanceof EpochRefused r ? r.epoch : null;
    }
  }

  static void closeQuietly(java.io.Closeable channel) {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // Nothing to add to the error already being reported.
      }
    }
  }
}
