package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The RAILS message (Describe's rails and the sender's limits as a source): every field
 * round-trips; bad fields are refused. The reservation, grant request, ACK and DONE messages
 * round-trip every field.
 */
class RdmaWireTest {
  private static final RdmaWire.Limits LIMITS = new RdmaWire.Limits(64L << 20, 64);

  private static byte[] rails(List<RdmaWire.Rail> rails) throws IOException {
    return rails(rails, LIMITS);
  }

  private static byte[] rails(List<RdmaWire.Rail> rails, RdmaWire.Limits limits)
      throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    RdmaWire.writeRails(new DataOutputStream(bytes), rails, limits);
    return bytes.toByteArray();
  }

  private static List<RdmaWire.Rail> read(byte[] bytes) throws IOException {
    return describe(bytes).rails();
  }

  private static RdmaWire.Describe describe(byte[] bytes) throws IOException {
    return RdmaWire.readRails(new DataInputStream(new ByteArrayInputStream(bytes)));
  }

  private static RdmaWire.Rail rail(int mtu, int port, long mbps, int numa, String device) {
    return new RdmaWire.Rail(0x0123_4567_89ab_cdefL, -2L, 0xbeef, mtu, port, mbps, numa, device);
  }

  @Test
  void everyFieldOfEveryRailRoundTrips() throws IOException {
    List<RdmaWire.Rail> sent =
        List.of(
            rail(5, 1, 100_000, -1, "soft0"),
            rail(3, 2, 400_000, 1023, "mlx5_1"),
            rail(1, 255, 4_294_967_295L, 0, "d".repeat(64)));
    RdmaWire.Limits limits = new RdmaWire.Limits(Long.MAX_VALUE, RdmaWire.MAX_PARENTS);
    byte[] bytes = rails(sent, limits);
    // type, count, then per rail 8 + 8 + 2 + 1 + 1 + 4 + 2 bytes and the name (2 + length), then
    // the largest task (8) and the parents (4).
    assertEquals(1 + 2 + 3 * 26 + (2 + 5) + (2 + 6) + (2 + 64) + 12, bytes.length);
    assertEquals(new RdmaWire.Describe(sent, limits), describe(bytes));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          0  | 64      | RAILS limits: a largest task of 0 B (at least 1)
          -1 | 64      | RAILS limits: a largest task of -1 B (at least 1)
          1  | 0       | RAILS limits: 0 parents reserved at once (1..1048576)
          1  | 1048577 | RAILS limits: 1048577 parents reserved at once (1..1048576)
          1  | -1      | RAILS limits: 4294967295 parents reserved at once (1..1048576)
          """)
  void limitsOutsideTheirRangeAreRefusedNamingTheLimit(
      long maxTaskBytes, int maxParents, String message) throws IOException {
    byte[] bytes =
        rails(
            List.of(rail(5, 1, 100_000, -1, "soft0")),
            new RdmaWire.Limits(maxTaskBytes, maxParents));
    RdmaWire.Violation v = assertThrows(RdmaWire.Violation.class, () -> describe(bytes));
    assertEquals(message, v.getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          0 | 1 | 100000 | -1   | soft0 | RAILS entry 0 of 1: MTU code 0 is not 1..5 (256..4096 bytes)
          6 | 1 | 100000 | -1   | soft0 | RAILS entry 0 of 1: MTU code 6 is not 1..5 (256..4096 bytes)
          5 | 0 | 100000 | -1   | soft0 | RAILS entry 0 of 1: port 0 (ports are numbered from 1)
          5 | 1 | 0      | -1   | soft0 | RAILS entry 0 of 1: a link rate of 0 Mb/s
          5 | 1 | 100000 | -2   | soft0 | RAILS entry 0 of 1: NUMA node -2 is not -1 (unknown) ..1023
          5 | 1 | 100000 | 1024 | soft0 | RAILS entry 0 of 1: NUMA node 1024 is not -1 (unknown) ..1023
          """)
  void aRailWithABadFieldIsRefusedNamingItsEntryAndField(
      int mtu, int port, long mbps, int numa, String device, String message) throws IOException {
    byte[] bytes = rails(List.of(rail(mtu, port, mbps, numa, device)));
    RdmaWire.Violation v = assertThrows(RdmaWire.Violation.class, () -> read(bytes));
    assertEquals(message, v.getMessage());
  }

  @Test
  void aDeviceNameOfBadLengthIsRefusedBeforeItIsRead() throws IOException {
    RdmaWire.Violation empty =
        assertThrows(
            RdmaWire.Violation.class,
            () -> read(rails(List.of(rail(5, 1, 100_000, -1, "ok"), rail(5, 1, 1, -1, "")))));
    assertEquals("RAILS entry 1 of 2: a device name of 0 bytes (1..64)", empty.getMessage());
    byte[] longName = rails(List.of(rail(5, 1, 100_000, -1, "d".repeat(65))));
    // Cut the stream right after the length: the refusal must not wait for the name's bytes.
    byte[] cut = java.util.Arrays.copyOf(longName, 1 + 2 + 26 + 2);
    RdmaWire.Violation tooLong = assertThrows(RdmaWire.Violation.class, () -> read(cut));
    assertEquals("RAILS entry 0 of 1: a device name of 65 bytes (1..64)", tooLong.getMessage());
  }

  @Test
  void aCountOutsideItsRangeOrATruncatedEntryIsRefused() throws IOException {
    RdmaWire.Violation none =
        assertThrows(RdmaWire.Violation.class, () -> read(new byte[] {RdmaWire.RAILS, 0, 0}));
    assertEquals("an RDMA control message lists 0 entries (1..1024)", none.getMessage());
    byte[] whole = rails(List.of(rail(5, 1, 100_000, -1, "soft0")));
    assertThrows(
        java.io.EOFException.class, () -> read(java.util.Arrays.copyOf(whole, whole.length - 1)));
  }

  @Test
  void aParentsReservationItsGrantRequestsAckDoneAndQpGoneRoundTripEveryField() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    RdmaWire.Reserve reserve =
        new RdmaWire.Reserve(-7L, 1, 0x1234_5678_9abcL, 1L << 40, 3L << 32, 64);
    RdmaWire.GrantRequest req =
        new RdmaWire.GrantRequest(Long.MAX_VALUE, -7L, 65_535, 1, 42, (1L << 40) + 65_536, 65_536);
    RdmaWire.Ack ack = new RdmaWire.Ack(Long.MIN_VALUE, 65_535, "refused: \u00e9");
    RdmaWire.writeReserve(out, reserve);
    RdmaWire.writeGrantRequest(out, req);
    RdmaWire.writeAck(out, ack);
    RdmaWire.writeDone(out, -7L);
    RdmaWire.QpGone gone = new RdmaWire.QpGone(65_535, -1, "its route was fenced: \u00e9");
    RdmaWire.writeQpGone(out, gone);
    out.flush();
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    assertEquals(RdmaWire.RESERVE, RdmaWire.nextType(in));
    assertEquals(reserve, RdmaWire.readReserveBody(in));
    assertEquals(RdmaWire.GRANT_REQ, RdmaWire.nextType(in));
    assertEquals(req, RdmaWire.readGrantRequestBody(in));
    assertEquals(RdmaWire.ACK, RdmaWire.nextType(in));
    assertEquals(ack, RdmaWire.readAckBody(in));
    assertEquals(RdmaWire.DONE, RdmaWire.nextType(in));
    assertEquals(-7L, RdmaWire.readDoneBody(in));
    assertEquals(RdmaWire.QP_GONE, RdmaWire.nextType(in));
    assertEquals(gone, RdmaWire.readQpGoneBody(in));
    assertEquals(-1, RdmaWire.nextType(in), "nothing else was written");
  }
}
