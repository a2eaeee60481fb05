package io.orbite.nativebind.uring;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_params}, filled by {@code io_uring_setup}, with its two nested offset
 * structs ({@code io_sqring_offsets sq_off} at 40 and {@code io_cqring_offsets cq_off} at 80):
 *
 * <pre>
 * __u32 sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd; // 0..24
 * __u32 resv[3];                                                                       // 28
 * struct io_sqring_offsets { __u32 head, tail, ring_mask, ring_entries, flags, dropped, array, resv1; __u64 user_addr; } // 40
 * struct io_cqring_offsets { __u32 head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1; __u64 user_addr; } // 80
 * };  // size 120
 * </pre>
 */
public final class IoUringParams {
  public static final StructLayout SQ_OFFSETS =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_INT.withName("head"),
              ValueLayout.JAVA_INT.withName("tail"),
              ValueLayout.JAVA_INT.withName("ring_mask"),
              ValueLayout.JAVA_INT.withName("ring_entries"),
              ValueLayout.JAVA_INT.withName("flags"),
              ValueLayout.JAVA_INT.withName("dropped"),
              ValueLayout.JAVA_INT.withName("array"),
              ValueLayout.JAVA_INT.withName("resv1"),
              ValueLayout.JAVA_LONG.withName("user_addr"))
          .withName("io_sqring_offsets");

  public static final StructLayout CQ_OFFSETS =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_INT.withName("head"),
              ValueLayout.JAVA_INT.withName("tail"),
              ValueLayout.JAVA_INT.withName("ring_mask"),
              ValueLayout.JAVA_INT.withName("ring_entries"),
              ValueLayout.JAVA_INT.withName("overflow"),
              ValueLayout.JAVA_INT.withName("cqes"),
              ValueLayout.JAVA_INT.withName("flags"),
              ValueLayout.JAVA_INT.withName("resv1"),
              ValueLayout.JAVA_LONG.withName("user_addr"))
          .withName("io_cqring_offsets");

  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_INT.withName("sq_entries"),
              ValueLayout.JAVA_INT.withName("cq_entries"),
              ValueLayout.JAVA_INT.withName("flags"),
              ValueLayout.JAVA_INT.withName("sq_thread_cpu"),
              ValueLayout.JAVA_INT.withName("sq_thread_idle"),
              ValueLayout.JAVA_INT.withName("features"),
              ValueLayout.JAVA_INT.withName("wq_fd"),
              MemoryLayout.sequenceLayout(3, ValueLayout.JAVA_INT).withName("resv"),
              SQ_OFFSETS.withName("sq_off"),
              CQ_OFFSETS.withName("cq_off"))
          .withName("io_uring_params");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_SQ_ENTRIES = LAYOUT.byteOffset(groupElement("sq_entries"));
  public static final long OFFSET_CQ_ENTRIES = LAYOUT.byteOffset(groupElement("cq_entries"));
  public static final long OFFSET_FLAGS = LAYOUT.byteOffset(groupElement("flags"));
  public static final long OFFSET_FEATURES = LAYOUT.byteOffset(groupElement("features"));
  public static final long OFFSET_SQ_OFF = LAYOUT.byteOffset(groupElement("sq_off"));
  public static final long OFFSET_CQ_OFF = LAYOUT.byteOffset(groupElement("cq_off"));

  private IoUringParams() {}

  /** A zeroed struct in {@code arena}. */
  public static MemorySegment allocate(Arena arena) {
    return arena.allocate(LAYOUT);
  }

  /** The offset of field {@code name} of {@code sq_off} within the struct. */
  public static long sqOffsetField(String name) {
    return OFFSET_SQ_OFF + SQ_OFFSETS.byteOffset(groupElement(name));
  }

  /** The offset of field {@code name} of {@code cq_off} within the struct. */
  public static long cqOffsetField(String name) {
    return OFFSET_CQ_OFF + CQ_OFFSETS.byteOffset(groupElement(name));
  }

  public static int u32(MemorySegment params, long offset) {
    return params.get(ValueLayout.JAVA_INT, offset);
  }
}
