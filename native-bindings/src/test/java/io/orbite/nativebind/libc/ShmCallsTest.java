package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The calls the SHM transport adds to libc: {@code fstat} (identity of a memfd reopened through
 * /proc), {@code F_OFD_GETLK} (is a liveness lock still held?) and {@code madvise}, with their
 * failure paths.
 */
class ShmCallsTest {
  private static final long PAGE = 4096;

  @Test
  void fstatOfAMemfdReportsItsSizeAndTheSameInodeThroughProc() throws Exception {
    int fd = Libc.memfd_create("orbite-test-fstat", Libc.MFD_CLOEXEC);
    int again = -1;
    try {
      Libc.ftruncate(fd, 5 * PAGE);
      FileStatus st = Libc.fstat(fd);
      assertEquals(5 * PAGE, st.sizeBytes());
      assertEquals(0100000, st.mode() & 0170000, "a memfd is a regular file (S_IFREG)");
      assertEquals(Files.getAttribute(Path.of("/proc/self/fd/" + fd), "unix:ino"), st.inode());
      again = Libc.open("/proc/self/fd/" + fd, Libc.O_RDONLY | Libc.O_CLOEXEC);
      FileStatus st2 = Libc.fstat(again);
      assertEquals(st.inode(), st2.inode(), "reopened through /proc: the same file");
      assertEquals(st.device(), st2.device());
      int other = Libc.memfd_create("orbite-test-fstat-2", Libc.MFD_CLOEXEC);
      try {
        assertNotEquals(st.inode(), Libc.fstat(other).inode(), "another memfd is another inode");
      } finally {
        Libc.close(other);
      }
    } finally {
      if (again >= 0) {
        Libc.close(again);
      }
      Libc.close(fd);
    }
  }

  @Test
  void fstatOfABadFdFailsWithEbadfNamingTheFd() {
    NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.fstat(-1));
    assertEquals("fstat(fd=-1) failed: EBADF (9)", e.getMessage());
    assertEquals("fstat", e.call());
  }

  @Test
  void ofdTestLockSeesAnotherDescriptionsLockButNotItsOwn() {
    int first = Libc.memfd_create("orbite-test-getlk", Libc.MFD_CLOEXEC);
    int second = Libc.open("/proc/self/fd/" + first, Libc.O_RDWR | Libc.O_CLOEXEC);
    try {
      long at = 1L << 62; // far beyond the file's end: lock ranges need not hold data
      assertEquals(Libc.F_UNLCK, Libc.ofdTestLock(second, Libc.F_WRLCK, at, 1), "nothing held yet");
      Libc.ofdLock(first, Libc.F_RDLCK, at, 1, false);
      assertEquals(
          Libc.F_RDLCK, Libc.ofdTestLock(second, Libc.F_WRLCK, at, 1), "the read lock conflicts");
      assertEquals(Libc.F_UNLCK, Libc.ofdTestLock(second, Libc.F_RDLCK, at, 1), "read locks share");
      assertEquals(
          Libc.F_UNLCK, Libc.ofdTestLock(first, Libc.F_WRLCK, at, 1), "own locks never conflict");
      assertEquals(
          Libc.F_UNLCK, Libc.ofdTestLock(second, Libc.F_WRLCK, at + 1, 1), "other byte is free");
      Libc.ofdLock(first, Libc.F_UNLCK, at, 1, false);
      assertEquals(Libc.F_UNLCK, Libc.ofdTestLock(second, Libc.F_WRLCK, at, 1), "released");
      Libc.ofdLock(first, Libc.F_WRLCK, at, 1, false);
      assertEquals(
          Libc.F_WRLCK, Libc.ofdTestLock(second, Libc.F_RDLCK, at, 1), "a write lock conflicts");
    } finally {
      Libc.close(second);
      Libc.close(first);
    }
  }

  @Test
  void ofdTestLockSeesALockVanishWhenItsDescriptionCloses() {
    int first = Libc.memfd_create("orbite-test-getlk-close", Libc.MFD_CLOEXEC);
    int second = Libc.open("/proc/self/fd/" + first, Libc.O_RDWR | Libc.O_CLOEXEC);
    try {
      Libc.ofdLock(first, Libc.F_RDLCK, 7, 1, false);
      assertEquals(Libc.F_RDLCK, Libc.ofdTestLock(second, Libc.F_WRLCK, 7, 1));
      Libc.close(first);
      first = -1;
      assertEquals(
          Libc.F_UNLCK,
          Libc.ofdTestLock(second, Libc.F_WRLCK, 7, 1),
          "the holder's close released it");
    } finally {
      Libc.close(second);
      if (first >= 0) {
        Libc.close(first);
      }
    }
  }

  @Test
  void ofdTestLockOfABadFdOrABadRangeFails() {
    NativeCallException bad =
        assertThrows(NativeCallException.class, () -> Libc.ofdTestLock(-1, Libc.F_WRLCK, 0, 1));
    assertTrue(bad.is(Errno.EBADF), bad.getMessage());
    assertEquals(
        "fcntl(fd=-1, cmd=F_OFD_GETLK, l_type=F_WRLCK, l_start=0, l_len=1) failed: EBADF (9)",
        bad.getMessage());
    int fd = Libc.memfd_create("orbite-test-getlk-bad", Libc.MFD_CLOEXEC);
    try {
      NativeCallException negative =
          assertThrows(NativeCallException.class, () -> Libc.ofdTestLock(fd, Libc.F_WRLCK, -5, 1));
      assertTrue(negative.is(Errno.EINVAL), negative.getMessage());
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void madvisePopulateWriteOnASharedMappingKeepsItsBytes() {
    int fd = Libc.memfd_create("orbite-test-madvise", Libc.MFD_CLOEXEC);
    try {
      Libc.ftruncate(fd, 4 * PAGE);
      MemorySegment m =
          Libc.mmap(4 * PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      try {
        m.set(ValueLayout.JAVA_LONG, PAGE, 0x1122334455667788L);
        Libc.madvise(m, Libc.MADV_POPULATE_WRITE);
        assertEquals(0x1122334455667788L, m.get(ValueLayout.JAVA_LONG, PAGE));
      } finally {
        Libc.munmap(m);
      }
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void madviseOfAMisalignedAddressFailsWithEinvalNamingTheAdvice() {
    MemorySegment s = Libc.mmap(PAGE, Libc.PROT_READ, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0);
    try {
      MemorySegment misaligned = s.asSlice(1, 16);
      NativeCallException e =
          assertThrows(
              NativeCallException.class, () -> Libc.madvise(misaligned, Libc.MADV_WILLNEED));
      assertTrue(e.is(Errno.EINVAL), e.getMessage());
      assertEquals(
          "address=0x" + Long.toHexString(s.address() + 1) + ", length=16, advice=MADV_WILLNEED",
          e.arguments());
    } finally {
      Libc.munmap(s);
    }
  }
}
