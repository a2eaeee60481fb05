package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.verbs.Verbs;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/** The GID layout: port, zeros, ff ff, IPv4; and what does not decode. */
class SoftGidTest {
  @Test
  void aGidCarriesThePortAndTheIpv4MappedAddress() throws Exception {
    Inet4Address ip = (Inet4Address) InetAddress.getByName("10.1.2.3");
    Verbs.Gid gid = SoftGid.encode(ip, 0xbeef);
    assertArrayEquals(
        new byte[] {
          (byte) 0xbe, (byte) 0xef, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 1, 2, 3
        },
        gid.bytes());
    assertEquals(new InetSocketAddress(ip, 0xbeef), SoftGid.decode(gid).orElseThrow());
  }

  @Test
  void aGidThatIsNotASoftOneDoesNotDecode() {
    byte[] raw = SoftGid.encode(Inet4Address.ofLiteral("127.0.0.1"), 4791).bytes();
    assertTrue(SoftGid.decode(Verbs.Gid.ZERO).isEmpty(), "port 0");
    byte[] notMapped = raw.clone();
    notMapped[10] = 0;
    assertTrue(SoftGid.decode(Verbs.Gid.of(notMapped)).isEmpty(), "not IPv4-mapped");
    byte[] stray = raw.clone();
    stray[5] = 1;
    assertTrue(SoftGid.decode(Verbs.Gid.of(stray)).isEmpty(), "bytes 2..9 not zero");
    assertTrue(SoftGid.decode(null).isEmpty());
  }
}
