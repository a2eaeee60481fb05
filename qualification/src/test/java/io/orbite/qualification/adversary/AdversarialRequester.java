package io.orbite.qualification.adversary;

import io.orbite.qualification.verify.Pattern;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;

/**
 * One requester lane spoken from this test's own code ({@link Wire}): it connects to an engine,
 * sends a HELLO naming the engine's epoch, and then sends exactly the bytes a test asks for, for
 * example a WRITE header followed by only part of its payload, or a large READ whose response it
 * does not read. It counts what it gets back.
 */
final class AdversarialRequester implements AutoCloseable {
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final long engineEpoch;
  private long nextRequestId = 1;

  private AdversarialRequester(Socket socket, long engineEpoch) throws IOException {
    this.socket = socket;
    this.engineEpoch = engineEpoch;
    this.in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    this.out = socket.getOutputStream();
  }

  /**
   * Opens lane {@code laneIndex} to the engine at {@code host:port} of epoch {@code engineEpoch}
   * and returns it once the engine accepted it.
   */
  static AdversarialRequester open(
      String host, int port, long engineEpoch, long myEpoch, int laneIndex) throws IOException {
    Socket s = new Socket();
    s.setTcpNoDelay(true);
    // Small buffers: a READ whose response is not read fills them quickly, and the source blocks.
    s.setReceiveBufferSize(64 * 1024);
    s.connect(new InetSocketAddress(host, port), 5_000);
    AdversarialRequester lane = new AdversarialRequester(s, engineEpoch);
    lane.out.write(
        new Wire.Header(
                Wire.Type.HELLO,
                Wire.OK,
                0,
                laneIndex + 1L,
                engineEpoch,
                myEpoch,
                laneIndex,
                Wire.TRANSPORT_TCP)
            .encode());
    lane.out.flush();
    s.setSoTimeout(10_000);
    Wire.Header ack = Wire.Header.read(lane.in);
    if (ack == null || ack.type() != Wire.Type.HELLO_ACK || ack.status() != Wire.OK) {
      s.close();
      throw new IOException("the engine did not accept the lane: " + ack);
    }
    return lane;
  }

  /**
   * Sends a WRITE header for {@code count} bytes and only the first {@code sent} of them (pattern
   * {@code seed}).
   */
  long writePart(long regionId, long offset, long count, long sent, long seed) throws IOException {
    long id = nextRequestId++;
    out.write(
        new Wire.Header(
                Wire.Type.WRITE_REQUEST, Wire.OK, count, id, engineEpoch, regionId, offset, count)
            .encode());
    byte[] chunk = new byte[1 << 20];
    for (long done = 0; done < sent; ) {
      int n = (int) Math.min(chunk.length, sent - done);
      Pattern.fill(MemorySegment.ofArray(chunk), 0, n, seed, offset + done);
      out.write(chunk, 0, n);
      done += n;
    }
    out.flush();
    return id;
  }

  /** Sends a READ request. */
  long read(long regionId, long offset, long count) throws IOException {
    long id = nextRequestId++;
    out.write(
        new Wire.Header(
                Wire.Type.READ_REQUEST, Wire.OK, 0, id, engineEpoch, regionId, offset, count)
            .encode());
    out.flush();
    return id;
  }

  /** Reads one response header (within {@code timeoutMillis}). */
  Wire.Header response(int timeoutMillis) throws IOException {
    socket.setSoTimeout(timeoutMillis);
    return Wire.Header.read(in);
  }

  /** Reads exactly {@code n} payload bytes into {@code dst}. */
  void payload(byte[] dst, int n) throws IOException {
    int got = 0;
    while (got < n) {
      int r = in.read(dst, got, n - got);
      if (r < 0) {
        throw new java.io.EOFException("payload ended after " + got + " of " + n + " bytes");
      }
      got += r;
    }
  }

  /**
   * Reads whatever else arrives until the engine closes the lane, and returns how many bytes that
   * was, or -1 if the lane was still open after {@code timeoutMillis}.
   */
  long drainUntilClosed(int timeoutMillis) throws IOException {
    socket.setSoTimeout(timeoutMillis);
    byte[] scratch = new byte[64 * 1024];
    long total = 0;
    try {
      while (true) {
        int n = in.read(scratch);
        if (n < 0) {
          return total;
        }
        total += n;
      }
    } catch (SocketTimeoutException stillOpen) {
      return -1;
    } catch (SocketException reset) {
      return total;
    }
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // Closed already.
    }
  }
}
