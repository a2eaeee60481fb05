package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * OFD locks between two open file descriptions of one memfd: the memfd itself, and a second
 * description opened through {@code /proc/self/fd/<n>}.
 */
class OfdLockTest {
  private int first = -1;
  private int second = -1;

  @BeforeEach
  void openTwoDescriptionsOfOneMemfd() {
    first = Libc.memfd_create("orbite-test-ofd", Libc.MFD_CLOEXEC);
    Libc.ftruncate(first, 4096);
    second = Libc.open("/proc/self/fd/" + first, Libc.O_RDWR | Libc.O_CLOEXEC);
  }

  @AfterEach
  void closeBoth() {
    if (second >= 0) {
      Libc.close(second);
    }
    if (first >= 0) {
      Libc.close(first);
    }
  }

  @Test
  void writeLockOnOneDescriptionMakesANonWaitingWriteLockFromTheOtherFailWithEagainUntilUnlocked() {
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false);

    NativeCallException e =
        assertThrows(
            NativeCallException.class, () -> Libc.ofdLock(second, Libc.F_WRLCK, 0, 0, false));
    assertEquals("fcntl", e.call());
    assertTrue(e.is(Errno.EAGAIN), e.getMessage());
    assertEquals(
        "fcntl(fd="
            + second
            + ", cmd=F_OFD_SETLK, l_type=F_WRLCK, l_start=0, l_len=0) failed: EAGAIN (11)",
        e.getMessage());

    Libc.ofdLock(first, Libc.F_UNLCK, 0, 0, false);
    Libc.ofdLock(second, Libc.F_WRLCK, 0, 0, false); // now succeeds
  }

  @Test
  void readLocksFromTwoDescriptionsAreCompatibleButBlockAWriteLock() {
    Libc.ofdLock(first, Libc.F_RDLCK, 0, 0, false);
    Libc.ofdLock(second, Libc.F_RDLCK, 0, 0, false);
    NativeCallException e =
        assertThrows(
            NativeCallException.class, () -> Libc.ofdLock(second, Libc.F_WRLCK, 0, 0, false));
    assertTrue(e.is(Errno.EAGAIN), e.getMessage());
  }

  @Test
  void nonOverlappingRangesDoNotConflict() {
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 100, false);
    Libc.ofdLock(second, Libc.F_WRLCK, 100, 100, false);
    assertThrows(NativeCallException.class, () -> Libc.ofdLock(second, Libc.F_WRLCK, 99, 1, false));
  }

  @Test
  void locksOfOneDescriptionDoNotConflictWithEachOther() {
    Libc.ofdLock(first, Libc.F_RDLCK, 0, 0, false);
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false); // upgrade in place
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false);
  }

  @Test
  void closingADescriptionReleasesItsLocks() {
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false);
    Libc.close(first);
    first = -1;
    Libc.ofdLock(second, Libc.F_WRLCK, 0, 0, false);
  }

  @Test
  void waitingWriteLockBlocksUntilTheHolderUnlocks() throws Exception {
    Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false);
    CompletableFuture<Void> waiter = new CompletableFuture<>();
    Thread t =
        Thread.ofPlatform()
            .daemon()
            .name("ofd-waiter")
            .start(
                () -> {
                  try {
                    Libc.ofdLock(second, Libc.F_WRLCK, 0, 0, true);
                    waiter.complete(null);
                  } catch (Throwable e) {
                    waiter.completeExceptionally(e);
                  }
                });
    try {
      // The waiter must still be blocked after a while: waiting on its future with a
      // deadline must time out (an event-based wait, not a sleep).
      assertThrows(
          java.util.concurrent.TimeoutException.class,
          () -> waiter.get(300, TimeUnit.MILLISECONDS),
          "F_OFD_SETLKW returned while a conflicting lock was held");
    } finally {
      Libc.ofdLock(first, Libc.F_UNLCK, 0, 0, false);
    }
    waiter.get(10, TimeUnit.SECONDS);
    t.join(10_000);
    NativeCallException e =
        assertThrows(
            NativeCallException.class, () -> Libc.ofdLock(first, Libc.F_WRLCK, 0, 0, false));
    assertTrue(e.is(Errno.EAGAIN), e.getMessage());
  }

  @Test
  void lockOnABadFdFailsWithEbadf() {
    NativeCallException e =
        assertThrows(NativeCallException.class, () -> Libc.ofdLock(-1, Libc.F_RDLCK, 0, 0, true));
    assertTrue(e.is(Errno.EBADF), e.getMessage());
    assertTrue(e.arguments().contains("cmd=F_OFD_SETLKW"), e.arguments());
  }
}
