package io.orbite.nativebind.uring;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.orbite.nativebind.Availability;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.ErrnoCapture;
import io.orbite.nativebind.NativeBinder;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * io_uring through the raw system calls (x86_64 numbers 425, 426, 427), called with glibc's
 * variadic {@code long syscall(long number, ...)}; every variadic argument is passed as a {@code
 * long} or an address, as the x86_64 calling convention widens them anyway.
 *
 * <p>Availability is probed once, on first use of {@link #isAvailable()}: libc must be bound, and a
 * real ring must be set up on this kernel, support READ, WRITE and ASYNC_CANCEL (asked with {@code
 * IORING_REGISTER_PROBE}) and bounded waits ({@code IORING_FEAT_EXT_ARG}, Linux 5.11). A container
 * that forbids io_uring ({@code EPERM} from seccomp, or {@code /proc/sys/kernel/io_uring_disabled})
 * or an older kernel makes it unavailable with that cause; nothing is thrown from a static
 * initializer.
 */
public final class IoUring {
  // ---- system call numbers, x86_64 (asm/unistd_64.h) ----
  public static final int NR_IO_URING_SETUP = 425;
  public static final int NR_IO_URING_ENTER = 426;
  public static final int NR_IO_URING_REGISTER = 427;

  // ---- opcodes (enum io_uring_op) ----
  public static final byte IORING_OP_NOP = 0;
  public static final byte IORING_OP_ASYNC_CANCEL = 14;
  public static final byte IORING_OP_READ = 22;
  public static final byte IORING_OP_WRITE = 23;

  // ---- mmap offsets ----
  public static final long IORING_OFF_SQ_RING = 0L;
  public static final long IORING_OFF_CQ_RING = 0x8000000L;
  public static final long IORING_OFF_SQES = 0x10000000L;

  // ---- io_uring_setup flags ----
  /** The ring starts disabled; {@link #IORING_REGISTER_ENABLE_RINGS} enables it (Linux 5.10). */
  public static final int IORING_SETUP_R_DISABLED = 1 << 6;

  /**
   * Only one task submits: the creator, or the task that enables an R_DISABLED ring (Linux 6.0).
   */
  public static final int IORING_SETUP_SINGLE_ISSUER = 1 << 12;

  /**
   * Completions that need the submitter's context (those of io-wq workers among them) wait until
   * that task enters with GETEVENTS, instead of being posted from the worker and waking the task
   * each time (Linux 6.1; needs SINGLE_ISSUER).
   */
  public static final int IORING_SETUP_DEFER_TASKRUN = 1 << 13;

  // ---- io_uring_enter flags ----
  public static final int IORING_ENTER_GETEVENTS = 1;
  public static final int IORING_ENTER_EXT_ARG = 1 << 3;

  // ---- features ----
  public static final int IORING_FEAT_SINGLE_MMAP = 1;
  public static final int IORING_FEAT_NODROP = 1 << 1;
  public static final int IORING_FEAT_EXT_ARG = 1 << 8;

  // ---- io_uring_register opcodes ----
  public static final int IORING_REGISTER_PROBE = 8;
  public static final int IORING_REGISTER_ENABLE_RINGS = 12;
  public static final int IO_URING_OP_SUPPORTED = 1;

  /** Entries of the ring the probe sets up. */
  private static final int PROBE_ENTRIES = 4;

  /** Probe entries asked of IORING_REGISTER_PROBE: every opcode up to 255. */
  private static final int PROBE_OPS = 256;

  private static final NativeBinder BINDER = NativeBinder.ofDefaultLookup("io_uring");

  /** {@code syscall(425, entries, params)}. */
  private static final MethodHandle SYSCALL_SETUP =
      BINDER.downcallWithErrno(
          "syscall",
          FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS),
          Linker.Option.firstVariadicArg(1));

  /** {@code syscall(426, fd, to_submit, min_complete, flags, arg, argsz)}. */
  private static final MethodHandle SYSCALL_ENTER =
      BINDER.downcallWithErrno(
          "syscall",
          FunctionDescriptor.of(
              JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG),
          Linker.Option.firstVariadicArg(1));

  /** {@code syscall(427, fd, opcode, arg, nr_args)}. */
  private static final MethodHandle SYSCALL_REGISTER =
      BINDER.downcallWithErrno(
          "syscall",
          FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG),
          Linker.Option.firstVariadicArg(1));

  /** Whether the handles above were built (the kernel is probed separately, lazily). */
  private static final Availability BOUND = BINDER.availability();

  private IoUring() {}

  /** The probe runs on first access of this holder, not in IoUring's initializer. */
  private static final class Probed {
    static final Availability AVAILABILITY = probe();
  }

  /** Whether io_uring works on this machine (probed once, see the class comment). */
  public static boolean isAvailable() {
    return Probed.AVAILABILITY.isAvailable();
  }

  /** Why io_uring is unavailable; empty when it is available. */
  public static Optional<String> unavailabilityCause() {
    return Probed.AVAILABILITY.cause();
  }

  /** The probe result. */
  public static Availability availability() {
    return Probed.AVAILABILITY;
  }

  private static Availability probe() {
    if (!BOUND.isAvailable()) {
      return BOUND;
    }
    if (!Libc.isAvailable()) {
      return Availability.unavailable(
          "io_uring", "libc is unavailable: " + Libc.unavailabilityCause().orElse("?"));
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment params = IoUringParams.allocate(arena);
      int fd;
      try {
        fd = setup(PROBE_ENTRIES, params);
      } catch (NativeCallException e) {
        return Availability.unavailable("io_uring", e.getMessage() + disabledSetting());
      }
      try {
        int features = IoUringParams.u32(params, IoUringParams.OFFSET_FEATURES);
        if ((features & IORING_FEAT_EXT_ARG) == 0) {
          return Availability.unavailable(
              "io_uring",
              "the kernel lacks IORING_FEAT_EXT_ARG (features=0x"
                  + Integer.toHexString(features)
                  + "; Linux 5.11 or later is needed for bounded waits)");
        }
        MemorySegment probe =
            arena.allocate(ProbeLayout.HEADER_SIZE + PROBE_OPS * ProbeLayout.OP_SIZE, 8);
        register(fd, IORING_REGISTER_PROBE, probe, PROBE_OPS);
        for (byte op :
            new byte[] {IORING_OP_NOP, IORING_OP_ASYNC_CANCEL, IORING_OP_READ, IORING_OP_WRITE}) {
          if (!supports(probe, op)) {
            return Availability.unavailable(
                "io_uring", "the kernel does not support opcode " + opName(op));
          }
        }
        return Availability.available("io_uring");
      } catch (NativeCallException e) {
        return Availability.unavailable("io_uring", e.getMessage());
      } finally {
        Libc.close(fd);
      }
    } catch (RuntimeException e) {
      return Availability.unavailable("io_uring", "probe failed: " + e);
    }
  }

  private static boolean supports(MemorySegment probe, byte op) {
    int opsLen = Byte.toUnsignedInt(probe.get(ValueLayout.JAVA_BYTE, ProbeLayout.OFFSET_OPS_LEN));
    int index = Byte.toUnsignedInt(op);
    if (index >= opsLen) {
      return false;
    }
    long base = ProbeLayout.HEADER_SIZE + index * ProbeLayout.OP_SIZE;
    short flags = probe.get(ValueLayout.JAVA_SHORT, base + ProbeLayout.OP_OFFSET_FLAGS);
    return (flags & IO_URING_OP_SUPPORTED) != 0;
  }

  private static String disabledSetting() {
    Path knob = Path.of("/proc/sys/kernel/io_uring_disabled");
    try {
      return Files.isReadable(knob)
          ? " (" + knob + " = " + Files.readString(knob).strip() + ")"
          : "";
    } catch (java.io.IOException e) {
      return "";
    }
  }

  /** A name for an opcode this binding uses, else its number. */
  public static String opName(byte op) {
    return switch (op) {
      case IORING_OP_NOP -> "IORING_OP_NOP";
      case IORING_OP_ASYNC_CANCEL -> "IORING_OP_ASYNC_CANCEL";
      case IORING_OP_READ -> "IORING_OP_READ";
      case IORING_OP_WRITE -> "IORING_OP_WRITE";
      default -> "opcode " + Byte.toUnsignedInt(op);
    };
  }

  /**
   * {@code io_uring_setup(entries, params)}: a new ring; the kernel fills {@code params} ({@link
   * IoUringParams}). Returns the ring's descriptor.
   */
  public static int setup(int entries, MemorySegment params) {
    BOUND.require("io_uring_setup");
    int flags = params.get(ValueLayout.JAVA_INT, IoUringParams.OFFSET_FLAGS);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      long r;
      try {
        r =
            (long)
                SYSCALL_SETUP.invokeExact(state, (long) NR_IO_URING_SETUP, (long) entries, params);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("io_uring_setup", t);
      }
      if (r < 0) {
        throw new NativeCallException(
            "io_uring_setup",
            "entries=" + entries + (flags != 0 ? ", flags=0x" + Integer.toHexString(flags) : ""),
            ErrnoCapture.errno(state));
      }
      return (int) r;
    }
  }

  /**
   * {@code io_uring_enter(fd, toSubmit, minComplete, flags, arg, argSize)} with errno captured into
   * {@code state} (a segment from {@link ErrnoCapture#allocate}, kept by the caller so the data
   * path allocates nothing). Returns the raw result: the number of entries consumed, or -1 with the
   * errno in {@code state}. The caller decides which errors are expected ({@code ETIME}, {@code
   * EINTR}, {@code EAGAIN}, {@code EBUSY}).
   */
  public static long enterRaw(
      MemorySegment state,
      int fd,
      int toSubmit,
      int minComplete,
      int flags,
      MemorySegment arg,
      long argSize) {
    try {
      return (long)
          SYSCALL_ENTER.invokeExact(
              state,
              (long) NR_IO_URING_ENTER,
              (long) fd,
              (long) toSubmit,
              (long) minComplete,
              (long) flags,
              arg,
              argSize);
    } catch (Throwable t) {
      throw NativeBinder.unexpected("io_uring_enter", t);
    }
  }

  /** {@code io_uring_register(fd, opcode, arg, nrArgs)}; returns the call's non-negative result. */
  public static long register(int fd, int opcode, MemorySegment arg, int nrArgs) {
    BOUND.require("io_uring_register");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      long r;
      try {
        r =
            (long)
                SYSCALL_REGISTER.invokeExact(
                    state,
                    (long) NR_IO_URING_REGISTER,
                    (long) fd,
                    (long) opcode,
                    arg,
                    (long) nrArgs);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("io_uring_register", t);
      }
      if (r < 0) {
        throw new NativeCallException(
            "io_uring_register",
            "fd=" + fd + ", opcode=" + opcode + ", nr_args=" + nrArgs,
            ErrnoCapture.errno(state));
      }
      return r;
    }
  }

  /** Whether {@code errno} means a wait ended without a failure (timeout, signal, busy ring). */
  public static boolean isTransient(int errno) {
    return errno == Errno.ETIME.number()
        || errno == Errno.EINTR.number()
        || errno == Errno.EAGAIN.number()
        || errno == Errno.EBUSY.number();
  }
}
