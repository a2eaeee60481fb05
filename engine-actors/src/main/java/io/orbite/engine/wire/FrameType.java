package io.orbite.engine.wire;

/** The kinds of frame. Codes are stable wire values. */
public enum FrameType {
  /** Requester asks the source to describe itself (endpoint, epoch, regions). */
  DESCRIBE_REQUEST(1),
  /** The source's description; payload encoded by {@link DescribeCodec}. */
  DESCRIBE_RESPONSE(2),
  /** First frame of a data lane: target epoch, requester epoch, lane index. */
  HELLO(3),
  /** The source accepts (status 0) or refuses a data lane. */
  HELLO_ACK(4),
  /** Read {@code count} bytes of region {@code regionId} at {@code offset}; no payload. */
  READ_REQUEST(5),
  /** The bytes of a READ (status 0, payload of {@code count} bytes) or its refusal (no payload). */
  READ_RESPONSE(6),
  /** Write the {@code count}-byte payload into region {@code regionId} at {@code offset}. */
  WRITE_REQUEST(7),
  /** The source applied the WRITE (status 0) or refused it before touching memory. */
  WRITE_ACK(8),
  /**
   * Requester to source on an idle data lane: are you still there? Its region id and offset carry
   * the bytes the requester moved over SHM straight from the source's memory since its last
   * keepalive (READ, WRITE), so the source can count what it served without seeing the copies.
   */
  KEEPALIVE(9),
  /** Source to requester: the answer to a KEEPALIVE, in request order, with the source's epoch. */
  KEEPALIVE_ACK(10),
  /**
   * A notification, on a control connection: sequence number in {@code requestId}, the receiver's
   * epoch the sender names in {@code epoch}, the sender's epoch in {@code regionId}, the payload's
   * bytes in {@code count}; payload encoded by {@link NotifyCodec} (sender identity, tag, bytes).
   */
  NOTIFY(11),
  /**
   * The answer to a NOTIFY: its sequence number, the receiver's epoch, status 0 (accepted into the
   * inbox) or the refusal's kind, and for a refusal an optional UTF-8 detail.
   */
  NOTIFY_ACK(12),
  /**
   * First frame of an authenticated connection, requester to source: its nonce and engine name in
   * the payload, its epoch in {@code epoch}, what it proves with ({@code AuthFlags}) in {@code
   * regionId}. See {@code io.orbite.engine.security.PeerAuth}.
   */
  AUTH_HELLO(13),
  /**
   * The source's answer to an AUTH_HELLO: its nonce, engine name, and proofs (an HMAC of the
   * exchange under the shared secret, an Ed25519 signature) in the payload, its epoch in {@code
   * epoch}; or, with a non-zero status, a refusal whose payload is an optional UTF-8 detail.
   */
  AUTH_CHALLENGE(14),
  /** The requester's proofs of the same exchange, after it checked the source's. */
  AUTH_PROOF(15),
  /**
   * The source's verdict: status 0 (the connection goes on with its usual first frame) or
   * PERMISSION_DENIED with an optional UTF-8 detail, after which the source closes it.
   */
  AUTH_RESULT(16);

  private static final FrameType[] BY_CODE = new FrameType[17];

  static {
    for (FrameType type : values()) {
      BY_CODE[type.code] = type;
    }
  }

  private final int code;

  FrameType(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  /** The type for a wire code, or {@code null} if the code is not a frame type. */
  public static FrameType fromCode(int code) {
    return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
  }
}
