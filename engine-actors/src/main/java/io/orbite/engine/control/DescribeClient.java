package io.orbite.engine.control;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.wire.DescribeCodec;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Requester side of Describe: a short control connection that asks a source for its endpoint, epoch
 * and regions. Blocking; callers run it on the engine's blocking-I/O executor. {@link
 * #describeWhenReady} asks again while the source answers "not ready", waiting between tries
 * without holding a thread.
 */
public final class DescribeClient {
  /** The largest Describe payload accepted (a million regions is far above any budget). */
  public static final int MAX_DESCRIBE_BYTES = 1 << 26;

  /** The first wait before Describe is asked again of a source that is not ready. */
  public static final long FIRST_READY_BACKOFF_MILLIS = 10;

  /** The longest wait between two Describes of a source that is not ready. */
  public static final long MAX_READY_BACKOFF_MILLIS = 200;

  private DescribeClient() {}

  /**
   * Describes {@code endpoint} until it answers ready, within {@code timeoutMillis} in all: each
   * try runs on {@code blockingIo} with what is left of the time as its own timeout, and a "not
   * ready" answer is followed by another try after 10 ms, doubling to 200 ms (the wait is a delayed
   * task, never a blocked thread).
   *
   * @param endpoint the source
   * @param timeoutMillis how long the whole wait may take
   * @param blockingIo where each Describe runs (it blocks on the socket)
   * @return a stage with the first ready answer; it fails as {@link #describe} does, or
   *     UNAVAILABLE, naming the peer and its engine, when it still answered "not ready" once the
   *     time was spent
   */
  public static CompletableFuture<Description> describeWhenReady(
      InetSocketAddress endpoint, int timeoutMillis, Executor blockingIo) {
    return describeWhenReady(endpoint, timeoutMillis, blockingIo, null);
  }

  /**
   * {@link #describeWhenReady(InetSocketAddress, int, Executor)}, each try opening with {@code
   * auth}'s handshake when it is required.
   *
   * @param auth this engine's handshake, or null for none
   */
  public static CompletableFuture<Description> describeWhenReady(
      InetSocketAddress endpoint, int timeoutMillis, Executor blockingIo, PeerAuth auth) {
    CompletableFuture<Description> result = new CompletableFuture<>();
    long deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    tryReady(
        endpoint,
        timeoutMillis,
        deadlineNanos,
        FIRST_READY_BACKOFF_MILLIS,
        null,
        blockingIo,
        auth,
        result);
    return result;
  }

