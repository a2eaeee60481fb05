package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class LibcTest {
  private static final long PAGE = 4096;

  @Test
  void killStopsContinuesAndKillsAChildProcess() throws Exception {
    Process child = new ProcessBuilder("sleep", "60").start();
    int pid = (int) child.pid();
    try {
      Libc.kill(pid, Libc.SIGSTOP);
      org.junit.jupiter.api.Assertions.assertTrue(waitForState(pid, 'T'), "stopped (state T)");
      Libc.kill(pid, Libc.SIGCONT);
      org.junit.jupiter.api.Assertions.assertTrue(
          waitForState(pid, 'S'), "running again (state S)");
      Libc.kill(pid, Libc.SIGKILL);
      org.junit.jupiter.api.Assertions.assertTrue(
          child.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
      org.junit.jupiter.api.Assertions.assertEquals(128 + Libc.SIGKILL, child.exitValue());
    } finally {
      child.destroyForcibly();
    }
  }

  @Test
  void killOfANonexistentProcessFailsWithEsrch() {
    NativeCallException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            NativeCallException.class, () -> Libc.kill(Integer.MAX_VALUE, 0));
    org.junit.jupiter.api.Assertions.assertTrue(
        e.is(io.orbite.nativebind.Errno.ESRCH), e.getMessage());
    org.junit.jupiter.api.Assertions.assertTrue(
        e.getMessage().startsWith("kill(pid=2147483647, sig=0) failed: ESRCH"), e.getMessage());
  }

  /** Polls /proc/pid/stat until the process state is {@code state}, for up to 10 s. */
  private static boolean waitForState(int pid, char state) throws java.io.IOException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    java.nio.file.Path stat = java.nio.file.Path.of("/proc/" + pid + "/stat");
    while (System.nanoTime() < deadline) {
      String s = java.nio.file.Files.readString(stat);
      if (s.charAt(s.lastIndexOf(')') + 2) == state) {
        return true;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    return false;
  }

  @Test
  void libcIsAvailableOnLinuxX86_64() {
    assertTrue(Libc.isAvailable(), () -> "unavailable: " + Libc.unavailabilityCause());
    assertTrue(Libc.unavailabilityCause().isEmpty());
  }

  @Test
  void getpidEqualsTheJvmsProcessId() {
    assertEquals(ProcessHandle.current().pid(), Libc.getpid());
  }

  @Test
  void setNonBlockingSetsONonblockOnTheDescriptorAndNamesABadOne() throws Exception {
    Process cat = new ProcessBuilder("cat").start(); // a pipe to read from that stays empty
    try {
      int fd = Libc.open("/proc/" + cat.pid() + "/fd/1", Libc.O_RDONLY | Libc.O_CLOEXEC);
      try {
        Libc.setNonBlocking(fd);
        int flags =
            Integer.parseInt(
                Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd)).stream()
                    .filter(l -> l.startsWith("flags:"))
                    .findFirst()
                    .orElseThrow()
                    .substring("flags:".length())
                    .trim(),
                8);
        assertEquals(
            Libc.O_NONBLOCK, flags & Libc.O_NONBLOCK, "flags " + Integer.toOctalString(flags));
      } finally {
        Libc.close(fd);
      }
    } finally {
      cat.destroyForcibly().waitFor();
    }
    NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.setNonBlocking(-1));
    assertEquals("fcntl(fd=-1 O_NONBLOCK) failed: EBADF (9)", e.getMessage());
  }

  @Test
  void closeOfMinusOneThrowsNativeCallExceptionNamingCloseFdAndEbadf() {
    NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.close(-1));
    assertEquals("close(fd=-1) failed: EBADF (9)", e.getMessage());
    assertEquals("close", e.call());
    assertEquals("fd=-1", e.arguments());
    assertEquals(Errno.EBADF.number(), e.errno());
    assertEquals("EBADF", e.errnoName());
  }

  @Test
  void ftruncateOnABadFdFailsWithEbadf() {
    NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.ftruncate(-1, 4096));
    assertEquals("ftruncate", e.call());
    assertTrue(e.is(Errno.EBADF), e.getMessage());
    assertEquals("ftruncate(fd=-1, length=4096) failed: EBADF (9)", e.getMessage());
  }

  @Test
  void mmapOfLengthZeroFailsWithEinvalNamingMmap() {
    NativeCallException e =
        assertThrows(
            NativeCallException.class,
            () ->
                Libc.mmap(
                    0,
                    Libc.PROT_READ | Libc.PROT_WRITE,
                    Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS,
                    -1,
                    0));
    assertEquals("mmap", e.call());
    assertTrue(e.is(Errno.EINVAL), e.getMessage());
    assertTrue(
        e.getMessage()
            .startsWith(
                "mmap(length=0, prot=PROT_READ|PROT_WRITE, flags=MAP_PRIVATE|MAP_ANONYMOUS, fd=-1, offset=0)"),
        e.getMessage());
    assertTrue(e.getMessage().endsWith("failed: EINVAL (22)"), e.getMessage());
  }

  @Test
  void mmapSharedOfABadFdFailsWithEbadf() {
    NativeCallException e =
        assertThrows(
            NativeCallException.class,
            () -> Libc.mmap(PAGE, Libc.PROT_READ, Libc.MAP_SHARED, -1, 0));
    assertTrue(e.is(Errno.EBADF), e.getMessage());
  }

  @Test
  void memfdCreateAndFtruncateGiveAFileOfThatSize() throws Exception {
    int fd = Libc.memfd_create("orbite-test-size", Libc.MFD_CLOEXEC);
    try {
      assertTrue(fd >= 0);
      Path link = Path.of("/proc/self/fd/" + fd);
      assertTrue(
          Files.readSymbolicLink(link).toString().startsWith("/memfd:orbite-test-size"),
          Files.readSymbolicLink(link).toString());
      assertEquals(0, Files.size(link));
      Libc.ftruncate(fd, 3 * PAGE);
      assertEquals(3 * PAGE, Files.size(link));
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void memfdCreateWithTooLongANameFailsWithEinvalNamingTheName() {
    String name = "n".repeat(300); // the kernel allows at most 249 bytes
    NativeCallException e =
        assertThrows(NativeCallException.class, () -> Libc.memfd_create(name, Libc.MFD_CLOEXEC));
    assertEquals("memfd_create", e.call());
    assertTrue(e.is(Errno.EINVAL), e.getMessage());
    assertTrue(e.arguments().contains("name=\"" + name + "\""), e.arguments());
    assertTrue(e.arguments().contains("flags=MFD_CLOEXEC"), e.arguments());
  }

  @Test
  void twoMappingsOfTheSameMemfdShareBytes() {
    int fd = Libc.memfd_create("orbite-test-share", Libc.MFD_CLOEXEC);
    try {
      Libc.ftruncate(fd, 2 * PAGE);
      MemorySegment a =
          Libc.mmap(2 * PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      MemorySegment b =
          Libc.mmap(2 * PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      try {
        assertFalse(a.address() == b.address(), "two distinct mappings expected");
        a.set(ValueLayout.JAVA_LONG, PAGE + 8, 0x0123456789abcdefL);
        assertEquals(0x0123456789abcdefL, b.get(ValueLayout.JAVA_LONG, PAGE + 8));
        b.set(ValueLayout.JAVA_BYTE, 0, (byte) 42);
        assertEquals((byte) 42, a.get(ValueLayout.JAVA_BYTE, 0));
      } finally {
        Libc.munmap(a);
        Libc.munmap(b);
      }
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void mappingAtAnOffsetSeesTheFileFromThatOffset() {
    int fd = Libc.memfd_create("orbite-test-offset", Libc.MFD_CLOEXEC);
    try {
      Libc.ftruncate(fd, 2 * PAGE);
      MemorySegment whole =
          Libc.mmap(2 * PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, fd, 0);
      MemorySegment second = Libc.mmap(PAGE, Libc.PROT_READ, Libc.MAP_SHARED, fd, PAGE);
      try {
        whole.set(ValueLayout.JAVA_INT, PAGE + 4, 777);
        assertEquals(777, second.get(ValueLayout.JAVA_INT, 4));
      } finally {
        Libc.munmap(second);
        Libc.munmap(whole);
      }
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void mmapReturnsASegmentBoundedToTheRequestedLength() {
    MemorySegment s =
        Libc.mmap(
            PAGE, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0);
    try {
      assertEquals(PAGE, s.byteSize());
      assertEquals(0, s.address() % PAGE);
      s.set(ValueLayout.JAVA_BYTE, PAGE - 1, (byte) 1);
      assertThrows(IndexOutOfBoundsException.class, () -> s.get(ValueLayout.JAVA_BYTE, PAGE));
    } finally {
      Libc.munmap(s);
    }
  }

  @Test
  void munmapOfAMisalignedAddressFailsWithEinval() {
    MemorySegment s = Libc.mmap(PAGE, Libc.PROT_READ, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0);
    try {
      MemorySegment misaligned = s.asSlice(1, 16);
      NativeCallException e =
          assertThrows(NativeCallException.class, () -> Libc.munmap(misaligned));
      assertEquals("munmap", e.call());
      assertTrue(e.is(Errno.EINVAL), e.getMessage());
      assertEquals("address=0x" + Long.toHexString(s.address() + 1) + ", length=16", e.arguments());
    } finally {
      Libc.munmap(s);
    }
  }

  @Test
  void openOfAMissingPathFailsWithEnoentNamingThePath() {
    NativeCallException e =
        assertThrows(
            NativeCallException.class,
            () -> Libc.open("/nonexistent/orbite-test", Libc.O_RDONLY | Libc.O_CLOEXEC));
    assertEquals("open", e.call());
    assertTrue(e.is(Errno.ENOENT), e.getMessage());
    assertEquals(
        "open(path=\"/nonexistent/orbite-test\", flags=O_RDONLY|O_CLOEXEC, mode=00) failed: ENOENT (2)",
        e.getMessage());
  }

  @Test
  void openWithCreateUsesTheGivenMode(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    Path file = dir.resolve("created");
    int fd =
        Libc.open(file.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_EXCL | Libc.O_CLOEXEC, 0640);
    try {
      assertTrue(Files.exists(file));
      // mode 0640, less whatever the umask removes: never more than rw-r-----
      java.util.Set<java.nio.file.attribute.PosixFilePermission> perms =
          Files.getPosixFilePermissions(file);
      assertTrue(
          java.nio.file.attribute.PosixFilePermissions.fromString("rw-r-----").containsAll(perms),
          perms.toString());
      assertTrue(
          perms.contains(java.nio.file.attribute.PosixFilePermission.OWNER_READ), perms.toString());
      NativeCallException e =
          assertThrows(
              NativeCallException.class,
              () -> Libc.open(file.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_EXCL, 0600));
      assertTrue(e.is(Errno.EEXIST), e.getMessage());
    } finally {
      Libc.close(fd);
    }
  }

  @Test
  void gethostnameIsNonEmptyAndMatchesTheKernel() throws Exception {
    String name = Libc.gethostname();
    assertFalse(name.isEmpty());
    assertEquals(Files.readString(Path.of("/proc/sys/kernel/hostname")).trim(), name);
  }

  @Test
  void closeReleasesTheDescriptor() {
    int fd = Libc.memfd_create("orbite-test-close", Libc.MFD_CLOEXEC);
    Libc.close(fd);
    NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.close(fd));
    assertTrue(e.is(Errno.EBADF), e.getMessage());
  }

  @Test
  void pollWaitsForAnEventfdToBecomeReadableAndTimesOutWhileItIsNot() {
    int fd = Libc.eventfd(0, Libc.EFD_CLOEXEC | Libc.EFD_NONBLOCK);
    try {
      assertEquals(0, Libc.poll(fd, Libc.POLLIN, 0), "a zero counter is not readable");
      assertEquals(0, Libc.poll(fd, Libc.POLLIN, 20), "nor after a 20 ms wait");
      Libc.eventfdWrite(fd, 1);
      assertEquals(Libc.POLLIN, Libc.poll(fd, Libc.POLLIN, 1_000), "readable once written");
    } finally {
      Libc.close(fd);
    }
  }
}
