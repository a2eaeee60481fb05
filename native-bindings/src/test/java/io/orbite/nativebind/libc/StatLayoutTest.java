package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.CHeaderProbe;
import io.orbite.nativebind.testkit.Prerequisite;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Stat} and the madvise constants against the system headers. */
class StatLayoutTest {

  @Test
  void statLayoutIsTheLinuxX86_64One() {
    assertEquals(144, Stat.SIZE);
    assertEquals(8, Stat.LAYOUT.byteAlignment());
    assertEquals(0, Stat.OFFSET_ST_DEV);
    assertEquals(8, Stat.OFFSET_ST_INO);
    assertEquals(16, Stat.OFFSET_ST_NLINK);
    assertEquals(24, Stat.OFFSET_ST_MODE);
    assertEquals(28, Stat.OFFSET_ST_UID);
    assertEquals(32, Stat.OFFSET_ST_GID);
    assertEquals(48, Stat.OFFSET_ST_SIZE);
  }

  @Test
  void statLayoutMatchesTheSystemHeaderWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("struct stat"));
    Map<String, String> e = new LinkedHashMap<>();
    e.put("sizeof", "sizeof(struct stat)");
    e.put("alignof", "_Alignof(struct stat)");
    e.put("st_dev", "offsetof(struct stat, st_dev)");
    e.put("st_ino", "offsetof(struct stat, st_ino)");
    e.put("st_nlink", "offsetof(struct stat, st_nlink)");
    e.put("st_mode", "offsetof(struct stat, st_mode)");
    e.put("st_uid", "offsetof(struct stat, st_uid)");
    e.put("st_gid", "offsetof(struct stat, st_gid)");
    e.put("st_size", "offsetof(struct stat, st_size)");
    e.put("sizeof_st_ino", "sizeof(((struct stat *)0)->st_ino)");
    e.put("sizeof_st_nlink", "sizeof(((struct stat *)0)->st_nlink)");
    e.put("sizeof_st_mode", "sizeof(((struct stat *)0)->st_mode)");
    e.put("sizeof_st_size", "sizeof(((struct stat *)0)->st_size)");
    e.put("MADV_NORMAL", "MADV_NORMAL");
    e.put("MADV_WILLNEED", "MADV_WILLNEED");
    e.put("MADV_DONTNEED", "MADV_DONTNEED");
    e.put("MADV_POPULATE_READ", "MADV_POPULATE_READ");
    e.put("MADV_POPULATE_WRITE", "MADV_POPULATE_WRITE");
    Map<String, Long> c =
        CHeaderProbe.probe(gcc.get(), dir, List.of("sys/stat.h", "sys/mman.h"), e);
    assertEquals(c.get("sizeof"), Stat.SIZE, "sizeof(struct stat)");
    assertEquals(c.get("alignof"), Stat.LAYOUT.byteAlignment(), "alignment");
    assertEquals(c.get("st_dev"), Stat.OFFSET_ST_DEV, "st_dev");
    assertEquals(c.get("st_ino"), Stat.OFFSET_ST_INO, "st_ino");
    assertEquals(c.get("st_nlink"), Stat.OFFSET_ST_NLINK, "st_nlink");
    assertEquals(c.get("st_mode"), Stat.OFFSET_ST_MODE, "st_mode");
    assertEquals(c.get("st_uid"), Stat.OFFSET_ST_UID, "st_uid");
    assertEquals(c.get("st_gid"), Stat.OFFSET_ST_GID, "st_gid");
    assertEquals(c.get("st_size"), Stat.OFFSET_ST_SIZE, "st_size");
    assertEquals(c.get("sizeof_st_ino"), Long.BYTES, "sizeof st_ino");
    assertEquals(c.get("sizeof_st_nlink"), Long.BYTES, "sizeof st_nlink");
    assertEquals(c.get("sizeof_st_mode"), Integer.BYTES, "sizeof st_mode");
    assertEquals(c.get("sizeof_st_size"), Long.BYTES, "sizeof st_size");
    assertEquals(c.get("MADV_NORMAL"), (long) Libc.MADV_NORMAL);
    assertEquals(c.get("MADV_WILLNEED"), (long) Libc.MADV_WILLNEED);
    assertEquals(c.get("MADV_DONTNEED"), (long) Libc.MADV_DONTNEED);
    assertEquals(c.get("MADV_POPULATE_READ"), (long) Libc.MADV_POPULATE_READ);
    assertEquals(c.get("MADV_POPULATE_WRITE"), (long) Libc.MADV_POPULATE_WRITE);
  }
}
