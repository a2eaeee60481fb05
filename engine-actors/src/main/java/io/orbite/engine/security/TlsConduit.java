package io.orbite.engine.security;

import io.orbite.engine.spi.Conduit;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;

/**
 * Mutual TLS over one connection's socket, through an {@link SSLEngine}: the handshake (blocking,
 * bounded by a deadline), then reads and writes in whichever blocking mode the socket is in, so the
 * same conduit serves the blocking exchanges that open a connection and a lane's selector loop.
 *
 * <p>Reading and writing may run on two threads at once (a notification link writes from its
 * callers and reads on its own thread); each side has its own buffers and lock, as {@link
 * SSLEngine} allows one wrap beside one unwrap. Records are sealed into a buffer of many records
 * and written with one call, so a large payload costs a system call per {@value #RECORDS_PER_WRITE}
 * records, not per record.
 */
public final class TlsConduit implements Conduit {
  /** Records sealed into one write to the socket. */
  static final int RECORDS_PER_WRITE = 16;

  private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

  private final SocketChannel channel;
  private final SSLEngine engine;
  private final int packetBytes;
  private final int appBytes;
  private final Object readLock = new Object();
  private final ReentrantLock writeLock = new ReentrantLock();

  /** The array of a one-buffer write; used under {@link #writeLock}. */
  private final ByteBuffer[] one = new ByteBuffer[1];

  /** Bytes from the socket not yet unwrapped; in write mode (position = end of the bytes). */
  private final ByteBuffer netIn;

  /** Unwrapped bytes not yet returned; in read mode. */
  private final ByteBuffer appIn;

  /** Sealed records not yet written to the socket; in read mode. */
  private final ByteBuffer netOut;

  /** The last unwrap wanted more bytes than {@link #netIn} holds: wait for the socket. */
  private boolean underflow;

  private Set<String> peerNames = Set.of();
  private InputStream socketIn;
  private InputStream in;
  private OutputStream out;

  private TlsConduit(SocketChannel channel, SSLEngine engine) {
    this.channel = channel;
    this.engine = engine;
    this.packetBytes = engine.getSession().getPacketBufferSize();
    this.appBytes = engine.getSession().getApplicationBufferSize();
    // On the heap: the JDK's GCM seals and opens records in heap buffers about 1.5 times as fast
    // as in direct ones (measured on this machine kind), more than the socket's copy costs.
    this.netIn = ByteBuffer.allocate(packetBytes * RECORDS_PER_WRITE);
    this.appIn = ByteBuffer.allocate(appBytes).limit(0);
    this.netOut = ByteBuffer.allocate(packetBytes * RECORDS_PER_WRITE).limit(0);
  }

  /**
   * Runs the TLS handshake on a connected socket in blocking mode.
   *
   * @param channel the socket, blocking
   * @param engine an engine set up for this side (client or server, client authentication needed)
   * @param consumed bytes already read from the socket that belong to the handshake (a server that
   *     peeked at the first byte), or an empty buffer
   * @param deadline {@link System#nanoTime()} by which the handshake must end
   * @return the conduit, its peer's certificate checked by the engine's trust managers
   * @throws SSLException when the peer's certificate (or anything else in the handshake) is refused
   * @throws IOException when the socket fails, closes, or the deadline passes ({@link
   *     SocketTimeoutException})
   */
  static TlsConduit handshake(
      SocketChannel channel, SSLEngine engine, ByteBuffer consumed, long deadline)
      throws IOException {
    TlsConduit c = new TlsConduit(channel, engine);
    c.netIn.put(consumed);
    c.runHandshake(deadline);
    return c;
  }

