package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.verbs.Verbs;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/** The GID layout: port, alias, zeros, ff ff, IPv4; and what does not decode. */
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
  void anAliasMakesADistinctGidThatLeadsToTheSameResponder() throws Exception {
    Inet4Address ip = (Inet4Address) InetAddress.getByName("10.1.2.3");
    Verbs.Gid plain = SoftGid.encode(ip, 0xbeef);
    Verbs.Gid aliased = SoftGid.encode(ip, 0xbeef, 0x0102);
    assertArrayEquals(
        new byte[] {
          (byte) 0xbe, (byte) 0xef, 1, 2, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 1, 2, 3
        },
        aliased.bytes());
    assertNotEquals(plain, aliased);
    assertEquals(SoftGid.decode(plain).orElseThrow(), SoftGid.decode(aliased).orElseThrow());
    assertEquals(plain, SoftGid.encode(ip, 0xbeef, 0), "alias 0 is the plain GID");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SoftGid.encode(ip, 1, 0x10000));
    assertTrue(e.getMessage().contains("alias"), e::getMessage);
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
    assertTrue(SoftGid.decode(Verbs.Gid.of(stray)).isEmpty(), "bytes 4..9 not zero");
    assertTrue(SoftGid.decode(null).isEmpty());
  }
}
