package io.orbite.engine.spi;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;

/**
 * One connection between engines, as its users move bytes over it: the socket itself, or mutual TLS
 * over it. Reads and writes follow the socket's blocking mode; a selector waits on {@link
 * #socket()}, and so must not wait while {@link #buffered()} bytes are already here, nor stop
 * asking for writability while {@link #flush()} has bytes left.
 *
 * <p>The stream views ({@link #in()}, {@link #out()}) are for the blocking exchanges that open a
 * connection (the handshakes, Describe, HELLO); they honour the socket's {@code SO_TIMEOUT} and
 * need the socket in blocking mode.
 */
public interface Conduit extends ByteChannel, GatheringByteChannel {
  /**
   * The socket under this conduit: its options, its blocking mode, its addresses, selector keys.
   *
   * @return the connected socket
   */
  SocketChannel socket();

  /**
   * A blocking input stream of this connection's bytes.
   *
   * @return the stream (the same one on every call)
   * @throws IOException when the socket is closed
   */
  InputStream in() throws IOException;

  /**
   * A blocking output stream; each {@code write} has reached the socket when it returns.
   *
   * @return the stream (the same one on every call)
   * @throws IOException when the socket is closed
   */
  OutputStream out() throws IOException;

  /**
   * Whether bytes have arrived that a {@link #read} would return without the socket being readable:
   * a selector must not sleep on the socket while this is true. Asked by the thread that reads
   * (under TLS it waits while another thread is inside a blocking read).
   *
   * @return false for a plain socket
   */
  default boolean buffered() {
    return false;
  }

  /**
   * Sends bytes that earlier writes took but the socket did not (TLS records already sealed).
   *
   * @return true when none is left; false when the socket is full (wait for it to be writable)
   * @throws IOException when the connection fails
   */
  default boolean flush() throws IOException {
    return true;
  }

  /**
   * The names the peer's certificate proves, when TLS authenticated it.
   *
   * @return the names, or an empty set without TLS
   */
  default Set<String> peerNames() {
    return Set.of();
  }

  /**
   * What protects this connection, for logs and the dashboard.
   *
   * @return {@code "tcp"}, or the TLS protocol and cipher suite
   */
  default String protection() {
    return "tcp";
  }

  /**
   * A conduit that is the socket itself.
   *
   * @param channel a connected socket
   * @return a conduit that reads and writes the socket directly
   */
  static Conduit plain(SocketChannel channel) {
    return new Plain(channel);
  }

  /** The socket itself: every call goes straight to it. */
  final class Plain implements Conduit {
    private final SocketChannel channel;

    private Plain(SocketChannel channel) {
      this.channel = channel;
    }

    @Override
    public SocketChannel socket() {
      return channel;
    }

    @Override
    public InputStream in() throws IOException {
      return channel.socket().getInputStream();
    }

    @Override
    public OutputStream out() throws IOException {
      return channel.socket().getOutputStream();
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      return channel.read(dst);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      return channel.write(src);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
      return channel.write(srcs, offset, length);
    }

    @Override
    public long write(ByteBuffer[] srcs) throws IOException {
      return channel.write(srcs);
    }

    @Override
    public boolean isOpen() {
      return channel.isOpen();
    }

    @Override
    public void close() throws IOException {
      channel.close();
    }

    @Override
    public String toString() {
      return "tcp " + channel;
    }
  }
}
