package io.orbite.transport.rdma;

import io.orbite.engine.spi.Conduit;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * The control connection of one RDMA endpoint, as both ends use it: blocking streams over the
 * socket. Several lanes write to it (each message whole, under the link's lock, flushed at the end
 * of the writer's pass); one reader thread reads it. Once a write fails or the link is closed,
 * every write answers false.
 *
 * <p>Its buffers take no lock of their own: the input is confined to the reader's thread and the
 * output is used under the link's lock (or by the handshake, before any other thread writes).
 * {@code BufferedInputStream} and {@code BufferedOutputStream} lock on every call, and {@code
 * DataInputStream}/{@code DataOutputStream} make one call per field: several locks per control
 * message, on a path that carries a few messages per slice.
 */
final class ControlLink implements AutoCloseable {
  private final Conduit channel;
  final DataInputStream in;

  /** What {@link #in} reads through: it says how much it holds already read from the socket. */
  private final Input buffer;

  private final DataOutputStream out;
  private volatile boolean closed;

  ControlLink(Conduit channel) throws IOException {
    this.channel = channel;
    channel.socket().configureBlocking(true);
    this.buffer = new Input(channel.in());
    this.in = new DataInputStream(buffer);
    this.out = new DataOutputStream(new Output(channel.out()));
  }

  /** A buffered input that tells how many bytes it holds; the reader's thread only. */
  private static final class Input extends InputStream {
    private final InputStream in;
    private final byte[] buf = new byte[65536];
    private int pos;
    private int count;

    Input(InputStream in) {
      this.in = in;
    }

    /** Bytes read from the socket and not yet taken. */
    int held() {
      return count - pos;
    }

    /** Refills the empty buffer with one read; false at the end of the stream. */
    private boolean fill() throws IOException {
      int n = in.read(buf, 0, buf.length);
      if (n <= 0) {
        return false;
      }
      pos = 0;
      count = n;
      return true;
    }

    @Override
    public int read() throws IOException {
      if (pos == count && !fill()) {
        return -1;
      }
      return buf[pos++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (pos == count) {
        if (len >= buf.length) {
          return in.read(b, off, len); // a large read goes straight through
        }
        if (!fill()) {
          return -1;
        }
      }
      int n = Math.min(len, count - pos);
      System.arraycopy(buf, pos, b, off, n);
      pos += n;
      return n;
    }

    @Override
    public int available() throws IOException {
      return (count - pos) + in.available();
    }
  }

  /** A buffered output written under the link's lock (or by the handshake alone). */
  private static final class Output extends OutputStream {
    private final OutputStream out;
    private final byte[] buf = new byte[8192];
    private int count;

    Output(OutputStream out) {
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      if (count == buf.length) {
        drain();
      }
      buf[count++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (len > buf.length - count) {
        drain();
        if (len >= buf.length) {
          out.write(b, off, len);
          return;
        }
      }
      System.arraycopy(b, off, buf, count, len);
      count += len;
    }

    private void drain() throws IOException {
      if (count > 0) {
        out.write(buf, 0, count);
        count = 0;
      }
    }

    @Override
    public void flush() throws IOException {
      drain();
      out.flush();
    }

    @Override
    public void close() throws IOException {
      flush();
      out.close();
    }
  }

  /**
   * Whether every byte read from the socket so far was taken: the reader's next read may block (the
   * reader's thread), so work it handed over is due now.
   */
  boolean drained() {
    return buffer.held() == 0 && !channel.buffered();
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
