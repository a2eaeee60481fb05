package io.orbite.nativebind.uring;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_cqe}, the completion queue entry (rings set up without {@code
 * IORING_SETUP_CQE32}):
 *
 * <pre>
 * __u64 user_data; // 0  the submission's user_data
 * __s32 res;       // 8  result: bytes moved, or -errno
 * __u32 flags;     // 12 IORING_CQE_F_*
 * };               // size 16
 * </pre>
 */
public final class Cqe {
  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_LONG.withName("user_data"),
              ValueLayout.JAVA_INT.withName("res"),
              ValueLayout.JAVA_INT.withName("flags"))
          .withName("io_uring_cqe");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_USER_DATA = LAYOUT.byteOffset(groupElement("user_data"));
  public static final long OFFSET_RES = LAYOUT.byteOffset(groupElement("res"));
  public static final long OFFSET_FLAGS = LAYOUT.byteOffset(groupElement("flags"));

  private Cqe() {}
}
