package io.orbite.transport.tcp;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.wire.FrameCodec;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A loopback listener standing in for a peer's source end in the TCP tests: each lane it accepts
 * has its HELLO read (its identity payload skipped) and is then served by the test's {@link Lane},
 * on a daemon thread of its own, until the lane or the test closes its socket.
 */
final class LoopbackSource implements AutoCloseable {
  /** What the test's peer does with one lane once its HELLO is read. */
  @FunctionalInterface
  interface Lane {
    /**
     * Serves the lane; returning (or throwing) closes its socket.
     *
     * @param s the lane's socket
     * @param in its input, past the HELLO
     * @param out its output
     * @param hello the HELLO's header
     * @throws IOException when the socket closed
     */
    void serve(Socket s, DataInputStream in, OutputStream out, ByteBuffer hello) throws IOException;
  }

  /** The lanes whose socket has closed, from either end. */
  final Queue<Socket> ended = new ConcurrentLinkedQueue<>();

  private final ServerSocket socket = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
  private final Lane lane;

  LoopbackSource(Lane lane) throws IOException {
    this.lane = lane;
    Thread.ofPlatform().daemon().name("test-tcp-peer").start(this::accept);
  }

  /** The peer incarnation {@code epoch} at this listener's address. */
  SegmentDescriptor incarnation(long epoch) {
    return new SegmentDescriptor("127.0.0.1", socket.getLocalPort(), epoch);
  }

  private void accept() {
    while (!socket.isClosed()) {
      try {
        Socket s = socket.accept();
        Thread.ofPlatform().daemon().name("test-tcp-peer-lane").start(() -> serve(s));
      } catch (IOException e) {
        // Closed by the test.
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] header = new byte[FrameCodec.HEADER_BYTES];
      in.readFully(header);
      // The requester's identity follows the header; the fake source does not need it.
      in.skipNBytes(FrameCodec.payloadLength(ByteBuffer.wrap(header), 0));
      lane.serve(s, in, s.getOutputStream(), ByteBuffer.wrap(header));
    } catch (IOException e) {
      // The lane closed its socket, or the test dropped it.
    }
    ended.add(s);
  }

  /** Stops accepting; the lanes already accepted go on until they close. */
  @Override
  public void close() throws IOException {
    socket.close();
  }
}
