package io.orbite.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A HELLO's requester identity: what is encoded decodes to the same identity, byte for byte, and
 * anything else (a field that ends early, bytes left over, text that is not UTF-8, a name, host or
 * port no engine could have) is refused MALFORMED_PAYLOAD naming what is wrong.
 */
class EngineIdentityTest {
  private static ByteBuffer payload(String name, String host, int port) {
    return raw(name.getBytes(StandardCharsets.UTF_8), host.getBytes(StandardCharsets.UTF_8), port);
  }

  private static ByteBuffer raw(byte[] name, byte[] host, int port) {
    ByteBuffer b = ByteBuffer.allocate(2 + name.length + 2 + host.length + 2);
    b.putShort((short) name.length).put(name).putShort((short) host.length).put(host);
    return b.putShort((short) port).flip();
  }

  private static String refusal(ByteBuffer payload) {
    FrameRejectedException e =
        assertThrows(FrameRejectedException.class, () -> EngineIdentity.decode(payload));
    assertEquals(FrameRejectedException.Reason.MALFORMED_PAYLOAD, e.reason());
    return e.getMessage();
  }

  @Test
  void anEncodedIdentityDecodesToItself() throws FrameRejectedException {
    for (EngineIdentity id :
        new EngineIdentity[] {
          new EngineIdentity("orbite", "127.0.0.1", 1),
          new EngineIdentity("a".repeat(64), "h".repeat(253), 65535),
          new EngineIdentity("kv-cache.node_7", "::1", 7000),
          new EngineIdentity("x", "hôte.example", 443)
        }) {
      ByteBuffer encoded = id.encode();
      assertTrue(encoded.remaining() <= EngineIdentity.MAX_BYTES, id::toString);
      assertEquals(id, EngineIdentity.decode(encoded));
      assertEquals(id.name() + "@" + id.host() + ":" + id.port(), id.toString());
    }
  }

  @Test
  void aMalformedIdentityIsRefusedNamingWhatIsWrong() {
    ByteBuffer good = payload("orbite", "127.0.0.1", 7000);
    assertTrue(refusal(good.duplicate().limit(good.limit() - 1)).contains("ends early"));
    ByteBuffer longer =
        ByteBuffer.allocate(good.remaining() + 1).put(good.duplicate()).put((byte) 0).flip();
    assertTrue(refusal(longer).contains("1 bytes after the port"));
    assertTrue(refusal(payload("", "127.0.0.1", 7000)).contains("name length 0"));
    assertTrue(refusal(payload("a".repeat(65), "127.0.0.1", 7000)).contains("name length 65"));
    assertTrue(refusal(payload("two words", "127.0.0.1", 7000)).contains("engine name"));
    assertTrue(refusal(payload("orbite", "", 7000)).contains("host length 0"));
    assertTrue(refusal(payload("orbite", "a host", 7000)).contains("host \"a host\""));
    assertTrue(refusal(payload("orbite", "h".repeat(254), 7000)).contains("host length 254"));
    assertTrue(refusal(payload("orbite", "127.0.0.1", 0)).contains("port 0"));
    assertTrue(
        refusal(raw(new byte[] {'o', (byte) 0xff}, "h".getBytes(StandardCharsets.UTF_8), 1))
            .contains("name is not valid UTF-8"));
  }

  @Test
  void anIdentityNoEngineCouldHaveCannotBeMade() {
    assertThrows(IllegalArgumentException.class, () -> new EngineIdentity("a b", "h", 1));
    assertThrows(IllegalArgumentException.class, () -> new EngineIdentity("a", "h\n", 1));
    assertThrows(IllegalArgumentException.class, () -> new EngineIdentity("a", "h", 65536));
  }
}
