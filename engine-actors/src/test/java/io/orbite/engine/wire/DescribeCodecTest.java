package io.orbite.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.RemoteRegion;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A DESCRIBE_RESPONSE's payload: the limits part round-trips, with and without the SHM part; an
 * answer in the layout of an engine from before the limits (ending after the SHM part) is read with
 * no limits; a part of a tag this engine does not know is skipped; a malformed part is refused.
 */
class DescribeCodecTest {
  private static final List<RemoteRegion> REGIONS =
      List.of(
          new RemoteRegion(7, 1 << 20, Access.READ_WRITE), new RemoteRegion(9, 4096, Access.READ));

  private static final SharedExports SHARED =
      new SharedExports(
          new SharedHost("host-a", "0b5e7a1c-boot", 4242, 17, 99L),
          List.of(new SharedRegion(7, 21, 1234L, 0, 1 << 20, Access.READ_WRITE)));

  private static Description roundTrip(Description d) throws FrameRejectedException {
    ByteBuffer payload = DescribeCodec.encode(d);
    return DescribeCodec.decode(payload);
  }

  @Test
  void theLimitsRoundTripWithAndWithoutTheShmPart() throws FrameRejectedException {
    TransferLimits limits = new TransferLimits(65_536, 1 << 20);
    Description plain = new Description("10.0.0.1", 7000, 0xabcdL, REGIONS, null, limits);
    assertEquals(plain, roundTrip(plain));
    Description shared = new Description("10.0.0.1", 7000, 0xabcdL, REGIONS, SHARED, limits);
    Description back = roundTrip(shared);
    assertEquals(shared, back);
    assertEquals(limits, back.limits());
    TransferLimits largest = new TransferLimits(Integer.MAX_VALUE, Long.MAX_VALUE);
    assertEquals(largest, roundTrip(new Description("h", 1, 1, List.of(), null, largest)).limits());
  }

  @Test
  void aDescriptionWithNoLimitsIsEncodedInTheOlderLayoutAndReadBackWithNone()
      throws FrameRejectedException {
    Description old = new Description("10.0.0.1", 7000, 0xabcdL, REGIONS, SHARED);
    ByteBuffer payload = DescribeCodec.encode(old);
    assertEquals(olderEngineAnswer(true).remaining(), payload.remaining());
    Description back = DescribeCodec.decode(payload);
    assertEquals(old, back);
    assertNull(back.limits());
  }

  /**
   * The payload an engine from before the limits part sends, written out field by field in its
   * layout (so a change to the encoder cannot hide a change to what is read).
   */
  private static ByteBuffer olderEngineAnswer(boolean withShm) {
    byte[] host = "10.0.0.1".getBytes(StandardCharsets.UTF_8);
    byte[] hostname = "host-a".getBytes(StandardCharsets.UTF_8);
    byte[] boot = "0b5e7a1c-boot".getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(512);
    b.putShort((short) host.length).put(host).putInt(7000).putLong(0xabcdL).putInt(2);
    b.putLong(7).putLong(1 << 20).put((byte) 3);
    b.putLong(9).putLong(4096).put((byte) 1);
    if (!withShm) {
      return b.put((byte) 0).flip();
    }
    b.put((byte) 1).putShort((short) hostname.length).put(hostname);
    b.putShort((short) boot.length).put(boot).putInt(4242).putInt(17).putLong(99L).putInt(1);
    b.putLong(7).putInt(21).putLong(1234L).putLong(0).putLong(1 << 20).put((byte) 3);
    return b.flip();
  }

  @Test
  void anOlderEnginesAnswerIsReadWithNoLimits() throws FrameRejectedException {
    Description withShm = DescribeCodec.decode(olderEngineAnswer(true));
    assertEquals(new Description("10.0.0.1", 7000, 0xabcdL, REGIONS, SHARED), withShm);
    assertNull(withShm.limits());
    Description withoutShm = DescribeCodec.decode(olderEngineAnswer(false));
    assertEquals(new Description("10.0.0.1", 7000, 0xabcdL, REGIONS), withoutShm);
    assertNull(withoutShm.limits());
  }

  /** {@code base} followed by {@code parts}. */
  private static ByteBuffer with(ByteBuffer base, ByteBuffer parts) {
    ByteBuffer b = ByteBuffer.allocate(base.remaining() + parts.remaining());
    return b.put(base).put(parts).flip();
  }

  private static ByteBuffer limitsPart(int length, int frame, long transfer) {
    ByteBuffer p = ByteBuffer.allocate(3 + Math.max(length, 12));
    p.put((byte) DescribeCodec.LIMITS_TAG).putShort((short) length);
    p.putInt(frame).putLong(transfer);
    return p.limit(3 + length).position(0);
  }

  @Test
  void aPartOfATagNotKnownHereIsSkippedAndTheLimitsStillRead() throws FrameRejectedException {
    ByteBuffer parts = ByteBuffer.allocate(3 + 5 + 15);
    parts.put((byte) 0x42).putShort((short) 5).put(new byte[] {1, 2, 3, 4, 5});
    parts.put(limitsPart(12, 8192, 262_144));
    Description d = DescribeCodec.decode(with(olderEngineAnswer(true), parts.flip()));
    assertEquals(new TransferLimits(8192, 262_144), d.limits());
    assertEquals(SHARED, d.shared());
    ByteBuffer onlyUnknown = ByteBuffer.allocate(3).put((byte) 9).putShort((short) 0).flip();
    assertNull(DescribeCodec.decode(with(olderEngineAnswer(false), onlyUnknown)).limits());
  }

  private static String refusal(ByteBuffer payload) {
    FrameRejectedException e =
        assertThrows(FrameRejectedException.class, () -> DescribeCodec.decode(payload));
    return e.getMessage();
  }

  @Test
  void aMalformedPartIsRefused() {
    ByteBuffer twice =
        ByteBuffer.allocate(30).put(limitsPart(12, 4096, 4096)).put(limitsPart(12, 4096, 4096));
    assertTrue(refusal(with(olderEngineAnswer(true), twice.flip())).contains("given twice"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), limitsPart(11, 4096, 4096))).contains("of 11 B"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), limitsPart(12, 0, 4096)))
            .contains("frame payload 0 B"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), limitsPart(12, 4096, -1)))
            .contains("transfer -1 B"));
    ByteBuffer cut = ByteBuffer.allocate(2).put((byte) 1).put((byte) 0).flip();
    assertTrue(refusal(with(olderEngineAnswer(false), cut)).contains("2 bytes after the SHM part"));
    ByteBuffer longer =
        ByteBuffer.allocate(5).put((byte) 7).putShort((short) 9).put(new byte[2]).flip();
    assertTrue(
        refusal(with(olderEngineAnswer(true), longer)).contains("part 7 of 9 B but 2 B left"));
  }
}
