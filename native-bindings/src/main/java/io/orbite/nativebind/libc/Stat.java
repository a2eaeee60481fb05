package io.orbite.nativebind.libc;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * Layout of {@code struct stat} on Linux x86_64 with glibc ({@code <sys/stat.h>}), as filled by
 * {@code fstat}:
 *
 * <pre>
 * struct stat {
 *     dev_t     st_dev;      // offset   0
 *     ino_t     st_ino;      // offset   8
 *     nlink_t   st_nlink;    // offset  16 (8 bytes on x86_64)
 *     mode_t    st_mode;     // offset  24
 *     uid_t     st_uid;      // offset  28
 *     gid_t     st_gid;      // offset  32
 *     int       __pad0;      // offset  36
 *     dev_t     st_rdev;     // offset  40
 *     off_t     st_size;     // offset  48
 *     blksize_t st_blksize;  // offset  56
 *     blkcnt_t  st_blocks;   // offset  64
 *     struct timespec st_atim, st_mtim, st_ctim;   // offsets 72, 88, 104
 *     long      __glibc_reserved[3];               // offset 120
 * };                         // size 144, alignment 8
 * </pre>
 *
 * Only the fields OrbiTE reads have accessors. The size and offsets are checked against the system
 * header with gcc in the tests.
 */
public final class Stat {
  /** The struct's layout, named {@code stat}, fields named as in C. */
  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_LONG.withName("st_dev"),
              ValueLayout.JAVA_LONG.withName("st_ino"),
              ValueLayout.JAVA_LONG.withName("st_nlink"),
              ValueLayout.JAVA_INT.withName("st_mode"),
              ValueLayout.JAVA_INT.withName("st_uid"),
              ValueLayout.JAVA_INT.withName("st_gid"),
              MemoryLayout.paddingLayout(4),
              ValueLayout.JAVA_LONG.withName("st_rdev"),
              ValueLayout.JAVA_LONG.withName("st_size"),
              ValueLayout.JAVA_LONG.withName("st_blksize"),
              ValueLayout.JAVA_LONG.withName("st_blocks"),
              MemoryLayout.paddingLayout(
                  3 * 16 + 3 * 8) // st_atim, st_mtim, st_ctim, __glibc_reserved
              )
          .withName("stat");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_ST_DEV = LAYOUT.byteOffset(groupElement("st_dev"));
  public static final long OFFSET_ST_INO = LAYOUT.byteOffset(groupElement("st_ino"));
  public static final long OFFSET_ST_NLINK = LAYOUT.byteOffset(groupElement("st_nlink"));
  public static final long OFFSET_ST_MODE = LAYOUT.byteOffset(groupElement("st_mode"));
  public static final long OFFSET_ST_UID = LAYOUT.byteOffset(groupElement("st_uid"));
  public static final long OFFSET_ST_GID = LAYOUT.byteOffset(groupElement("st_gid"));
  public static final long OFFSET_ST_SIZE = LAYOUT.byteOffset(groupElement("st_size"));

  private Stat() {}

  /** A zeroed {@code struct stat} in {@code arena}. */
  public static MemorySegment allocate(Arena arena) {
    return arena.allocate(LAYOUT);
  }

  public static long dev(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_ST_DEV);
  }

  public static long ino(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_ST_INO);
  }

  public static long nlink(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_ST_NLINK);
  }

  public static int mode(MemorySegment s) {
    return s.get(ValueLayout.JAVA_INT, OFFSET_ST_MODE);
  }

  public static int uid(MemorySegment s) {
    return s.get(ValueLayout.JAVA_INT, OFFSET_ST_UID);
  }

  public static int gid(MemorySegment s) {
    return s.get(ValueLayout.JAVA_INT, OFFSET_ST_GID);
  }

  public static long size(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_ST_SIZE);
  }

  /** The fields OrbiTE uses, copied out of a filled struct. */
  public static FileStatus read(MemorySegment s) {
    return new FileStatus(dev(s), ino(s), mode(s), nlink(s), uid(s), gid(s), size(s));
  }
}