  private void runHandshake(long deadline) throws IOException {
    engine.beginHandshake();
    try {
      while (true) {
        HandshakeStatus status = engine.getHandshakeStatus();
        switch (status) {
          case NEED_WRAP -> {
            writeLock.lock();
            try {
              netOut.clear();
              SSLEngineResult r = engine.wrap(EMPTY, netOut);
              netOut.flip();
              flushBlocking();
              if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                throw new SSLException("the TLS handshake was closed");
              }
            } finally {
              writeLock.unlock();
            }
          }
          case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
            synchronized (readLock) {
              netIn.flip();
              SSLEngineResult r;
              try {
                appIn.clear();
                r = engine.unwrap(netIn, appIn);
              } finally {
                netIn.compact();
                appIn.flip();
              }
              if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                throw new SSLException("the peer closed the TLS handshake");
              }
              if (r.getStatus() == SSLEngineResult.Status.BUFFER_UNDERFLOW
                  && fillBefore(deadline) < 0) {
                throw new EOFException("the connection closed during the TLS handshake");
              }
            }
          }
          case NEED_TASK -> runTasks();
          case FINISHED, NOT_HANDSHAKING -> {
            peerNames = TlsIdentity.names(engine.getSession().getPeerCertificates());
            return;
          }
        }
      }
    } catch (SSLException e) {
      sendAlert();
      throw e;
    }
  }

  /** Reads more of the handshake, waiting no later than {@code deadline}; -1 at the end. */
  private int fillBefore(long deadline) throws IOException {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new SocketTimeoutException("the TLS handshake ran out of time");
    }
    channel.socket().setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
    return fill();
  }

  /** After a refused handshake, sends the alert the engine has for the peer, if it can. */
  private void sendAlert() {
    try {
      writeLock.lock();
      try {
        engine.closeOutbound();
        for (int i = 0; i < 4 && !engine.isOutboundDone(); i++) {
          netOut.clear();
          engine.wrap(EMPTY, netOut);
          netOut.flip();
          flushBlocking();
        }
      } finally {
        writeLock.unlock();
      }
    } catch (IOException | RuntimeException ignored) {
      // The refusal itself is what the caller reports; the alert is a courtesy.
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = engine.getDelegatedTask()) != null) {
      task.run();
    }
  }

  /**
   * Reads from the socket into {@link #netIn}, in the socket's blocking mode; a blocking read with
   * a timeout (the opening exchanges) goes through the socket's stream, which honours it.
   */
  private int fill() throws IOException {
    int n;
    if (channel.isBlocking() && channel.socket().getSoTimeout() > 0) {
      if (socketIn == null) {
        socketIn = channel.socket().getInputStream();
      }
      n = socketIn.read(netIn.array(), netIn.arrayOffset() + netIn.position(), netIn.remaining());
      if (n > 0) {
        netIn.position(netIn.position() + n);
      }
    } else {
      n = channel.read(netIn);
    }
    if (n > 0) {
      underflow = false;
    }
    return n;
  }

  /** Writes {@link #netOut} until it is empty or the (non-blocking) socket is full. */
  private boolean flushNet() throws IOException {
    while (netOut.hasRemaining()) {
      if (channel.write(netOut) == 0) {
        return false;
      }
    }
    return true;
  }

  private void flushBlocking() throws IOException {
    if (!flushNet()) {
      throw new IOException("the socket of a TLS handshake is not in blocking mode");
    }
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    synchronized (readLock) {
      if (!dst.hasRemaining()) {
        return 0;
      }
      if (appIn.hasRemaining()) {
        return drainApp(dst);
      }
      while (true) {
        if (netIn.position() > 0 && !underflow) {
          boolean direct = dst.remaining() >= appBytes;
          int before = dst.position();
          netIn.flip();
          SSLEngineResult r;
          try {
            if (direct) {
              r = engine.unwrap(netIn, dst);
            } else {
              appIn.clear();
              try {
                r = engine.unwrap(netIn, appIn);
              } finally {
                appIn.flip();
              }
            }
          } finally {
            netIn.compact();
          }
          afterUnwrap(r);
          switch (r.getStatus()) {
            case OK -> {
              if (r.bytesProduced() > 0) {
                return direct ? dst.position() - before : drainApp(dst);
              }
              if (r.bytesConsumed() > 0) {
                continue; // a record without application bytes (a session ticket, a key update)
              }
              underflow = true;
            }
            case BUFFER_UNDERFLOW -> underflow = true;
            case BUFFER_OVERFLOW ->
                throw new SSLException("a TLS record larger than the session's application size");
            case CLOSED -> {
              return -1;
            }
          }
        }
        if (!netIn.hasRemaining()) {
          throw new SSLException("a TLS record larger than " + netIn.capacity() + " bytes");
        }
        int n = fill();
        if (n <= 0) {
          return n;
        }
      }
    }
  }

  private int drainApp(ByteBuffer dst) {
    int n = Math.min(dst.remaining(), appIn.remaining());
    dst.put(dst.position(), appIn, appIn.position(), n);
    dst.position(dst.position() + n);
    appIn.position(appIn.position() + n);
    return n;
  }

  /** Runs what an unwrap left for this side: tasks, and an answer to a key update. */
  private void afterUnwrap(SSLEngineResult r) throws IOException {
    HandshakeStatus hs = r.getHandshakeStatus();
    if (hs == HandshakeStatus.NEED_TASK) {
      runTasks();
      hs = engine.getHandshakeStatus();
    }
    // The answer to a key update goes now if no writer is busy (and nothing sealed waits);
    // otherwise the next write's wrap sends it first. A reader never waits for a writer, which in
    // blocking mode may itself wait for the peer to read.
    if (hs == HandshakeStatus.NEED_WRAP && writeLock.tryLock()) {
      try {
        if (flushNet()) {
          netOut.clear();
          engine.wrap(EMPTY, netOut);
          netOut.flip();
          flushNet();
        }
      } finally {
        writeLock.unlock();
      }
    }
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    // One array for every one-buffer write (a source lane's answers, a notification), under the
    // write lock the gathering write takes again, so the data path allocates nothing per call.
    writeLock.lock();
    try {
      one[0] = src;
      return (int) write(one, 0, 1);
    } finally {
      one[0] = null;
      writeLock.unlock();
    }
  }

  @Override
  public long write(ByteBuffer[] srcs) throws IOException {
    return write(srcs, 0, srcs.length);
  }

  /**
   * Seals as many records of {@code srcs} as the write buffer holds and writes them; a non-blocking
   * socket that takes only some keeps the rest for {@link #flush()}, and until then no more is
   * taken (returns 0).
   */
  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
    writeLock.lock();
    try {
      if (!flushNet()) {
        return 0;
      }
      long taken = 0;
      netOut.clear();
      try {
        while (netOut.remaining() >= packetBytes) {
          SSLEngineResult r = engine.wrap(srcs, offset, length, netOut);
          if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
            throw new ClosedChannelException();
          }
          if (r.bytesConsumed() == 0 && r.bytesProduced() == 0) {
            break;
          }
          taken += r.bytesConsumed();
        }
      } finally {
        netOut.flip();
      }
      flushNet();
      return taken;
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public boolean flush() throws IOException {
    writeLock.lock();
    try {
      return flushNet();
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public boolean buffered() {
    synchronized (readLock) {
      return appIn.hasRemaining() || (netIn.position() > 0 && !underflow);
    }
  }

  @Override
  public SocketChannel socket() {
    return channel;
  }

  @Override
  public Set<String> peerNames() {
    return peerNames;
  }

  @Override
  public String protection() {
    return engine.getSession().getProtocol() + " " + engine.getSession().getCipherSuite();
  }

  @Override
  public synchronized InputStream in() throws IOException {
    if (in == null) {
      in = new In();
    }
    return in;
  }

  @Override
  public synchronized OutputStream out() throws IOException {
    if (out == null) {
      out = new Out();
    }
    return out;
  }

  @Override
  public boolean isOpen() {
    return channel.isOpen();
  }

  /** Closes the socket; no close_notify is sent (every exchange on top ends on its own terms). */
  @Override
  public void close() throws IOException {
    channel.close();
  }

  @Override
  public String toString() {
    return "TLS " + channel;
  }

  private final class In extends InputStream {
    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      int n = TlsConduit.this.read(ByteBuffer.wrap(b, off, len));
      if (n == 0) {
        throw new IOException("the TLS stream's socket is not in blocking mode");
      }
      return n;
    }

    @Override
    public int available() {
      synchronized (readLock) {
        return appIn.remaining();
      }
    }
  }

  private final class Out extends OutputStream {
    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      ByteBuffer src = ByteBuffer.wrap(b, off, len);
      while (src.hasRemaining()) {
        TlsConduit.this.write(src);
      }
      if (!TlsConduit.this.flush()) {
        throw new IOException("the TLS stream's socket is not in blocking mode");
      }
    }
  }
}
