package io.orbite.engine.wire;

import io.orbite.engine.wire.FrameRejectedException.Reason;
import java.nio.ByteBuffer;

/**
 * The fixed 56-byte frame header, big-endian:
 *
 * <pre>
 *  0  magic          u32  0x4F524254 ("ORBT")
 *  4  version        u8   1
 *  5  type           u8   {@link FrameType}
 *  6  status         u16  0 = OK, else an ErrorKind code (responses only)
 *  8  payloadLength  u64  bytes that follow the header
 * 16  requestId      u64  echoed by the response
 * 24  epoch          u64  requests: the epoch the requester believes the target has;
 *                         responses: the responder's epoch
 * 32  regionId       u64  data frames: the target region; HELLO: the requester's epoch
 * 40  offset         u64  data frames: offset in the region; HELLO: the lane index
 * 48  count          u64  data frames: bytes to move; HELLO: the transport code
 * </pre>
 *
 * <p>A HELLO's payload is the requester's {@link EngineIdentity} (at most {@link
 * EngineIdentity#MAX_BYTES}, whatever the receiver's cap for data payloads), or empty: a requester
 * that names no identity is never taken for another incarnation of anyone. A NOTIFY's payload (at
 * most {@link NotifyCodec#MAX_PAYLOAD_BYTES}) and a NOTIFY_ACK's detail (at most {@link
 * NotifyCodec#MAX_DETAIL_BYTES}) have their own caps too, as have the authentication frames ({@link
 * #MAX_AUTH_PAYLOAD_BYTES}).
 *
 * <p>{@link #check} validates a header before any payload is read: a foreign magic is refused as
 * soon as its first four bytes are seen, and lengths are checked against the receiver's cap. All
 * methods use absolute indexes and never move the buffer's position.
 */
public final class FrameCodec {
  public static final int MAGIC = 0x4F524254;
  public static final int VERSION = 1;
  public static final int HEADER_BYTES = 56;

  /** The largest payload of an authentication frame (AUTH_HELLO to AUTH_RESULT). */
  public static final int MAX_AUTH_PAYLOAD_BYTES = 1024;

  private static final int OFF_MAGIC = 0;
  private static final int OFF_VERSION = 4;
  private static final int OFF_TYPE = 5;
  private static final int OFF_STATUS = 6;
  private static final int OFF_PAYLOAD = 8;
  private static final int OFF_REQUEST = 16;
  private static final int OFF_EPOCH = 24;
  private static final int OFF_REGION = 32;
  private static final int OFF_OFFSET = 40;
  private static final int OFF_COUNT = 48;

  private FrameCodec() {}

  /** Writes a header at absolute index {@code at} of {@code buf}. */
  public static void encode(
      ByteBuffer buf,
      int at,
      FrameType type,
      int status,
      long payloadLength,
      long requestId,
      long epoch,
      long regionId,
      long offset,
      long count) {
    buf.putInt(at + OFF_MAGIC, MAGIC);
    buf.put(at + OFF_VERSION, (byte) VERSION);
    buf.put(at + OFF_TYPE, (byte) type.code());
    buf.putShort(at + OFF_STATUS, (short) status);
    buf.putLong(at + OFF_PAYLOAD, payloadLength);
    buf.putLong(at + OFF_REQUEST, requestId);
    buf.putLong(at + OFF_EPOCH, epoch);
    buf.putLong(at + OFF_REGION, regionId);
    buf.putLong(at + OFF_OFFSET, offset);
    buf.putLong(at + OFF_COUNT, count);
  }

  public static void encode(ByteBuffer buf, int at, FrameHeader h) {
    encode(
        buf,
        at,
        h.type(),
        h.status(),
        h.payloadLength(),
        h.requestId(),
        h.epoch(),
        h.regionId(),
        h.offset(),
        h.count());
  }

  /**
   * Names the protocol a foreign peer speaks when its first four bytes are recognisable, as the
   * start of a refusal ({@code "the peer speaks HTTP, not the OrbiTE protocol ...: "}); {@code "not
   * the OrbiTE protocol: "} otherwise. Recognised: HTTP/1 responses ({@code HTTP}), HTTP/2 prefaces
   * ({@code PRI }), TLS records (content type 20-23, major version 3) and SSH banners ({@code
   * SSH-}).
   */
  public static String foreignProtocol(int magic) {
    String name;
    int first = magic >>> 24;
    int second = (magic >>> 16) & 0xff;
    if (magic == 0x48545450) {
      name = "HTTP";
    } else if (magic == 0x50524920) {
      name = "HTTP/2";
    } else if (first >= 0x14 && first <= 0x17 && second == 0x03) {
      name = "TLS";
    } else if (magic == 0x5353482d) {
      name = "SSH";
    } else {
      return "not the OrbiTE protocol: ";
    }
    return "the peer speaks " + name + ", not the OrbiTE protocol (is this the right port?): ";
  }

