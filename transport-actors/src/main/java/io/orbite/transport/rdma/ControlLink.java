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
  private final DataOutputStream out;
  private volatile boolean closed;

  ControlLink(SocketChannel channel) throws IOException {
    this.channel = channel;
    channel.configureBlocking(true);
    this.in = new DataInputStream(new BufferedInputStream(channel.socket().getInputStream(), 8192));
    this.out =
        new DataOutputStream(new BufferedOutputStream(channel.socket().getOutputStream(), 8192));
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
