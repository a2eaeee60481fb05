package io.orbite.qualification.contract;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.wire.DescribeCodec;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fake source on 127.0.0.1, on its own threads. It answers DESCRIBE_REQUEST with a valid
 * description (one READ_WRITE region of {@code regionBytes}, a fixed random epoch) and HELLO with
 * HELLO_ACK status 0, then reads data requests (and WRITE payloads) and, by default, never answers
 * them while keeping the connection open. A {@link Responder} can script answers instead (the
 * malformed-response tests). Closing it drops every connection.
 */
final class StallingPeer implements AutoCloseable {
  /** Bytes to send back for a data request, or {@code null} to stay silent. */
  @FunctionalInterface
  interface Responder {
    byte[] answer(FrameHeader request);
  }

  /** A data request as the peer received it, with the WRITE payload bytes it got. */
  record Request(FrameHeader header, byte[] payload) {}

  static final long REGION_ID = 7;

  private final ServerSocketChannel server;
  private final long epoch;
  private final long regionBytes;
  private final Responder responder;
  private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
  private final List<Thread> threads = new CopyOnWriteArrayList<>();
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private final List<Throwable> problems = new CopyOnWriteArrayList<>();
  private final AtomicInteger hellos = new AtomicInteger();
  private final AtomicInteger describes = new AtomicInteger();
  private final Thread acceptor;
  private volatile boolean closed;

  private StallingPeer(long regionBytes, Responder responder) throws IOException {
    this.regionBytes = regionBytes;
    this.responder = responder;
    long e;
    do {
      e = ThreadLocalRandom.current().nextLong();
    } while (e == 0);
    this.epoch = e;
    this.server = ServerSocketChannel.open();
    server.bind(new InetSocketAddress("127.0.0.1", 0));
    this.acceptor =
        Thread.ofPlatform()
            .daemon()
            .name("stalling-peer-acceptor-" + port())
            .start(this::acceptLoop);
  }

  /** A peer that never answers a data request. */
  static StallingPeer start(long regionBytes) throws IOException {
    return new StallingPeer(regionBytes, request -> null);
  }

  /** A peer that answers data requests as {@code responder} says. */
  static StallingPeer answering(long regionBytes, Responder responder) throws IOException {
    return new StallingPeer(regionBytes, responder);
  }

  int port() {
    return server.socket().getLocalPort();
  }

  String endpoint() {
    return "127.0.0.1:" + port();
  }

  long epoch() {
    return epoch;
  }

  long regionBytes() {
    return regionBytes;
  }

  /** Data requests received so far, in arrival order. */
  List<Request> requests() {
    return List.copyOf(requests);
  }

  int hellos() {
    return hellos.get();
  }

  int describes() {
    return describes.get();
  }

  /** Unexpected failures of the peer's own threads (a bug in the test, not in the engine). */
  List<Throwable> problems() {
    return List.copyOf(problems);
  }

  private void acceptLoop() {
    try {
      while (!closed) {
        SocketChannel ch = server.accept();
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        connections.add(ch);
        if (closed) {
          closeQuietly(ch);
          return;
        }
        threads.add(
            Thread.ofPlatform()
                .daemon()
                .name("stalling-peer-conn-" + port())
                .start(() -> serve(ch)));
      }
    } catch (ClosedChannelException e) {
      // close() closed the server: the normal way out.
    } catch (IOException e) {
      if (!closed) {
        problems.add(e);
      }
    }
  }

  private void serve(SocketChannel ch) {
    try {
      Socket socket = ch.socket();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      ByteBuffer h = ByteBuffer.wrap(header);
      boolean dataLane = false;
      while (true) {
        in.readFully(header);
        FrameCodec.check(h, 0, header.length, Integer.MAX_VALUE);
        FrameHeader f = FrameCodec.decode(h, 0);
        if (!dataLane && f.type() == FrameType.DESCRIBE_REQUEST) {
          describes.incrementAndGet();
          ByteBuffer payload =
              DescribeCodec.encode(
                  new Description(
                      "127.0.0.1",
                      port(),
                      epoch,
                      List.of(new RemoteRegion(REGION_ID, regionBytes, Access.READ_WRITE))));
          byte[] response = new byte[FrameCodec.HEADER_BYTES + payload.remaining()];
          ByteBuffer r = ByteBuffer.wrap(response);
          FrameCodec.encode(
              r,
              0,
              FrameType.DESCRIBE_RESPONSE,
              0,
              payload.remaining(),
              f.requestId(),
              epoch,
              0,
              0,
              0);
          r.put(FrameCodec.HEADER_BYTES, payload, 0, payload.remaining());
          out.write(response);
          out.flush();
        } else if (!dataLane && f.type() == FrameType.HELLO) {
          in.skipNBytes(f.payloadLength()); // the requester's identity
          hellos.incrementAndGet();
          int status = f.epoch() == epoch ? 0 : ErrorKind.EPOCH_MISMATCH.code();
          out.write(RawLane.header(FrameType.HELLO_ACK, status, 0, f.requestId(), epoch, 0, 0, 0));
          out.flush();
          if (status != 0) {
            return;
          }
          dataLane = true;
        } else if (dataLane
            && (f.type() == FrameType.READ_REQUEST || f.type() == FrameType.WRITE_REQUEST)) {
          byte[] payload = new byte[(int) f.payloadLength()];
          in.readFully(payload);
          requests.add(new Request(f, payload));
          byte[] answer = responder.answer(f);
          if (answer != null) {
            out.write(answer);
            out.flush();
          }
        } else {
          problems.add(new IllegalStateException("fake source got an unexpected " + f));
          return;
        }
      }
    } catch (EOFException e) {
      // The requester closed the connection.
    } catch (IOException e) {
      // Closed by close(), or reset by a requester that refused a scripted answer.
    } catch (FrameRejectedException | RuntimeException e) {
      problems.add(e);
    } finally {
      closeQuietly(ch);
      connections.remove(ch);
    }
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    List<SocketChannel> open = new ArrayList<>(connections);
    open.forEach(StallingPeer::closeQuietly);
    try {
      acceptor.join(5_000);
      for (Thread t : threads) {
        t.join(5_000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeQuietly(java.nio.channels.Channel c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // Test cleanup.
    }
  }
}
