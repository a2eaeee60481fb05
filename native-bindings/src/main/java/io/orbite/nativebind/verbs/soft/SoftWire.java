package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ProtocolException;

/**
 * The frames a requester QP and a peer device's responder exchange over one TCP connection (one
 * connection per requester QP), all integers big-endian.
 *
 * <p>The requester opens with a hello: {@code int magic "SOFT", int version 1, int srcQpn, int
 * dstQpn, 16 bytes srcGid}; the responder answers a {@link Response} ({@link #ACK} when {@code
 * dstQpn} exists, is RTR or RTS, is connected back to {@code srcQpn} at {@code srcGid} and its port
 * is ACTIVE; {@link #NAK_NOT_READY} otherwise, and it closes). Then one request at a time, each
 * answered before the next is sent: {@code byte op, long remoteAddr, int rkey, int length, int
 * flags, int immOrInv, int payloadLength, payload}. A WRITE or SEND carries its bytes (a WRITE may
 * carry fewer than {@code length}: the fault that interrupts a copy part-way); a READ carries none.
 * A response is {@code byte code, int rnrTimer, int payloadLength, payload} (a READ's ACK carries
 * the bytes read). A payload is at most {@link #MAX_PAYLOAD} bytes; anything else closes the
 * connection.
 */
final class SoftWire {
  private SoftWire() {}

  static final int MAGIC = 0x534f4654;
  static final int VERSION = 1;
  static final int MAX_PAYLOAD = 1 << 30;

  static final byte OP_WRITE = 1;
  static final byte OP_READ = 2;
  static final byte OP_SEND = 3;

  static final int FLAG_IMM = 1;
  static final int FLAG_INV = 1 << 1;

  /** Done: the bytes are in the target (WRITE, SEND) or in the payload (READ). */
  static final byte ACK = 0;

  /** A bad rkey, range or right: nothing was touched ({@code WC_REM_ACCESS_ERR}). */
  static final byte NAK_ACCESS = 1;

  /** The message does not fit the receive ({@code WC_REM_INV_REQ_ERR}). */
  static final byte NAK_INV_REQ = 2;

  /** The responder failed the operation ({@code WC_REM_OP_ERR}). */
  static final byte NAK_OP = 3;

  /** No receive posted: retry after the timer ({@code rnrRetry} times). */
  static final byte NAK_RNR = 4;

  /** No such QP, or not ready or not connected to the sender ({@code WC_RETRY_EXC_ERR}). */
  static final byte NAK_NOT_READY = 5;

  /** The opening frame. */
  record Hello(int srcQpn, int dstQpn, Verbs.Gid srcGid) {}

  /** A READ, WRITE or SEND. */
  record Request(
      byte op, long remoteAddr, int rkey, int length, int flags, int immOrInv, byte[] payload) {}

  /** The answer to a hello or a request. */
  record Response(byte code, int rnrTimer, byte[] payload) {
    static final byte[] NONE = new byte[0];

    static Response of(byte code) {
      return new Response(code, 0, NONE);
    }
  }

  static void writeHello(DataOutputStream out, Hello hello) throws IOException {
    out.writeInt(MAGIC);
    out.writeInt(VERSION);
    out.writeInt(hello.srcQpn());
    out.writeInt(hello.dstQpn());
    out.writeLong(hello.srcGid().hi());
    out.writeLong(hello.srcGid().lo());
    out.flush();
  }

  static Hello readHello(DataInputStream in) throws IOException {
    if (in.readInt() != MAGIC || in.readInt() != VERSION) {
      throw new ProtocolException("not a soft verbs hello");
    }
    int src = in.readInt();
    int dst = in.readInt();
    long hi = in.readLong();
    long lo = in.readLong();
    return new Hello(src, dst, new Verbs.Gid(hi, lo));
  }

  static void writeRequest(DataOutputStream out, Request r) throws IOException {
    out.writeByte(r.op());
    out.writeLong(r.remoteAddr());
    out.writeInt(r.rkey());
    out.writeInt(r.length());
    out.writeInt(r.flags());
    out.writeInt(r.immOrInv());
    out.writeInt(r.payload().length);
    out.write(r.payload());
    out.flush();
  }

  static Request readRequest(DataInputStream in) throws IOException {
    byte op = in.readByte();
    long addr = in.readLong();
    int rkey = in.readInt();
    int length = in.readInt();
    int flags = in.readInt();
    int imm = in.readInt();
    byte[] payload = readPayload(in);
    if (op != OP_WRITE && op != OP_READ && op != OP_SEND) {
      throw new ProtocolException("unknown soft verbs op " + op);
    }
    if (length < 0 || payload.length > length) {
      throw new ProtocolException("bad length " + length + " for a payload of " + payload.length);
    }
    return new Request(op, addr, rkey, length, flags, imm, payload);
  }

  static void writeResponse(DataOutputStream out, Response r) throws IOException {
    out.writeByte(r.code());
    out.writeInt(r.rnrTimer());
    out.writeInt(r.payload().length);
    out.write(r.payload());
    out.flush();
  }

  static Response readResponse(DataInputStream in) throws IOException {
    byte code = in.readByte();
    int timer = in.readInt();
    return new Response(code, timer, readPayload(in));
  }

  private static byte[] readPayload(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_PAYLOAD) {
      throw new ProtocolException("payload length out of range: " + n);
    }
    byte[] payload = new byte[n];
    in.readFully(payload);
    return payload;
  }

  // The IB RNR NAK timer table (encoding 0 is the longest, 655.36 ms), in units of 10 us.
  private static final int[] RNR_TEN_MICROS = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152
  };

  /** The wait the RNR timer encoding {@code timer} (0..31) names, in nanoseconds. */
  static long rnrDelayNanos(int timer) {
    return RNR_TEN_MICROS[timer & 31] * 10_000L;
  }

  /**
   * How long a requester waits for an answer: the IB local ACK timeout (4.096 us x 2^timeout) times
   * {@code retryCnt + 1}, in milliseconds, at least 1; 0 (wait forever) when {@code timeout} is 0.
   */
  static int responseTimeoutMillis(int timeout, int retryCnt) {
    if (timeout <= 0) {
      return 0;
    }
    double millis = 4.096e-3 * Math.pow(2, Math.min(timeout, 31)) * (Math.max(retryCnt, 0) + 1);
    return (int) Math.max(1, Math.min(Math.ceil(millis), Integer.MAX_VALUE));
  }
}
