package io.orbite.nativebind;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.testkit.Prerequisite;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ErrnoTest {

  @Test
  void commonLinuxNumbersMapToTheirSymbolicNames() {
    Map<Integer, String> expected = new LinkedHashMap<>();
    expected.put(1, "EPERM");
    expected.put(2, "ENOENT");
    expected.put(4, "EINTR");
    expected.put(5, "EIO");
    expected.put(9, "EBADF");
    expected.put(11, "EAGAIN");
    expected.put(12, "ENOMEM");
    expected.put(13, "EACCES");
    expected.put(14, "EFAULT");
    expected.put(16, "EBUSY");
    expected.put(17, "EEXIST");
    expected.put(22, "EINVAL");
    expected.put(23, "ENFILE");
    expected.put(24, "EMFILE");
    expected.put(28, "ENOSPC");
    expected.put(32, "EPIPE");
    expected.put(34, "ERANGE");
    expected.put(38, "ENOSYS");
    expected.put(95, "EOPNOTSUPP");
    expected.put(110, "ETIMEDOUT");
    expected.put(125, "ECANCELED");
    expected.put(104, "ECONNRESET");
    expected.put(111, "ECONNREFUSED");
    expected.forEach(
        (number, name) -> {
          assertEquals(name, Errno.nameOf(number));
          assertEquals(number, Errno.valueOf(name).number());
        });
  }

  @Test
  void unknownNumberRendersAsErrnoAndNumber() {
    assertEquals("errno 1234", Errno.nameOf(1234));
    assertEquals("errno 1234", Errno.describe(1234));
    assertEquals(Optional.empty(), Errno.of(1234));
    assertEquals("errno 0", Errno.nameOf(0));
  }

  @Test
  void knownNumberDescribesAsNameAndNumber() {
    assertEquals("EBADF (9)", Errno.describe(9));
    assertEquals(Optional.of(Errno.EINVAL), Errno.of(22));
  }

  @Test
  void aliasesShareTheirNumberWithTheCanonicalConstant() {
    assertSame(Errno.EOPNOTSUPP, Errno.ENOTSUP);
    assertSame(Errno.EAGAIN, Errno.EWOULDBLOCK);
    assertSame(Errno.EDEADLK, Errno.EDEADLOCK);
    assertEquals(95, Errno.ENOTSUP.number());
  }

  @Test
  void everyConstantMatchesTheSystemHeaderWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("errno numbers"));
    Map<String, String> expressions = new LinkedHashMap<>();
    for (Errno e : Errno.values()) {
      expressions.put(e.name(), e.name());
    }
    expressions.put("EWOULDBLOCK", "EWOULDBLOCK");
    expressions.put("ENOTSUP", "ENOTSUP");
    expressions.put("EDEADLOCK", "EDEADLOCK");
    Map<String, Long> actual = CHeaderProbe.probe(gcc.get(), dir, List.of("errno.h"), expressions);
    for (Errno e : Errno.values()) {
      assertEquals(actual.get(e.name()).longValue(), e.number(), e.name());
    }
    assertEquals(actual.get("EWOULDBLOCK").longValue(), Errno.EWOULDBLOCK.number());
    assertEquals(actual.get("ENOTSUP").longValue(), Errno.ENOTSUP.number());
    assertEquals(actual.get("EDEADLOCK").longValue(), Errno.EDEADLOCK.number());
    assertTrue(actual.size() > 20);
  }
}
