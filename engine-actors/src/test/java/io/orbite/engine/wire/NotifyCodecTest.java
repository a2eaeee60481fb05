package io.orbite.engine.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A NOTIFY written by the codec reads back field for field; a malformed head is refused. */
class NotifyCodecTest {
  private static final EngineIdentity ME = new EngineIdentity("sender-1", "127.0.0.1", 4001);

  private static byte[] array(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Test
  void aNotifyFrameReadsBackWhole() throws Exception {
    byte[] tag = NotifyCodec.tagBytes("layer-7/é");
    byte[] bytes = {1, 2, 3, 4, 5, (byte) 0xff};
    ByteBuffer f = NotifyCodec.encode(0xabcL, 0x5e1fL, array(ME.encode()), tag, bytes);
    NotifyCodec.sequence(f, 42);
    assertTrue(FrameCodec.check(f, 0, f.remaining(), 0), "a valid header at cap 0");
    assertEquals(FrameType.NOTIFY, FrameCodec.type(f, 0));
    assertEquals(42, FrameCodec.requestId(f, 0));
    assertEquals(0xabcL, FrameCodec.epoch(f, 0));
    assertEquals(0x5e1fL, FrameCodec.regionId(f, 0));
    assertEquals(bytes.length, FrameCodec.count(f, 0));
    long payload = FrameCodec.payloadLength(f, 0);
    assertEquals(f.remaining() - FrameCodec.HEADER_BYTES, payload);
    int head = (int) (payload - bytes.length);
    NotifyCodec.Head h = NotifyCodec.decodeHead(f.slice(FrameCodec.HEADER_BYTES, head));
    assertEquals(ME, h.sender());
    assertEquals("layer-7/é", h.tag());
    assertEquals(tag.length, h.tagBytes());
    byte[] back = new byte[bytes.length];
    f.get(FrameCodec.HEADER_BYTES + head, back);
    assertArrayEquals(bytes, back);
  }

  @Test
  void anAckCarriesItsDetailOnlyWithARefusal() throws Exception {
    ByteBuffer ok = NotifyCodec.ack(7, 0x11, 0, "ignored");
    assertEquals(FrameCodec.HEADER_BYTES, ok.remaining());
    assertTrue(FrameCodec.check(ok, 0, ok.remaining(), 0));
    ByteBuffer no = NotifyCodec.ack(8, 0x11, 5, "x".repeat(5000));
    assertTrue(FrameCodec.check(no, 0, no.remaining(), 0));
    assertEquals(5, FrameCodec.status(no, 0));
    assertEquals(8, FrameCodec.requestId(no, 0));
    assertEquals(
        "x".repeat(NotifyCodec.MAX_DETAIL_BYTES),
        NotifyCodec.detail(no.slice(FrameCodec.HEADER_BYTES, NotifyCodec.MAX_DETAIL_BYTES)));
  }

  @Test
  void aMalformedHeadIsRefused() throws Exception {
    byte[] id = array(ME.encode());
    ByteBuffer good = ByteBuffer.allocate(id.length + 2 + 3).put(id).putShort((short) 3);
    good.put("abc".getBytes(StandardCharsets.UTF_8)).flip();
    assertEquals("abc", NotifyCodec.decodeHead(good).tag());
    ByteBuffer longTag = ByteBuffer.allocate(id.length + 2 + 3).put(id).putShort((short) 4);
    longTag.put("abc".getBytes(StandardCharsets.UTF_8)).flip();
    assertEquals(
        FrameRejectedException.Reason.MALFORMED_PAYLOAD,
        assertThrows(FrameRejectedException.class, () -> NotifyCodec.decodeHead(longTag)).reason());
    ByteBuffer badUtf8 = ByteBuffer.allocate(id.length + 2 + 1).put(id).putShort((short) 1);
    badUtf8.put((byte) 0xc3).flip();
    assertThrows(FrameRejectedException.class, () -> NotifyCodec.decodeHead(badUtf8));
    ByteBuffer cut = ByteBuffer.wrap(id, 0, id.length - 1);
    assertThrows(FrameRejectedException.class, () -> NotifyCodec.decodeHead(cut));
  }

  @Test
  void aTagWithAnUnpairedSurrogateHasNoEncoding() {
    assertThrows(CharacterCodingException.class, () -> NotifyCodec.tagBytes("a\ud800b"));
  }

  @Test
  void aNotifyWhoseHeadIsTooLongOrWhoseCountExceedsItsPayloadIsInconsistent() {
    ByteBuffer h = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
    FrameCodec.encode(h, 0, FrameType.NOTIFY, 0, NotifyCodec.MAX_HEAD_BYTES + 11L, 1, 2, 3, 0, 10);
    assertEquals(
        FrameRejectedException.Reason.INCONSISTENT_LENGTH,
        assertThrows(FrameRejectedException.class, () -> FrameCodec.check(h, 0, 56, 0)).reason());
    FrameCodec.encode(h, 0, FrameType.NOTIFY, 0, 10, 1, 2, 3, 0, 11);
    assertThrows(FrameRejectedException.class, () -> FrameCodec.check(h, 0, 56, 0));
    FrameCodec.encode(h, 0, FrameType.NOTIFY, 0, NotifyCodec.MAX_PAYLOAD_BYTES + 1, 1, 2, 3, 0, 1);
    assertEquals(
        FrameRejectedException.Reason.ABSURD_LENGTH,
        assertThrows(FrameRejectedException.class, () -> FrameCodec.check(h, 0, 56, 0)).reason());
  }
}
