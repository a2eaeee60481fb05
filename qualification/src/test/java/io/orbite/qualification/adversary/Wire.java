package io.orbite.qualification.adversary;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The engine's wire format as docs/architecture.md ("Wire protocol summary") and
 * docs/transports/tcp.md document it, written here from those tables and not from the engine's own
 * codec, so that a test facing the engine does not share its mistakes: a 56-byte big-endian header,
 * the frame types, status codes that are the documented error-kind codes, the Describe payload and
 * the NOTIFY payload.
 */
final class Wire {
  static final int MAGIC = 0x4F524254;
  static final int VERSION = 1;
  static final int HEADER_BYTES = 56;

  /** Status codes (docs/architecture.md, "Error codes on the wire"). */
  static final int OK = 0;

  static final int INVALID_ARGUMENT = 1;
  static final int PERMISSION_DENIED = 2;
  static final int EPOCH_MISMATCH = 4;

  /** Access code of a Describe region entry granting both directions (1 READ, 2 WRITE, 3 both). */
  static final int ACCESS_READ_WRITE = 3;

  /** Transport code a TCP lane's HELLO carries in its count field. */
  static final long TRANSPORT_TCP = 1;

  private Wire() {}

  /** The frame types and their codes. */
  enum Type {
    DESCRIBE_REQUEST(1),
    DESCRIBE_RESPONSE(2),
    HELLO(3),
    HELLO_ACK(4),
    READ_REQUEST(5),
    READ_RESPONSE(6),
    WRITE_REQUEST(7),
    WRITE_ACK(8),
    KEEPALIVE(9),
    KEEPALIVE_ACK(10),
    NOTIFY(11),
    NOTIFY_ACK(12),
    AUTH_HELLO(13),
    AUTH_CHALLENGE(14),
    AUTH_PROOF(15),
    AUTH_RESULT(16);

    final int code;

    Type(int code) {
      this.code = code;
    }

    static Type of(int code) {
      for (Type t : values()) {
        if (t.code == code) {
          return t;
        }
      }
      return null;
    }
  }

  /** A header that breaks the documented layout (the peer is not speaking the protocol). */
  static final class Violation extends IOException {
    Violation(String message) {
      super(message);
    }
  }

  /**
   * One frame header.
   *
   * @param payloadLength bytes that follow; HELLO: the requester's identity (name, host, port)
   * @param epoch requests: the epoch the sender believes the target has; responses: the responder's
   * @param regionId data frames: the target region; HELLO: the requester's own epoch
   * @param offset data frames: offset in the region; HELLO: the lane index
   * @param count data frames: bytes to move; HELLO: the transport code
   */
  record Header(
      Type type,
      int status,
      long payloadLength,
      long requestId,
      long epoch,
      long regionId,
      long offset,
      long count) {
    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES);
      b.putInt(MAGIC)
          .put((byte) VERSION)
          .put((byte) type.code)
          .putShort((short) status)
          .putLong(payloadLength)
          .putLong(requestId)
          .putLong(epoch)
          .putLong(regionId)
          .putLong(offset)
          .putLong(count);
      return b.array();
    }

    /** Reads one header; {@code null} at a clean end of stream before its first byte. */
    static Header read(InputStream in) throws IOException {
      byte[] raw = new byte[HEADER_BYTES];
      int got = 0;
      while (got < HEADER_BYTES) {
        int n = in.read(raw, got, HEADER_BYTES - got);
        if (n < 0) {
          if (got == 0) {
            return null;
          }
          throw new EOFException(
              "end of stream after " + got + " of " + HEADER_BYTES + " header bytes");
        }
        got += n;
      }
      return decode(raw);
    }

    static Header decode(byte[] raw) throws Violation {
      ByteBuffer b = ByteBuffer.wrap(raw);
      int magic = b.getInt();
      if (magic != MAGIC) {
        throw new Violation("magic 0x" + Integer.toHexString(magic));
      }
      int version = b.get() & 0xff;
      if (version != VERSION) {
        throw new Violation("version " + version);
      }
      int code = b.get() & 0xff;
      Type type = Type.of(code);
      if (type == null) {
        throw new Violation("frame type " + code);
      }
      return new Header(
          type,
          b.getShort() & 0xffff,
          b.getLong(),
          b.getLong(),
          b.getLong(),
          b.getLong(),
          b.getLong(),
          b.getLong());
    }
  }

  /** One region entry of a Describe payload. */
  record Region(long id, long lengthBytes, int access) {}

  /**
   * A Describe payload: host (u16 length and UTF-8), port (u32), epoch (u64), region count (u32),
   * per region id (u64), length (u64) and access (u8), then the SHM flag (u8, 0: nothing exported).
   */
  static byte[] describePayload(String host, int port, long epoch, List<Region> regions) {
    byte[] h = host.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(2 + h.length + 4 + 8 + 4 + regions.size() * 17 + 1);
    b.putShort((short) h.length).put(h).putInt(port).putLong(epoch).putInt(regions.size());
    for (Region r : regions) {
      b.putLong(r.id()).putLong(r.lengthBytes()).put((byte) r.access());
    }
    b.put((byte) 0);
    return b.array();
  }

  /**
   * A NOTIFY's payload as docs/architecture.md lays it out: the sender's identity (name: u16 length
   * and UTF-8; host: u16 length and UTF-8; port: u16), the tag (u16 length and UTF-8), then the
   * header's {@code count} bytes.
   */
  record Notify(String senderName, String senderHost, int senderPort, String tag, byte[] bytes) {
    static Notify decode(byte[] payload, long count) throws Violation {
      ByteBuffer b = ByteBuffer.wrap(payload);
      String name = text(b);
      String host = text(b);
      int port = b.getShort() & 0xffff;
      String tag = text(b);
      if (b.remaining() != count) {
        throw new Violation(
            b.remaining() + " bytes after the tag, the header's count says " + count);
      }
      byte[] bytes = new byte[b.remaining()];
      b.get(bytes);
      return new Notify(name, host, port, tag, bytes);
    }

    private static String text(ByteBuffer b) {
      byte[] t = new byte[b.getShort() & 0xffff];
      b.get(t);
      return new String(t, StandardCharsets.UTF_8);
    }
  }

  /** Concatenates byte arrays (a header and its payload in one write). */
  static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
