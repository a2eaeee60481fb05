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

  private static final List<RemoteRegion> NAMED =
      List.of(
          new RemoteRegion(7, 1 << 20, Access.READ_WRITE, "kv-pool"),
          new RemoteRegion(9, 4096, Access.READ),
          new RemoteRegion(11, 8192, Access.WRITE, "a.b_c:d/e-F9"));

  @Test
  void theEngineNameRegionNamesAndNotReadyRoundTrip() throws FrameRejectedException {
    TransferLimits limits = new TransferLimits(65_536, 1 << 20);
    for (boolean ready : new boolean[] {true, false}) {
      Description d =
          new Description(
              "10.0.0.1", 7000, 0xabcdL, NAMED, SHARED_NAMED, limits, "prefill-3", ready);
      Description back = roundTrip(d);
      assertEquals(d, back);
      assertEquals("prefill-3", back.engineName());
      assertEquals(ready, back.ready());
      assertEquals("kv-pool", back.regions().get(0).name());
      assertNull(back.regions().get(1).name(), "an unnamed region stays unnamed");
    }
    Description anonymous = roundTrip(new Description("h", 1, 1, REGIONS, null, null));
    assertEquals("", anonymous.engineName(), "no name part: the empty name");
    assertTrue(anonymous.ready(), "no not-ready part: ready");
  }

  private static final SharedExports SHARED_NAMED =
      new SharedExports(
          new SharedHost("host-a", "0b5e7a1c-boot", 4242, 17, 99L),
          List.of(new SharedRegion(7, 21, 1234L, 0, 1 << 20, Access.READ_WRITE)));

  @Test
  void namesBeyondOnePartsBodyAreSplitOverSeveralPartsAndAllReadBack()
      throws FrameRejectedException {
    List<RemoteRegion> many = new java.util.ArrayList<>();
    for (int i = 0; i < 1200; i++) {
      String name = String.format("r%05d-", i) + "x".repeat(RegionNames.MAX_NAME_BYTES - 7);
      many.add(new RemoteRegion(i + 1, 64, Access.READ, name));
    }
    Description d = new Description("h", 1, 1, many, null, null, "e", true);
    ByteBuffer payload = DescribeCodec.encode(d);
    Description back = DescribeCodec.decode(payload.duplicate());
    assertEquals(d, back);
    // 1200 entries of 8 + 1 + 128 B do not fit one part's 65535 B body.
    assertTrue(partTags(payload, 1200).stream().filter(t -> t == 3).count() >= 3);
  }

  /** The tags of the parts after the SHM part (absent here) of a payload with {@code n} regions. */
  private static List<Integer> partTags(ByteBuffer payload, int n) {
    ByteBuffer b = payload.duplicate();
    int hostLength = b.getShort() & 0xffff;
    b.position(b.position() + hostLength + 4 + 8 + 4 + n * DescribeCodec.REGION_BYTES);
    assertEquals(0, b.get(), "no SHM part");
    List<Integer> tags = new java.util.ArrayList<>();
    // Walked with nothing but the generic part header: how a reader that knows none of the tags
    // skips them, reaching the payload's end exactly.
    while (b.hasRemaining()) {
      tags.add(b.get() & 0xff);
      int length = b.getShort() & 0xffff;
      b.position(b.position() + length);
    }
    return tags;
  }

  @Test
  void theNewPartsAreSkippableByTheirHeadersAndUnknownPartsAmongThemAreSkipped()
      throws FrameRejectedException {
    Description d =
        new Description("h", 1, 1, NAMED, null, new TransferLimits(4096, 4096), "dec", false);
    ByteBuffer payload = DescribeCodec.encode(d);
    assertEquals(
        List.of(
            DescribeCodec.LIMITS_TAG,
            DescribeCodec.ENGINE_NAME_TAG,
            DescribeCodec.REGION_NAMES_TAG,
            DescribeCodec.NOT_READY_TAG),
        partTags(payload, NAMED.size()));
    // A newer engine's part between them changes nothing that is read.
    ByteBuffer unknown =
        ByteBuffer.allocate(3 + 4).put((byte) 0x42).putShort((short) 4).putInt(-1).flip();
    ByteBuffer base = payload.duplicate();
    int hostLength = base.getShort(0) & 0xffff;
    int cut = 2 + hostLength + 4 + 8 + 4 + NAMED.size() * DescribeCodec.REGION_BYTES + 1;
    ByteBuffer head = payload.duplicate().limit(cut);
    ByteBuffer tail = payload.duplicate().position(cut);
    assertEquals(d, DescribeCodec.decode(with(with(head, unknown), tail)));
  }

  private static ByteBuffer namesPart(long id, String name) {
    byte[] bytes = name.getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer p = ByteBuffer.allocate(3 + 9 + bytes.length);
    p.put((byte) DescribeCodec.REGION_NAMES_TAG).putShort((short) (9 + bytes.length));
    return p.putLong(id).put((byte) bytes.length).put(bytes).flip();
  }

  @Test
  void aMalformedNamesOrReadinessPartIsRefusedNamingWhatIsWrong() {
    assertTrue(
        refusal(with(olderEngineAnswer(false), namesPart(8, "kv-pool")))
            .contains("name 'kv-pool' given to region 8, not published"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), namesPart(7, "kv pool")))
            .contains("region name 'kv pool' has ' ' at index 2"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), namesPart(7, ""))).contains("region name is empty"));
    assertTrue(
        refusal(
                with(
                    olderEngineAnswer(false),
                    with(namesPart(7, "kv-pool"), namesPart(9, "kv-pool"))))
            .contains("name 'kv-pool' given to two regions"));
    assertTrue(
        refusal(with(olderEngineAnswer(false), with(namesPart(7, "a"), namesPart(7, "b"))))
            .contains("region 7 named twice"));
    ByteBuffer cutEntry =
        ByteBuffer.allocate(3 + 5)
            .put((byte) DescribeCodec.REGION_NAMES_TAG)
            .putShort((short) 5)
            .put(new byte[5])
            .flip();
    assertTrue(refusal(with(olderEngineAnswer(false), cutEntry)).contains("ends inside an entry"));
    ByteBuffer notReady =
        ByteBuffer.allocate(4)
            .put((byte) DescribeCodec.NOT_READY_TAG)
            .putShort((short) 1)
            .put((byte) 0)
            .flip();
    assertTrue(
        refusal(with(olderEngineAnswer(false), notReady)).contains("not-ready part of 1 B, not 0"));
    ByteBuffer noName =
        ByteBuffer.allocate(3).put((byte) DescribeCodec.ENGINE_NAME_TAG).putShort((short) 0).flip();
    assertTrue(refusal(with(olderEngineAnswer(false), noName)).contains("engine name of 0 B"));
    ByteBuffer badUtf8 =
        ByteBuffer.allocate(4)
            .put((byte) DescribeCodec.ENGINE_NAME_TAG)
            .putShort((short) 1)
            .put((byte) 0xff)
            .flip();
    assertTrue(
        refusal(with(olderEngineAnswer(false), badUtf8))
            .contains("engine name is not valid UTF-8"));
  }

  @Test
  void anInvalidRegionNameIsNotEncoded() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                DescribeCodec.encode(
                    new Description(
                        "h",
                        1,
                        1,
                        List.of(new RemoteRegion(3, 64, Access.READ, "no spaces")),
                        null,
                        null,
                        "e",
                        true)));
    assertTrue(e.getMessage().contains("region 3: region name 'no spaces'"), e.getMessage());
  }
}
