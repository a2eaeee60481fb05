package io.orbite.qualification.contract;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.wire.EngineIdentity;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameHeader;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * A raw TCP connection to an engine endpoint, speaking (or breaking) the wire protocol by hand:
 * arbitrary bytes, hand-built headers, the HELLO handshake, bounded reads and close detection.
 * Every wait has a deadline; nothing sleeps.
 */
final class RawLane implements AutoCloseable {
  private final SocketChannel channel;
  private final Selector selector;
  private final SelectionKey key;

  private RawLane(SocketChannel channel) throws IOException {
    this.channel = channel;
    channel.configureBlocking(false);
    this.selector = Selector.open();
    this.key = channel.register(selector, 0);
  }

  /** Connects (blocking, bounded by the OS connect timeout on loopback) to {@code host:port}. */
  static RawLane connect(String host, int port) throws IOException {
    SocketChannel ch = SocketChannel.open();
    try {
      ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      ch.socket().connect(new InetSocketAddress(host, port), 5_000);
      return new RawLane(ch);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  static RawLane connect(SegmentDescriptor target) throws IOException {
    return connect(target.host(), target.port());
  }

  /**
   * Connects to {@code target} with a receive buffer of {@code receiveBufferBytes}: an answer this
   * lane does not read soon fills it, and the peer's write then blocks.
   */
  static RawLane connect(SegmentDescriptor target, int receiveBufferBytes) throws IOException {
    SocketChannel ch = SocketChannel.open();
    try {
      ch.setOption(StandardSocketOptions.SO_RCVBUF, receiveBufferBytes);
      ch.socket().connect(new InetSocketAddress(target.host(), target.port()), 5_000);
      return new RawLane(ch);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  /** A 56-byte header built with {@link FrameCodec#encode}, as a byte array. */
  static byte[] header(
      FrameType type,
      int status,
      long payloadLength,
      long requestId,
      long epoch,
      long regionId,
      long offset,
      long count) {
    ByteBuffer b = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(b, 0, type, status, payloadLength, requestId, epoch, regionId, offset, count);
    return b.array();
  }

  /** {@code parts} one after another in a single array, so they leave in one write. */
  static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) {
      n += p.length;
    }
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** Sends every byte of {@code bytes} (one write call where the socket buffer allows). */
  void send(byte[] bytes) throws IOException {
    send(bytes, Duration.ofSeconds(10));
  }

  void send(byte[] bytes, Duration timeout) throws IOException {
    ByteBuffer buf = ByteBuffer.wrap(bytes);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (buf.hasRemaining()) {
      if (channel.write(buf) == 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IOException(
              "send: "
                  + buf.remaining()
                  + " of "
                  + bytes.length
                  + " bytes not accepted within "
                  + timeout);
        }
        key.interestOps(SelectionKey.OP_WRITE);
        selector.select(Math.max(1, left / 1_000_000));
        selector.selectedKeys().clear();
      }
    }
  }

  /** Half-closes the connection: the peer reads end-of-stream after what was sent. */
  void shutdownOutput() throws IOException {
    channel.shutdownOutput();
  }

  /**
   * The HELLO handshake of a data lane.
   *
   * @return the HELLO_ACK header the peer answered with (the caller asserts its status)
   */
  FrameHeader hello(long targetEpoch, long requesterEpoch, int laneIndex)
      throws IOException, TimeoutException {
    return hello(targetEpoch, requesterEpoch, laneIndex, null);
  }

  /**
   * The HELLO handshake of a data lane of the engine {@code requester} names (null: a HELLO that
   * names no engine).
   *
   * @return the HELLO_ACK header the peer answered with (the caller asserts its status)
   */
  FrameHeader hello(long targetEpoch, long requesterEpoch, int laneIndex, EngineIdentity requester)
      throws IOException, TimeoutException {
    byte[] identity = new byte[0];
    if (requester != null) {
      ByteBuffer b = requester.encode();
      identity = new byte[b.remaining()];
      b.get(identity);
    }
    send(
        concat(
            header(
                FrameType.HELLO,
                0,
                identity.length,
                laneIndex + 1L,
                targetEpoch,
                requesterEpoch,
                laneIndex,
                1 /* TCP's wire code */),
            identity));
    return readHeader(Duration.ofSeconds(10));
  }

  /**
   * Reads one header and checks it with {@link FrameCodec#check} (no payload allowed beyond {@code
   * 1 GiB}).
   */
  FrameHeader readHeader(Duration timeout) throws IOException, TimeoutException {
    ByteBuffer h = ByteBuffer.wrap(readExactly(FrameCodec.HEADER_BYTES, timeout));
    try {
      FrameCodec.check(h, 0, FrameCodec.HEADER_BYTES, 1L << 30);
    } catch (FrameRejectedException e) {
      throw new IOException("peer sent a header that breaks the protocol: " + e.getMessage(), e);
    }
    return FrameCodec.decode(h, 0);
  }

  /**
   * Reads exactly {@code n} bytes, or throws: EOFException if the peer closed first,
   * TimeoutException.
   */
  byte[] readExactly(int n, Duration timeout) throws IOException, TimeoutException {
    ByteBuffer buf = ByteBuffer.allocate(n);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (buf.hasRemaining()) {
      int got = channel.read(buf);
      if (got < 0) {
        throw new EOFException("peer closed after " + buf.position() + " of " + n + " bytes");
      }
      if (got == 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new TimeoutException(
              "only " + buf.position() + " of " + n + " bytes within " + timeout);
        }
        waitReadable(left);
      }
    }
    return buf.array();
  }

  /** What {@link #awaitClosed} saw. */
  record CloseResult(boolean closed, long bytesBeforeClose, String how) {}

  /**
   * Reads (and counts, then discards) whatever arrives until the peer closes the connection (read
   * returns -1 or throws, e.g. a reset) or {@code timeout} passes.
   */
  CloseResult awaitClosed(Duration timeout) {
    ByteBuffer scratch = ByteBuffer.allocate(64 * 1024);
    long deadline = System.nanoTime() + timeout.toNanos();
    long bytes = 0;
    try {
      while (true) {
        scratch.clear();
        int got = channel.read(scratch);
        if (got < 0) {
          return new CloseResult(true, bytes, "end of stream");
        }
        bytes += got;
        if (got == 0) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return new CloseResult(false, bytes, "still open after " + timeout);
          }
          waitReadable(left);
        }
      }
    } catch (IOException e) {
      return new CloseResult(true, bytes, e.toString());
    }
  }

  private void waitReadable(long nanosLeft) throws IOException {
    key.interestOps(SelectionKey.OP_READ);
    selector.select(Math.max(1, Math.min(nanosLeft / 1_000_000, 100)));
    selector.selectedKeys().clear();
  }

  @Override
  public void close() {
    try {
      selector.close();
    } catch (IOException ignored) {
      // Test cleanup.
    }
    try {
      channel.close();
    } catch (IOException ignored) {
      // Test cleanup.
    }
  }

  /** See {@link io.orbite.qualification.Await#until}. */
  static boolean awaitCondition(Duration timeout, BooleanSupplier condition) {
    return io.orbite.qualification.Await.until(timeout, condition);
  }
}
