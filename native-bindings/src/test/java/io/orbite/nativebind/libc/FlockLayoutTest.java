package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.CHeaderProbe;
import io.orbite.nativebind.testkit.Prerequisite;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Flock} and the {@link Libc} constants against the system headers. */
class FlockLayoutTest {

  @Test
  void flockLayoutIsTheLinuxX86_64One() {
    assertEquals(32, Flock.SIZE);
    assertEquals(8, Flock.LAYOUT.byteAlignment());
    assertEquals(0, Flock.OFFSET_L_TYPE);
    assertEquals(2, Flock.OFFSET_L_WHENCE);
    assertEquals(8, Flock.OFFSET_L_START);
    assertEquals(16, Flock.OFFSET_L_LEN);
    assertEquals(24, Flock.OFFSET_L_PID);
  }

  @Test
  void flockAccessorsRoundTripEachField() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = Flock.allocate(arena);
      Flock.type(s, Libc.F_WRLCK);
      Flock.whence(s, Libc.SEEK_SET);
      Flock.start(s, 1L << 40);
      Flock.len(s, 12345);
      Flock.pid(s, 77);
      assertEquals(Libc.F_WRLCK, Flock.type(s));
      assertEquals(Libc.SEEK_SET, Flock.whence(s));
      assertEquals(1L << 40, Flock.start(s));
      assertEquals(12345, Flock.len(s));
      assertEquals(77, Flock.pid(s));
    }
  }

  @Test
  void flockLayoutMatchesTheSystemHeaderWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("struct flock"));
    Map<String, String> e = new LinkedHashMap<>();
    e.put("sizeof", "sizeof(struct flock)");
    e.put("alignof", "_Alignof(struct flock)");
    e.put("l_type", "offsetof(struct flock, l_type)");
    e.put("l_whence", "offsetof(struct flock, l_whence)");
    e.put("l_start", "offsetof(struct flock, l_start)");
    e.put("l_len", "offsetof(struct flock, l_len)");
    e.put("l_pid", "offsetof(struct flock, l_pid)");
    e.put("sizeof_l_type", "sizeof(((struct flock *)0)->l_type)");
    e.put("sizeof_l_start", "sizeof(((struct flock *)0)->l_start)");
    e.put("sizeof_l_pid", "sizeof(((struct flock *)0)->l_pid)");
    Map<String, Long> c = CHeaderProbe.probe(gcc.get(), dir, List.of("fcntl.h"), e);
    assertEquals(c.get("sizeof"), Flock.SIZE, "sizeof(struct flock)");
    assertEquals(c.get("alignof"), Flock.LAYOUT.byteAlignment(), "alignment");
    assertEquals(c.get("l_type"), Flock.OFFSET_L_TYPE, "l_type");
    assertEquals(c.get("l_whence"), Flock.OFFSET_L_WHENCE, "l_whence");
    assertEquals(c.get("l_start"), Flock.OFFSET_L_START, "l_start");
    assertEquals(c.get("l_len"), Flock.OFFSET_L_LEN, "l_len");
    assertEquals(c.get("l_pid"), Flock.OFFSET_L_PID, "l_pid");
    assertEquals(c.get("sizeof_l_type"), Short.BYTES, "sizeof l_type");
    assertEquals(c.get("sizeof_l_start"), Long.BYTES, "sizeof l_start");
    assertEquals(c.get("sizeof_l_pid"), Integer.BYTES, "sizeof l_pid");
  }

  @Test
  void libcConstantsMatchTheSystemHeadersWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("libc constants"));
    Map<String, Long> ours = new LinkedHashMap<>();
    ours.put("PROT_NONE", (long) Libc.PROT_NONE);
    ours.put("PROT_READ", (long) Libc.PROT_READ);
    ours.put("PROT_WRITE", (long) Libc.PROT_WRITE);
    ours.put("PROT_EXEC", (long) Libc.PROT_EXEC);
    ours.put("MAP_SHARED", (long) Libc.MAP_SHARED);
    ours.put("MAP_PRIVATE", (long) Libc.MAP_PRIVATE);
    ours.put("MAP_FIXED", (long) Libc.MAP_FIXED);
    ours.put("MAP_ANONYMOUS", (long) Libc.MAP_ANONYMOUS);
    ours.put("MAP_LOCKED", (long) Libc.MAP_LOCKED);
    ours.put("MAP_NORESERVE", (long) Libc.MAP_NORESERVE);
    ours.put("MAP_POPULATE", (long) Libc.MAP_POPULATE);
    ours.put("MAP_HUGETLB", (long) Libc.MAP_HUGETLB);
    ours.put("MFD_CLOEXEC", (long) Libc.MFD_CLOEXEC);
    ours.put("MFD_ALLOW_SEALING", (long) Libc.MFD_ALLOW_SEALING);
    ours.put("MFD_HUGETLB", (long) Libc.MFD_HUGETLB);
    ours.put("O_RDONLY", (long) Libc.O_RDONLY);
    ours.put("O_WRONLY", (long) Libc.O_WRONLY);
    ours.put("O_RDWR", (long) Libc.O_RDWR);
    ours.put("O_CREAT", (long) Libc.O_CREAT);
    ours.put("O_EXCL", (long) Libc.O_EXCL);
    ours.put("O_TRUNC", (long) Libc.O_TRUNC);
    ours.put("O_CLOEXEC", (long) Libc.O_CLOEXEC);
    ours.put("F_GETFL", (long) Libc.F_GETFL);
    ours.put("F_SETFL", (long) Libc.F_SETFL);
    ours.put("O_NONBLOCK", (long) Libc.O_NONBLOCK);
    ours.put("F_OFD_GETLK", (long) Libc.F_OFD_GETLK);
    ours.put("F_OFD_SETLK", (long) Libc.F_OFD_SETLK);
    ours.put("F_OFD_SETLKW", (long) Libc.F_OFD_SETLKW);
    ours.put("F_RDLCK", (long) Libc.F_RDLCK);
    ours.put("F_WRLCK", (long) Libc.F_WRLCK);
    ours.put("F_UNLCK", (long) Libc.F_UNLCK);
    ours.put("SEEK_SET", (long) Libc.SEEK_SET);
    Map<String, String> e = new LinkedHashMap<>();
    ours.keySet().forEach(k -> e.put(k, k));
    Map<String, Long> c =
        CHeaderProbe.probe(gcc.get(), dir, List.of("fcntl.h", "sys/mman.h", "unistd.h"), e);
    ours.forEach((name, value) -> assertEquals(c.get(name), value, name));
  }
}
