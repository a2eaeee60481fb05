package io.orbite.nativebind.uring;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_getevents_arg}, passed to {@code io_uring_enter} with {@code
 * IORING_ENTER_EXT_ARG} to bound a wait, and the {@code struct __kernel_timespec} it points to:
 *
 * <pre>
 * struct io_uring_getevents_arg { __u64 sigmask; __u32 sigmask_sz; __u32 pad; __u64 ts; }; // size 24
 * struct __kernel_timespec { long long tv_sec; long long tv_nsec; };                       // size 16
 * </pre>
 */
public final class GeteventsArg {
  public static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_LONG.withName("sigmask"),
              ValueLayout.JAVA_INT.withName("sigmask_sz"),
              ValueLayout.JAVA_INT.withName("pad"),
              ValueLayout.JAVA_LONG.withName("ts"))
          .withName("io_uring_getevents_arg");

  public static final StructLayout TIMESPEC =
      MemoryLayout.structLayout(
              ValueLayout.JAVA_LONG.withName("tv_sec"), ValueLayout.JAVA_LONG.withName("tv_nsec"))
          .withName("__kernel_timespec");

  public static final long SIZE = LAYOUT.byteSize();
  public static final long OFFSET_SIGMASK = LAYOUT.byteOffset(groupElement("sigmask"));
  public static final long OFFSET_SIGMASK_SZ = LAYOUT.byteOffset(groupElement("sigmask_sz"));
  public static final long OFFSET_TS = LAYOUT.byteOffset(groupElement("ts"));
  public static final long TIMESPEC_SIZE = TIMESPEC.byteSize();
  public static final long OFFSET_TV_SEC = TIMESPEC.byteOffset(groupElement("tv_sec"));
  public static final long OFFSET_TV_NSEC = TIMESPEC.byteOffset(groupElement("tv_nsec"));

  private GeteventsArg() {}
}
