package io.orbite.nativebind;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class NativeCallExceptionTest {

  @Test
  void messageNamesCallArgumentsErrnoNameAndNumber() {
    NativeCallException e = new NativeCallException("close", "fd=-1", 9);
    assertEquals("close(fd=-1) failed: EBADF (9)", e.getMessage());
    assertEquals("close", e.call());
    assertEquals("fd=-1", e.arguments());
    assertEquals(9, e.errno());
    assertEquals("EBADF", e.errnoName());
    assertEquals(Optional.of(Errno.EBADF), e.errnoConstant());
    assertTrue(e.is(Errno.EBADF));
    assertFalse(e.is(Errno.EINVAL));
  }

  @Test
  void unknownErrnoRendersAsErrnoAndNumber() {
    NativeCallException e = new NativeCallException("ioctl", "fd=3, request=0x1", 1234);
    assertEquals("ioctl(fd=3, request=0x1) failed: errno 1234", e.getMessage());
    assertEquals("errno 1234", e.errnoName());
    assertEquals(Optional.empty(), e.errnoConstant());
  }

  @Test
  void isUncheckedRuntimeException() {
    assertTrue(RuntimeException.class.isAssignableFrom(NativeCallException.class));
    assertTrue(RuntimeException.class.isAssignableFrom(NativeUnavailableException.class));
  }
}
