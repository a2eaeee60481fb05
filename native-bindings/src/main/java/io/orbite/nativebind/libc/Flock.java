package io.orbite.nativebind.libc;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * Layout of {@code struct flock} on Linux x86_64 ({@code <fcntl.h>}, 64-bit {@code off_t}), as
 * passed to {@code fcntl(F_OFD_SETLK / F_OFD_SETLKW / F_OFD_GETLK)}:
 *
 * <pre>
 * struct flock {
 *     short l_type;    // offset  0: F_RDLCK, F_WRLCK, F_UNLCK
 *     short l_whence;  // offset  2: SEEK_SET, SEEK_CUR, SEEK_END
 *                      // 4 bytes padding
 *     off_t l_start;   // offset  8
 *     off_t l_len;     // offset 16: 0 means "to end of file, however large it grows"
 *     pid_t l_pid;     // offset 24: must be 0 for OFD locks
 *                      // 4 bytes padding
 * };                   // size 32, alignment 8
 * </pre>
 *
 * The size and offsets are checked against the system header with gcc in the tests.
 */
public final class Flock {
  /** The struct's layout, named {@code flock}, fields named as in C. */
  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_SHORT.withName("l_type"),
              ValueLayout.JAVA_SHORT.withName("l_whence"),
              MemoryLayout.paddingLayout(4),
              ValueLayout.JAVA_LONG.withName("l_start"),
              ValueLayout.JAVA_LONG.withName("l_len"),
              ValueLayout.JAVA_INT.withName("l_pid"),
              MemoryLayout.paddingLayout(4))
          .withName("flock");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_L_TYPE = LAYOUT.byteOffset(groupElement("l_type"));
  public static final long OFFSET_L_WHENCE = LAYOUT.byteOffset(groupElement("l_whence"));
  public static final long OFFSET_L_START = LAYOUT.byteOffset(groupElement("l_start"));
  public static final long OFFSET_L_LEN = LAYOUT.byteOffset(groupElement("l_len"));
  public static final long OFFSET_L_PID = LAYOUT.byteOffset(groupElement("l_pid"));

  private Flock() {}

  /** A zeroed {@code struct flock} in {@code arena}. */
  public static MemorySegment allocate(Arena arena) {
    return arena.allocate(LAYOUT);
  }

  public static short type(MemorySegment s) {
    return s.get(ValueLayout.JAVA_SHORT, OFFSET_L_TYPE);
  }

  public static void type(MemorySegment s, short value) {
    s.set(ValueLayout.JAVA_SHORT, OFFSET_L_TYPE, value);
  }

  public static short whence(MemorySegment s) {
    return s.get(ValueLayout.JAVA_SHORT, OFFSET_L_WHENCE);
  }

  public static void whence(MemorySegment s, short value) {
    s.set(ValueLayout.JAVA_SHORT, OFFSET_L_WHENCE, value);
  }

  public static long start(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_L_START);
  }

  public static void start(MemorySegment s, long value) {
    s.set(ValueLayout.JAVA_LONG, OFFSET_L_START, value);
  }

  public static long len(MemorySegment s) {
    return s.get(ValueLayout.JAVA_LONG, OFFSET_L_LEN);
  }

  public static void len(MemorySegment s, long value) {
    s.set(ValueLayout.JAVA_LONG, OFFSET_L_LEN, value);
  }

  public static int pid(MemorySegment s) {
    return s.get(ValueLayout.JAVA_INT, OFFSET_L_PID);
  }

  public static void pid(MemorySegment s, int value) {
    s.set(ValueLayout.JAVA_INT, OFFSET_L_PID, value);
  }
}
