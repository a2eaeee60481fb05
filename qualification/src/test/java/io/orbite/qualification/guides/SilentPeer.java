package io.orbite.qualification.guides;

import io.orbite.engine.Access;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.wire.DescribeCodec;
import io.orbite.engine.wire.Description;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameType;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A fake source on 127.0.0.1 for the embedding tests: it describes one READ_WRITE region ({@link
 * #REGION_ID}), accepts data lanes (HELLO answered with HELLO_ACK status 0), reads data requests
 * and never answers them, keeping the connections open until {@link #close()}. The contract package
 * has a richer one ({@code StallingPeer}), package-private there.
 */
final class SilentPeer implements AutoCloseable {
  static final long REGION_ID = 7;
  private static final long EPOCH = 0x5111_E47L;

  private final ServerSocketChannel server;
  private final long regionBytes;
  private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
  private final List<FrameHeader> requests = new CopyOnWriteArrayList<>();
  private final List<Throwable> problems = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  SilentPeer(long regionBytes) throws IOException {
    this.regionBytes = regionBytes;
    this.server = ServerSocketChannel.open();
    server.bind(new InetSocketAddress("127.0.0.1", 0));
    Thread.ofPlatform().daemon().name("silent-peer-" + port()).start(this::acceptLoop);
  }

  int port() {
    return server.socket().getLocalPort();
  }

  String endpoint() {
    return "127.0.0.1:" + port();
  }

  /** Data request headers received (and never answered), in arrival order. */
  List<FrameHeader> requests() {
    return List.copyOf(requests);
  }

  /** Failures of the peer's own threads: a broken test, not an engine bug. */
  List<Throwable> problems() {
    return List.copyOf(problems);
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        SocketChannel ch = server.accept();
        connections.add(ch);
        Thread.ofPlatform().daemon().name("silent-peer-conn-" + port()).start(() -> serve(ch));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void serve(SocketChannel ch) {
    try (ch) {
      Socket socket = ch.socket();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      ByteBuffer h = ByteBuffer.wrap(header);
      while (true) {
        in.readFully(header);
        FrameHeader f = FrameCodec.decode(h, 0);
        switch (f.type()) {
          case DESCRIBE_REQUEST -> {
            ByteBuffer payload =
                DescribeCodec.encode(
                    new Description(
                        "127.0.0.1",
                        port(),
                        EPOCH,
                        List.of(new RemoteRegion(REGION_ID, regionBytes, Access.READ_WRITE))));
            ByteBuffer r = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.remaining());
            FrameCodec.encode(
                r,
                0,
                FrameType.DESCRIBE_RESPONSE,
                0,
                payload.remaining(),
                f.requestId(),
                EPOCH,
                0,
                0,
                0);
            r.put(FrameCodec.HEADER_BYTES, payload, 0, payload.remaining());
            out.write(r.array());
            out.flush();
          }
          case HELLO -> {
            in.skipNBytes(f.payloadLength()); // the requester's identity
            ByteBuffer r = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
            FrameCodec.encode(r, 0, FrameType.HELLO_ACK, 0, 0, f.requestId(), EPOCH, 0, 0, 0);
            out.write(r.array());
            out.flush();
          }
          case READ_REQUEST, WRITE_REQUEST -> {
            in.readNBytes((int) f.payloadLength());
            requests.add(f);
          }
          default -> {
            problems.add(new IllegalStateException("silent peer got an unexpected " + f));
            return;
          }
        }
      }
    } catch (IOException e) {
      // The engine closed the connection, or close() did.
    } catch (RuntimeException e) {
      problems.add(e);
    } finally {
      connections.remove(ch);
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // Test cleanup.
    }
    for (SocketChannel ch : new ArrayList<>(connections)) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // Test cleanup.
      }
    }
  }
}
