package io.orbite.nativebind.uring;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_sqe}, the submission queue entry, as far as READ, WRITE, NOP and
 * ASYNC_CANCEL use it (unions are named after the member used here):
 *
 * <pre>
 * __u8  opcode;      //  0
 * __u8  flags;       //  1  IOSQE_*
 * __u16 ioprio;      //  2
 * __s32 fd;          //  4
 * __u64 off;         //  8  file offset (union addr2)
 * __u64 addr;        // 16  buffer address; ASYNC_CANCEL: the user_data to cancel
 * __u32 len;         // 24  buffer length
 * __u32 rw_flags;    // 28  (union cancel_flags, ...)
 * __u64 user_data;   // 32  returned in the CQE
 * __u16 buf_index;   // 40
 * __u16 personality; // 42
 * __s32 splice_fd_in;// 44
 * __u64 addr3;       // 48
 * __u64 __pad2[1];   // 56
 * };                 // size 64
 * </pre>
 */
public final class Sqe {
  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_BYTE.withName("opcode"),
              ValueLayout.JAVA_BYTE.withName("flags"),
              ValueLayout.JAVA_SHORT.withName("ioprio"),
              ValueLayout.JAVA_INT.withName("fd"),
              ValueLayout.JAVA_LONG.withName("off"),
              ValueLayout.JAVA_LONG.withName("addr"),
              ValueLayout.JAVA_INT.withName("len"),
              ValueLayout.JAVA_INT.withName("rw_flags"),
              ValueLayout.JAVA_LONG.withName("user_data"),
              ValueLayout.JAVA_SHORT.withName("buf_index"),
              ValueLayout.JAVA_SHORT.withName("personality"),
              ValueLayout.JAVA_INT.withName("splice_fd_in"),
              ValueLayout.JAVA_LONG.withName("addr3"),
              ValueLayout.JAVA_LONG.withName("__pad2"))
          .withName("io_uring_sqe");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_OPCODE = LAYOUT.byteOffset(groupElement("opcode"));
  public static final long OFFSET_FLAGS = LAYOUT.byteOffset(groupElement("flags"));
  public static final long OFFSET_IOPRIO = LAYOUT.byteOffset(groupElement("ioprio"));
  public static final long OFFSET_FD = LAYOUT.byteOffset(groupElement("fd"));
  public static final long OFFSET_OFF = LAYOUT.byteOffset(groupElement("off"));
  public static final long OFFSET_ADDR = LAYOUT.byteOffset(groupElement("addr"));
  public static final long OFFSET_LEN = LAYOUT.byteOffset(groupElement("len"));
  public static final long OFFSET_RW_FLAGS = LAYOUT.byteOffset(groupElement("rw_flags"));
  public static final long OFFSET_USER_DATA = LAYOUT.byteOffset(groupElement("user_data"));
  public static final long OFFSET_BUF_INDEX = LAYOUT.byteOffset(groupElement("buf_index"));
  public static final long OFFSET_PERSONALITY = LAYOUT.byteOffset(groupElement("personality"));
  public static final long OFFSET_SPLICE_FD_IN = LAYOUT.byteOffset(groupElement("splice_fd_in"));
  public static final long OFFSET_ADDR3 = LAYOUT.byteOffset(groupElement("addr3"));

  private Sqe() {}

  /**
   * Writes a whole entry at {@code base} of {@code sqes}: every field not named here is zeroed, so
   * nothing of the slot's previous use leaks into this one.
   */
  public static void prepare(
      MemorySegment sqes,
      long base,
      byte opcode,
      int fd,
      long offset,
      long address,
      int length,
      int opFlags,
      long userData) {
    sqes.asSlice(base, SIZE).fill((byte) 0);
    sqes.set(ValueLayout.JAVA_BYTE, base + OFFSET_OPCODE, opcode);
    sqes.set(ValueLayout.JAVA_INT, base + OFFSET_FD, fd);
    sqes.set(ValueLayout.JAVA_LONG, base + OFFSET_OFF, offset);
    sqes.set(ValueLayout.JAVA_LONG, base + OFFSET_ADDR, address);
    sqes.set(ValueLayout.JAVA_INT, base + OFFSET_LEN, length);
    sqes.set(ValueLayout.JAVA_INT, base + OFFSET_RW_FLAGS, opFlags);
    sqes.set(ValueLayout.JAVA_LONG, base + OFFSET_USER_DATA, userData);
  }

  public static byte opcode(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_BYTE, base + OFFSET_OPCODE);
  }

  public static int fd(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_INT, base + OFFSET_FD);
  }

  public static long off(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_LONG, base + OFFSET_OFF);
  }

  public static long addr(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_LONG, base + OFFSET_ADDR);
  }

  public static int len(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_INT, base + OFFSET_LEN);
  }

  public static long userData(MemorySegment s, long base) {
    return s.get(ValueLayout.JAVA_LONG, base + OFFSET_USER_DATA);
  }
}
