package io.orbite.nativebind;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The call-state segment the linker fills with {@code errno} when a downcall handle is built with
 * {@code Linker.Option.captureCallState("errno")} (see {@link NativeBinder#downcallWithErrno}).
 *
 * <p>The segment is the handle's first argument. A binding allocates it in the call's confined
 * arena, makes the call, and on failure reads errno from it with {@link #errno(MemorySegment)}: the
 * value is the one the native function left, not whatever the JVM did afterwards.
 */
public final class ErrnoCapture {
  /** The linker's capture-state layout ({@code struct { int errno; }} on Linux). */
  public static final MemoryLayout LAYOUT;

  private static final long ERRNO_OFFSET;

  static {
    MemoryLayout layout;
    long offset;
    try {
      layout = Linker.Option.captureStateLayout();
      offset = layout.byteOffset(MemoryLayout.PathElement.groupElement("errno"));
    } catch (Throwable t) {
      // Only on a platform whose linker does not work at all; every binding is then
      // unavailable and this layout is never used for a real call.
      layout = MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("errno"));
      offset = 0;
    }
    LAYOUT = layout;
    ERRNO_OFFSET = offset;
  }

  private ErrnoCapture() {}

  /** A fresh capture segment in {@code arena} (the call's confined arena). */
  public static MemorySegment allocate(Arena arena) {
    return arena.allocate(LAYOUT);
  }

  /** The errno the linker captured into {@code state}. */
  public static int errno(MemorySegment state) {
    return state.get(ValueLayout.JAVA_INT, ERRNO_OFFSET);
  }
}