  /**
   * Checks the header that starts at {@code at}, of which {@code available} bytes are present.
   *
   * @param maxPayloadBytes the largest payload this receiver accepts
   * @return {@code false} if more bytes are needed to judge, {@code true} if a whole valid header
   *     is present
   * @throws FrameRejectedException if the bytes present already break the protocol
   */
  public static boolean check(ByteBuffer buf, int at, int available, long maxPayloadBytes)
      throws FrameRejectedException {
    if (available >= 4) {
      int magic = buf.getInt(at + OFF_MAGIC);
      if (magic != MAGIC) {
        throw new FrameRejectedException(
            Reason.FOREIGN_MAGIC,
            foreignProtocol(magic) + String.format("magic 0x%08x, expected 0x%08x", magic, MAGIC));
      }
    } else {
      // Judge a short prefix byte by byte so a foreign peer is refused as early as possible.
      for (int i = 0; i < available; i++) {
        byte expected = (byte) (MAGIC >>> (24 - 8 * i));
        if (buf.get(at + i) != expected) {
          throw new FrameRejectedException(
              Reason.FOREIGN_MAGIC,
              "not the OrbiTE protocol: first bytes do not match magic 0x4f524254");
        }
      }
      return false;
    }
    if (available < HEADER_BYTES) {
      return false;
    }
    int version = buf.get(at + OFF_VERSION) & 0xff;
    if (version != VERSION) {
      throw new FrameRejectedException(
          Reason.UNSUPPORTED_VERSION, "version " + version + ", expected " + VERSION);
    }
    FrameType type = FrameType.fromCode(buf.get(at + OFF_TYPE) & 0xff);
    if (type == null) {
      throw new FrameRejectedException(
          Reason.UNKNOWN_TYPE, "type code " + (buf.get(at + OFF_TYPE) & 0xff));
    }
    long payload = buf.getLong(at + OFF_PAYLOAD);
    // A HELLO's identity, a NOTIFY and a NOTIFY_ACK are bounded on their own: the control service
    // and the notification links read them with a cap of 0 for data payloads.
    long cap =
        switch (type) {
          case HELLO -> EngineIdentity.MAX_BYTES;
          case NOTIFY -> NotifyCodec.MAX_PAYLOAD_BYTES;
          case NOTIFY_ACK -> NotifyCodec.MAX_DETAIL_BYTES;
          case AUTH_HELLO, AUTH_CHALLENGE, AUTH_PROOF, AUTH_RESULT -> MAX_AUTH_PAYLOAD_BYTES;
          default -> maxPayloadBytes;
        };
    if (payload < 0 || payload > cap) {
      throw new FrameRejectedException(
          Reason.ABSURD_LENGTH,
          type + " payload length " + Long.toUnsignedString(payload) + " exceeds cap " + cap);
    }
    long count = buf.getLong(at + OFF_COUNT);
    int status = buf.getShort(at + OFF_STATUS) & 0xffff;
    boolean consistent =
        switch (type) {
          case READ_REQUEST -> payload == 0 && count > 0 && count <= maxPayloadBytes;
          case WRITE_REQUEST -> count > 0 && payload == count;
          case READ_RESPONSE -> status == 0 ? payload == count : payload == 0;
          case WRITE_ACK, HELLO_ACK, DESCRIBE_REQUEST -> payload == 0;
          case HELLO -> true; // bounded by its cap above

          case DESCRIBE_RESPONSE -> true;
          case KEEPALIVE, KEEPALIVE_ACK -> payload == 0;
          // The bytes follow the identity and the tag, which are bounded on their own.
          case NOTIFY ->
              count >= 0 && count <= payload && payload - count <= NotifyCodec.MAX_HEAD_BYTES;
          case NOTIFY_ACK -> status != 0 || payload == 0;
          // Bounded by their cap; their fields are checked as they are decoded.
          case AUTH_HELLO, AUTH_CHALLENGE, AUTH_PROOF, AUTH_RESULT -> true;
        };
    if (!consistent) {
      throw new FrameRejectedException(
          Reason.INCONSISTENT_LENGTH,
          type + " with status " + status + ", payload " + payload + ", count " + count);
    }
    return true;
  }

  /** Decodes a header already accepted by {@link #check}. */
  public static FrameHeader decode(ByteBuffer buf, int at) {
    return new FrameHeader(
        type(buf, at),
        status(buf, at),
        payloadLength(buf, at),
        requestId(buf, at),
        epoch(buf, at),
        regionId(buf, at),
        offset(buf, at),
        count(buf, at));
  }

  public static FrameType type(ByteBuffer buf, int at) {
    return FrameType.fromCode(buf.get(at + OFF_TYPE) & 0xff);
  }

  public static int status(ByteBuffer buf, int at) {
    return buf.getShort(at + OFF_STATUS) & 0xffff;
  }

  public static long payloadLength(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_PAYLOAD);
  }

  public static long requestId(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_REQUEST);
  }

  public static long epoch(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_EPOCH);
  }

  public static long regionId(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_REGION);
  }

  public static long offset(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_OFFSET);
  }

  public static long count(ByteBuffer buf, int at) {
    return buf.getLong(at + OFF_COUNT);
  }
}
