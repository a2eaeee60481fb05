package io.orbite.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The codes enums travel as are fixed by the protocol, not by declaration order: each is pinned
 * here, and reading a code back gives the same constant.
 */
class WireCodesTest {
  @Test
  void transportCodesAreFixedAndReadBack() {
    Map<Transport, Integer> pinned =
        Map.of(
            Transport.UNSPEC,
            0,
            Transport.TCP,
            1,
            Transport.SHM,
            2,
            Transport.FILE,
            3,
            Transport.RDMA,
            4);
    assertEquals(
        Transport.values().length, pinned.size(), "a new transport needs a pinned code here");
    pinned.forEach(
        (t, code) -> {
          assertEquals(code, t.code(), t::name);
          assertEquals(t, Transport.fromCode(code), t::name);
        });
    assertNull(Transport.fromCode(5));
    assertNull(Transport.fromCode(-1));
    assertNull(
        Transport.fromCode(1L << 32 | 1), "a code is compared whole, not truncated to an int");
  }

  @Test
  void accessCodesAreFixedAndReadBack() {
    Map<Access, Integer> pinned = Map.of(Access.READ, 1, Access.WRITE, 2, Access.READ_WRITE, 3);
    assertEquals(Access.values().length, pinned.size(), "a new access needs a pinned code here");
    pinned.forEach(
        (a, code) -> {
          assertEquals(code, a.code(), a::name);
          assertEquals(a, Access.fromCode(code), a::name);
        });
    assertThrows(IllegalArgumentException.class, () -> Access.fromCode(0));
    assertThrows(IllegalArgumentException.class, () -> Access.fromCode(4));
  }
}