  /**
   * One Describe; {@code notReadyBefore} is the previous try's "not ready" answer (null on the
   * first try).
   */
  private static void tryReady(
      InetSocketAddress endpoint,
      int timeoutMillis,
      long deadlineNanos,
      long backoffMillis,
      Description notReadyBefore,
      Executor blockingIo,
      PeerAuth auth,
      CompletableFuture<Description> result) {
    Runnable attempt =
        () -> {
          Description d;
          try {
            long leftMillis =
                Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
            d = describe(endpoint, (int) Math.min(timeoutMillis, leftMillis), auth);
          } catch (TransferException e) {
            // A last try cut short by the deadline says less than the "not ready" the source gave
            // before it; any other failure (the source went) is news, and reported.
            boolean cutShort =
                notReadyBefore != null
                    && e.kind() == ErrorKind.TIMEOUT
                    && System.nanoTime() - deadlineNanos >= 0;
            result.completeExceptionally(
                cutShort ? notReady(endpoint, notReadyBefore, timeoutMillis) : e);
            return;
          } catch (RuntimeException e) {
            result.completeExceptionally(e);
            return;
          }
          if (d.ready()) {
            result.complete(d);
            return;
          }
          long waitMillis =
              Math.min(
                  backoffMillis, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
          if (waitMillis <= 0) {
            result.completeExceptionally(notReady(endpoint, d, timeoutMillis));
            return;
          }
          Executor later =
              CompletableFuture.delayedExecutor(waitMillis, TimeUnit.MILLISECONDS, blockingIo);
          later.execute(
              () ->
                  tryReady(
                      endpoint,
                      timeoutMillis,
                      deadlineNanos,
                      Math.min(backoffMillis * 2, MAX_READY_BACKOFF_MILLIS),
                      d,
                      blockingIo,
                      auth,
                      result));
        };
    try {
      blockingIo.execute(attempt);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The engine is closing: its dispatcher takes no more work.
      result.completeExceptionally(
          new TransferException(
              ErrorKind.UNAVAILABLE,
              "describe "
                  + endpoint.getHostString()
                  + ":"
                  + endpoint.getPort()
                  + ": the blocking-I/O dispatcher is shut down",
              e));
    }
  }

  private static TransferException notReady(
      InetSocketAddress endpoint, Description d, int timeoutMillis) {
    return new TransferException(
        ErrorKind.UNAVAILABLE,
        "describe "
            + endpoint.getHostString()
            + ":"
            + endpoint.getPort()
            + ": engine "
            + (d.engineName().isEmpty() ? "" : "'" + d.engineName() + "' ")
            + "(epoch "
            + Long.toHexString(d.epoch())
            + ") is not marked ready: its application has not called markReady within "
            + timeoutMillis
            + " ms (it started with listen.readyAtStart off)");
  }

  /** Parses {@code host:port}, naming what is wrong. */
  public static InetSocketAddress parseEndpoint(String endpoint) {
    if (endpoint == null || endpoint.isBlank()) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "endpoint is empty; expected host:port");
    }
    int colon = endpoint.lastIndexOf(':');
    if (colon <= 0 || colon == endpoint.length() - 1) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "endpoint '" + endpoint + "': expected host:port");
    }
    String host = endpoint.substring(0, colon);
    int port;
    try {
      port = Integer.parseInt(endpoint.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "endpoint '" + endpoint + "': port is not a number");
    }
    if (port < 1 || port > 65535) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "endpoint '" + endpoint + "': port must be 1..65535");
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return InetSocketAddress.createUnresolved(host, port);
  }

  /** Connects, describes and closes. Failures are {@link TransferException}s naming the peer. */
  public static Description describe(InetSocketAddress endpoint, int timeoutMillis) {
    return describe(endpoint, timeoutMillis, null);
  }

  /**
   * {@link #describe(InetSocketAddress, int)}, opening with {@code auth}'s handshake when it is
   * required; a source that refuses this engine, or fails to prove itself, fails it
   * PERMISSION_DENIED.
   *
   * @param auth this engine's handshake, or null for none
   */
  public static Description describe(InetSocketAddress endpoint, int timeoutMillis, PeerAuth auth) {
    String peer = endpoint.getHostString() + ":" + endpoint.getPort();
    try (SocketChannel channel = SocketChannel.open()) {
      Socket socket = channel.socket();
      socket.setTcpNoDelay(true);
      socket.setSoTimeout(timeoutMillis);
      socket.connect(
          new InetSocketAddress(endpoint.getHostString(), endpoint.getPort()), timeoutMillis);
      Conduit conduit =
          auth == null
              ? Conduit.plain(channel)
              : auth.secure(channel, "describe " + peer, timeoutMillis);
      AuthenticatedPeer proven = null;
      if (auth != null && auth.required()) {
        proven = auth.connect(conduit, "describe " + peer, timeoutMillis);
        socket.setSoTimeout(timeoutMillis);
      }
      ByteBuffer request = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
      FrameCodec.encode(request, 0, FrameType.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0);
      OutputStream out = conduit.out();
      out.write(request.array());
      out.flush();
      DataInputStream in = new DataInputStream(conduit.in());
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      in.readFully(header);
      ByteBuffer h = ByteBuffer.wrap(header);
      FrameCodec.check(h, 0, header.length, MAX_DESCRIBE_BYTES);
      if (FrameCodec.type(h, 0) != FrameType.DESCRIBE_RESPONSE || FrameCodec.requestId(h, 0) != 1) {
        throw new TransferException(
            ErrorKind.PROTOCOL,
            "describe "
                + peer
                + ": answered with "
                + FrameCodec.type(h, 0)
                + " for request "
                + FrameCodec.requestId(h, 0));
      }
      int status = FrameCodec.status(h, 0);
      if (status != 0) {
        ErrorKind kind = ErrorKind.fromCode(status);
        throw new TransferException(
            kind == null ? ErrorKind.PROTOCOL : kind,
            "describe "
                + peer
                + " refused"
                + (kind == ErrorKind.PERMISSION_DENIED && (auth == null || !auth.required())
                    ? ": the peer requires authentication (security.secretFile,"
                        + " security.peerKeysDir or security.tlsKeyStore), and none is configured"
                        + " here"
                    : ""));
      }
      byte[] payload = new byte[(int) FrameCodec.payloadLength(h, 0)];
      in.readFully(payload);
      Description d = DescribeCodec.decode(ByteBuffer.wrap(payload));
      if (proven != null && proven.provenName() != null && !proven.name().equals(d.engineName())) {
        // A proven name is the one the engine's Describe must give: a peer certified or keyed as
        // one engine does not describe itself as another.
        throw new TransferException(
            ErrorKind.PERMISSION_DENIED,
            "describe "
                + peer
                + ": its handshake proved it is '"
                + proven.name()
                + "', and it describes itself as '"
                + d.engineName()
                + "'");
      }
      return d;
    } catch (SocketTimeoutException e) {
      throw new TransferException(
          ErrorKind.TIMEOUT, "describe " + peer + ": no answer within " + timeoutMillis + " ms", e);
    } catch (FrameRejectedException e) {
      throw new TransferException(ErrorKind.PROTOCOL, "describe " + peer + ": " + e.describe(), e);
    } catch (EOFException e) {
      throw new TransferException(
          ErrorKind.PEER_LOST, "describe " + peer + ": connection closed mid-answer", e);
    } catch (java.net.UnknownHostException e) {
      throw new TransferException(
          ErrorKind.UNAVAILABLE,
          "describe "
              + peer
              + ": unknown host "
              + endpoint.getHostString()
              + " (the name does not resolve)",
          e);
    } catch (IOException e) {
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "describe " + peer + ": " + TransferException.describe(e), e);
    }
  }
}
