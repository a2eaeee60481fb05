package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.nativebind.verbs.Verbs;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import org.junit.jupiter.api.Test;

/** Frames round-trip byte for byte; the RNR and ACK timers follow the IB encodings. */
class SoftWireTest {
  @Test
  void framesRoundTrip() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    Verbs.Gid gid = new Verbs.Gid(0x0102030405060708L, 0x1112131415161718L);
    SoftWire.writeHello(out, new SoftWire.Hello(5, 6, gid));
    byte[] payload = {1, 2, 3, 4, 5};
    SoftWire.writeRequest(
        out, new SoftWire.Request(SoftWire.OP_WRITE, 0x1000, 0xabcd, 9, 1, 42, payload));
    SoftWire.writeResponse(out, new SoftWire.Response(SoftWire.NAK_RNR, 12, new byte[] {7}));
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    assertEquals(new SoftWire.Hello(5, 6, gid), SoftWire.readHello(in));
    SoftWire.Request r = SoftWire.readRequest(in);
    assertEquals(SoftWire.OP_WRITE, r.op());
    assertEquals(0x1000, r.remoteAddr());
    assertEquals(0xabcd, r.rkey());
    assertEquals(9, r.length());
    assertEquals(1, r.flags());
    assertEquals(42, r.immOrInv());
    assertArrayEquals(payload, r.payload());
    SoftWire.Response a = SoftWire.readResponse(in);
    assertEquals(SoftWire.NAK_RNR, a.code());
    assertEquals(12, a.rnrTimer());
    assertArrayEquals(new byte[] {7}, a.payload());
    assertThrows(EOFException.class, () -> SoftWire.readResponse(in));
  }

  @Test
  void aForeignHelloOrAPayloadLongerThanItsLengthIsRefused() throws IOException {
    DataInputStream junk = new DataInputStream(new ByteArrayInputStream(new byte[40]));
    assertThrows(ProtocolException.class, () -> SoftWire.readHello(junk));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    SoftWire.writeRequest(
        new DataOutputStream(bytes),
        new SoftWire.Request(SoftWire.OP_SEND, 0, 0, 1, 0, 0, new byte[2]));
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    assertThrows(ProtocolException.class, () -> SoftWire.readRequest(in));
  }

  @Test
  void timersFollowTheIbTables() {
    assertEquals(655_360_000L, SoftWire.rnrDelayNanos(0));
    assertEquals(10_000L, SoftWire.rnrDelayNanos(1));
    assertEquals(491_520_000L, SoftWire.rnrDelayNanos(31));
    assertEquals(0, SoftWire.responseTimeoutMillis(0, 7), "timeout 0 waits forever");
    assertEquals(537, SoftWire.responseTimeoutMillis(17, 0));
    assertEquals(4295, SoftWire.responseTimeoutMillis(17, 7));
  }
}
