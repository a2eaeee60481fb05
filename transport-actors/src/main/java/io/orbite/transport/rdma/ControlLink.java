package io.orbite.transport.rdma;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * The control connection of one RDMA endpoint, as both ends use it: blocking streams over the
 * socket. Several lanes write to it (each message whole, under the link's lock, flushed at the end
 * of the writer's pass); one reader thread reads it. Once a write fails or the link is closed,
 * every write answers false.
 */
final class ControlLink implements AutoCloseable {
  private final SocketChannel channel;
  final DataInputStream in;

  /** What {@link #in} reads through: it says how much it holds already read from the socket. */
  private final Input buffer;

  private final DataOutputStream out;
  private volatile boolean closed;

  ControlLink(SocketChannel channel) throws IOException {
    this.channel = channel;
    channel.configureBlocking(true);
    this.buffer = new Input(channel.socket().getInputStream());
    this.in = new DataInputStream(buffer);
    this.out =
        new DataOutputStream(new BufferedOutputStream(channel.socket().getOutputStream(), 8192));
  }

  /** A buffered input that tells how many bytes it holds. */
  private static final class Input extends BufferedInputStream {
    Input(java.io.InputStream in) {
      super(in, 65536);
    }

    /** Bytes read from the socket and not yet taken (the reader's thread). */
    int held() {
      return count - pos;
    }
  }

  /**
   * Whether every byte read from the socket so far was taken: the reader's next read may block (the
   * reader's thread), so work it handed over is due now.
   */
  boolean drained() {
    return buffer.held() == 0;
  }

  /** The output, for the handshake (before any other thread writes). */
  DataOutputStream out() {
    return out;
  }

  interface Message {
    void writeTo(DataOutputStream out) throws IOException;
  }

  /** Writes {@code m} (buffered); false when the link is closed or broke. */
  boolean write(Message m) {
    if (closed) {
      return false;
    }
    synchronized (out) {
      try {
        m.writeTo(out);
        return true;
      } catch (IOException e) {
        close();
        return false;
      }
    }
  }

  void flush() {
    if (closed) {
      return;
    }
    synchronized (out) {
      try {
        out.flush();
      } catch (IOException e) {
        close();
      }
    }
  }

  boolean closed() {
    return closed;
  }

  @Override
  public void close() {
    closed = true;
    try {
      channel.close();
    } catch (IOException ignored) {
      // Closing: the peer learns it from the connection's end.
    }
  }
}
