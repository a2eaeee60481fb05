package io.orbite.nativebind.uring;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_probe} (header, size 16) followed by {@code ops_len} entries of {@code
 * struct io_uring_probe_op} (size 8), filled by {@code IORING_REGISTER_PROBE}:
 *
 * <pre>
 * struct io_uring_probe { __u8 last_op; __u8 ops_len; __u16 resv; __u32 resv2[3]; struct io_uring_probe_op ops[]; };
 * struct io_uring_probe_op { __u8 op; __u8 resv; __u16 flags; __u32 resv2; };  // flags: IO_URING_OP_SUPPORTED
 * </pre>
 */
public final class ProbeLayout {
  public static final StructLayout HEADER =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_BYTE.withName("last_op"),
              ValueLayout.JAVA_BYTE.withName("ops_len"),
              ValueLayout.JAVA_SHORT.withName("resv"),
              MemoryLayout.sequenceLayout(3, ValueLayout.JAVA_INT).withName("resv2"))
          .withName("io_uring_probe");

  public static final StructLayout OP =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_BYTE.withName("op"),
              ValueLayout.JAVA_BYTE.withName("resv"),
              ValueLayout.JAVA_SHORT.withName("flags"),
              ValueLayout.JAVA_INT.withName("resv2"))
          .withName("io_uring_probe_op");

  public static final long HEADER_SIZE = HEADER.byteSize();
  public static final long OFFSET_LAST_OP = HEADER.byteOffset(groupElement("last_op"));
  public static final long OFFSET_OPS_LEN = HEADER.byteOffset(groupElement("ops_len"));
  public static final long OP_SIZE = OP.byteSize();
  public static final long OP_OFFSET_OP = OP.byteOffset(groupElement("op"));
  public static final long OP_OFFSET_FLAGS = OP.byteOffset(groupElement("flags"));

  private ProbeLayout() {}
}
