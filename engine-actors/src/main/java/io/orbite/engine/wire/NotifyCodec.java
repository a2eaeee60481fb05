package io.orbite.engine.wire;

import io.orbite.config.NotificationConfig;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The frames of a notification, on a control connection ({@link FrameType#NOTIFY}, {@link
 * FrameType#NOTIFY_ACK}).
 *
 * <p>A NOTIFY's header carries its sequence number ({@code requestId}), the receiver's epoch the
 * sender names ({@code epoch}), the sender's epoch ({@code regionId}) and the notification's byte
 * count ({@code count}). Its payload, big-endian: the sender's {@link EngineIdentity} (as a HELLO
 * carries it), the tag (u16 length + UTF-8), then the {@code count} bytes. The identity and the tag
 * (the head) are at most {@link #MAX_HEAD_BYTES}, which {@link FrameCodec#check} enforces from the
 * header alone, so a receiver reads the head before it decides what to do with the bytes.
 *
 * <p>A NOTIFY_ACK echoes the sequence number, carries the receiver's epoch, status 0 (accepted) or
 * the refusal's {@code ErrorKind} code, and for a refusal an optional UTF-8 detail of at most
 * {@link #MAX_DETAIL_BYTES}.
 */
public final class NotifyCodec {
  /** The longest head: an identity and a tag of the largest bound a receiver may configure. */
  public static final int MAX_HEAD_BYTES =
      EngineIdentity.MAX_BYTES + 2 + NotificationConfig.MAX_MAX_TAG_BYTES;

  /** The longest NOTIFY payload: the longest head and the largest payload bound. */
  public static final long MAX_PAYLOAD_BYTES =
      MAX_HEAD_BYTES + (long) NotificationConfig.MAX_MAX_PAYLOAD_BYTES;

  /** The longest detail a NOTIFY_ACK carries. */
  public static final int MAX_DETAIL_BYTES = 1024;

  private NotifyCodec() {}

  /**
   * What a NOTIFY's head says.
   *
   * @param sender who sent it
   * @param tag its tag
   * @param tagBytes the tag's length in bytes of UTF-8
   */
  public record Head(EngineIdentity sender, String tag, int tagBytes) {}

  /**
   * The tag in UTF-8, refusing text that has no exact encoding (an unpaired surrogate).
   *
   * @throws CharacterCodingException when {@code tag} is not valid Unicode
   */
  public static byte[] tagBytes(String tag) throws CharacterCodingException {
    ByteBuffer b =
        StandardCharsets.UTF_8
            .newEncoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .encode(CharBuffer.wrap(tag));
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  /**
   * A whole NOTIFY frame, header and payload, with sequence number 0 ({@link #sequence} sets it).
   *
   * @param receiverEpoch the epoch of the incarnation it is for
   * @param senderEpoch the sender's epoch
   * @param identity the sender's encoded identity ({@link EngineIdentity#encode})
   * @param tag the tag in UTF-8, at most 65535 bytes
   * @param bytes the notification's bytes
   * @return a buffer positioned at 0 whose limit is the frame's end
   */
  public static ByteBuffer encode(
      long receiverEpoch, long senderEpoch, byte[] identity, byte[] tag, byte[] bytes) {
    int payload = identity.length + 2 + tag.length + bytes.length;
    ByteBuffer f = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload);
    FrameCodec.encode(
        f, 0, FrameType.NOTIFY, 0, payload, 0, receiverEpoch, senderEpoch, 0, bytes.length);
    f.position(FrameCodec.HEADER_BYTES);
    f.put(identity).putShort((short) tag.length).put(tag).put(bytes);
    return f.flip();
  }

  /** Writes {@code sequence} into the header of a frame made by {@link #encode}. */
  public static void sequence(ByteBuffer frame, long sequence) {
    frame.putLong(16, sequence);
  }

  /**
   * Reads a NOTIFY's head: the sender's identity and the tag, the whole of {@code head} (from its
   * position to its limit).
   *
   * @throws FrameRejectedException MALFORMED_PAYLOAD naming what is wrong: a field that ends early,
   *     bytes left over, an identity that is not valid, a tag that is not valid UTF-8
   */
  public static Head decodeHead(ByteBuffer head) throws FrameRejectedException {
    ByteBuffer buf = head.slice();
    try {
      // The identity is self-delimiting: name and host lengths, then a two-byte port.
      int name = buf.getShort(0) & 0xffff;
      int host = buf.getShort(2 + name) & 0xffff;
      int identityLength = 2 + name + 2 + host + 2;
      if (identityLength > buf.remaining()) {
        throw rejected("the identity ends after " + buf.remaining() + " bytes");
      }
      EngineIdentity sender = EngineIdentity.decode(buf.slice(0, identityLength));
      buf.position(identityLength);
      int tagLength = buf.getShort() & 0xffff;
      if (tagLength != buf.remaining()) {
        throw rejected(
            "the tag's length " + tagLength + " does not match the " + buf.remaining() + " left");
      }
      String tag;
      try {
        tag = StandardCharsets.UTF_8.newDecoder().decode(buf).toString();
      } catch (CharacterCodingException e) {
        throw rejected("the tag is not valid UTF-8");
      }
      return new Head(sender, tag, tagLength);
    } catch (IndexOutOfBoundsException | BufferUnderflowException e) {
      throw rejected("the head of " + head.remaining() + " bytes ends early");
    }
  }

  /**
   * A NOTIFY_ACK frame.
   *
   * @param sequence the NOTIFY's sequence number
   * @param epoch the receiver's epoch
   * @param status 0 (accepted) or the refusal's {@code ErrorKind} code
   * @param detail for a refusal, why (cut to {@link #MAX_DETAIL_BYTES}); ignored for status 0
   * @return a buffer positioned at 0 whose limit is the frame's end
   */
  public static ByteBuffer ack(long sequence, long epoch, int status, String detail) {
    byte[] text = status == 0 || detail == null ? new byte[0] : utf8Prefix(detail);
    ByteBuffer f = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + text.length);
    FrameCodec.encode(f, 0, FrameType.NOTIFY_ACK, status, text.length, sequence, epoch, 0, 0, 0);
    f.put(FrameCodec.HEADER_BYTES, text);
    return f;
  }

  /** A NOTIFY_ACK's detail, read leniently (it is only shown to people). */
  public static String detail(ByteBuffer payload) {
    return StandardCharsets.UTF_8.decode(payload.slice()).toString();
  }

  private static byte[] utf8Prefix(String detail) {
    byte[] all = detail.getBytes(StandardCharsets.UTF_8);
    if (all.length <= MAX_DETAIL_BYTES) {
      return all;
    }
    int end = MAX_DETAIL_BYTES;
    while (end > 0 && (all[end] & 0xc0) == 0x80) {
      end--; // never cut a character in two
    }
    return java.util.Arrays.copyOf(all, end);
  }

  private static FrameRejectedException rejected(String detail) {
    return new FrameRejectedException(Reason.MALFORMED_PAYLOAD, "NOTIFY head: " + detail);
  }
}
