package io.orbite.nativebind.uring;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.ErrnoCapture;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One io_uring instance: its descriptor and its three mappings (SQ ring, CQ ring, SQE array),
 * shared with the kernel. What liburing does in inline helpers is done here with {@link VarHandle}
 * accesses on the mapped memory: the SQ tail and the CQ head are published with release stores, the
 * CQ tail and the SQ head are read with acquire loads, as {@code io_uring.h}'s comments require.
 *
 * <p>Single-threaded: one owner thread prepares, submits and reaps (the file transport's ring
 * lane). {@link #openSingleIssuer} makes the kernel hold the ring to that: it is set up disabled,
 * with {@code IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN}, and the first {@link
 * #enter} enables it, binding it to the calling thread; the kernel then refuses any other thread's
 * {@code io_uring_enter} ({@code EEXIST}). Completions that the kernel finishes outside that thread
 * (an io-wq worker's buffered write) are then queued for it and posted at its next {@link #enter},
 * instead of the worker posting each one and waking the thread: the worker does less per request
 * and the owner wakes once for the completions it waits for. Every {@link #enter} of such a ring
 * asks for events, so {@code enter(0, 0)} also posts what is queued. The SQ index array is filled
 * once with the identity, so slot {@code i} of the SQE array is always entry {@code i}. {@link
 * #close()} unmaps and closes; whoever owns a ring must only call it once no submitted request can
 * still complete (a quarantined owner never calls it).
 */
public final class Ring implements AutoCloseable {
  private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

  private final int fd;
  private final int sqEntries;
  private final int cqEntries;
  private final int features;
  private final MemorySegment sqRing;
  private final MemorySegment cqRing; // the same mapping as sqRing with IORING_FEAT_SINGLE_MMAP
  private final MemorySegment sqes;
  private final long sqHeadOffset;
  private final long sqTailOffset;
  private final int sqMask;
  private final long cqHeadOffset;
  private final long cqTailOffset;
  private final int cqMask;
  private final long cqesOffset;

  /** Scratch owned by the ring: errno capture, getevents arg, timespec. */
  private final Arena scratch;

  private final MemorySegment errnoState;
  private final MemorySegment waitArg;
  private final MemorySegment timespec;
  private int sqTail;
  private boolean closed;

  /** Set up with SINGLE_ISSUER and DEFER_TASKRUN: every enter asks for events. */
  private final boolean deferred;

  /** Set up disabled (R_DISABLED): the first enter enables it and so becomes its only issuer. */
  private boolean disabled;

  private Ring(
      int fd,
      MemorySegment params,
      MemorySegment sqRing,
      MemorySegment cqRing,
      MemorySegment sqes) {
    this.fd = fd;
    int setupFlags = IoUringParams.u32(params, IoUringParams.OFFSET_FLAGS);
    this.deferred = (setupFlags & IoUring.IORING_SETUP_DEFER_TASKRUN) != 0;
    this.disabled = (setupFlags & IoUring.IORING_SETUP_R_DISABLED) != 0;
    this.sqEntries = IoUringParams.u32(params, IoUringParams.OFFSET_SQ_ENTRIES);
    this.cqEntries = IoUringParams.u32(params, IoUringParams.OFFSET_CQ_ENTRIES);
    this.features = IoUringParams.u32(params, IoUringParams.OFFSET_FEATURES);
    this.sqRing = sqRing;
    this.cqRing = cqRing;
    this.sqes = sqes;
    this.sqHeadOffset = IoUringParams.u32(params, IoUringParams.sqOffsetField("head"));
    this.sqTailOffset = IoUringParams.u32(params, IoUringParams.sqOffsetField("tail"));
    this.sqMask =
        sqRing.get(
            ValueLayout.JAVA_INT,
            IoUringParams.u32(params, IoUringParams.sqOffsetField("ring_mask")));
    this.cqHeadOffset = IoUringParams.u32(params, IoUringParams.cqOffsetField("head"));
    this.cqTailOffset = IoUringParams.u32(params, IoUringParams.cqOffsetField("tail"));
    this.cqMask =
        cqRing.get(
            ValueLayout.JAVA_INT,
            IoUringParams.u32(params, IoUringParams.cqOffsetField("ring_mask")));
    this.cqesOffset = IoUringParams.u32(params, IoUringParams.cqOffsetField("cqes"));
    long arrayOffset = IoUringParams.u32(params, IoUringParams.sqOffsetField("array"));
    for (int i = 0; i < sqEntries; i++) {
      sqRing.set(ValueLayout.JAVA_INT, arrayOffset + 4L * i, i);
    }
    this.sqTail = (int) INT.getAcquire(sqRing, sqTailOffset);
    this.scratch = Arena.ofShared();
    this.errnoState = ErrnoCapture.allocate(scratch);
    this.waitArg = scratch.allocate(GeteventsArg.LAYOUT);
    this.timespec = scratch.allocate(GeteventsArg.TIMESPEC);
    waitArg.set(ValueLayout.JAVA_LONG, GeteventsArg.OFFSET_TS, timespec.address());
  }

  /**
   * Sets up a ring of {@code entries} submission entries (rounded up to a power of two by the
   * kernel; the CQ gets twice as many) and maps it. Throws {@link NativeCallException} naming the
   * failed call; nothing is left open then.
   */
  public static Ring open(int entries) {
    return open(entries, 0);
  }

  /**
   * {@link #open(int)} for one thread only, with deferred completions (see the class comment): the
   * ring is bound to the thread that first calls {@link #enter}, which may be another thread than
   * this one. On a kernel without SINGLE_ISSUER or DEFER_TASKRUN (before Linux 6.1: {@code EINVAL})
   * this is an ordinary ring; {@link #deferredCompletions()} says which it is.
   */
  public static Ring openSingleIssuer(int entries) {
    int flags =
        IoUring.IORING_SETUP_SINGLE_ISSUER
            | IoUring.IORING_SETUP_DEFER_TASKRUN
            | IoUring.IORING_SETUP_R_DISABLED;
    try {
      return open(entries, flags);
    } catch (NativeCallException e) {
      if (e.errno() != Errno.EINVAL.number()) {
        throw e;
      }
      return open(entries, 0);
    }
  }

  private static Ring open(int entries, int setupFlags) {
    IoUring.availability().require("io_uring_setup");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment params = IoUringParams.allocate(arena);
      params.set(ValueLayout.JAVA_INT, IoUringParams.OFFSET_FLAGS, setupFlags);
      int fd = IoUring.setup(entries, params);
      MemorySegment sqRing = null;
      MemorySegment cqRing = null;
      MemorySegment sqes = null;
      try {
        int sqEntries = IoUringParams.u32(params, IoUringParams.OFFSET_SQ_ENTRIES);
        int cqEntries = IoUringParams.u32(params, IoUringParams.OFFSET_CQ_ENTRIES);
        long sqSize =
            IoUringParams.u32(params, IoUringParams.sqOffsetField("array")) + 4L * sqEntries;
        long cqSize =
            IoUringParams.u32(params, IoUringParams.cqOffsetField("cqes")) + Cqe.SIZE * cqEntries;
        boolean single =
            (IoUringParams.u32(params, IoUringParams.OFFSET_FEATURES)
                    & IoUring.IORING_FEAT_SINGLE_MMAP)
                != 0;
        int prot = Libc.PROT_READ | Libc.PROT_WRITE;
        int flags = Libc.MAP_SHARED | Libc.MAP_POPULATE;
        if (single) {
          sqRing = Libc.mmap(Math.max(sqSize, cqSize), prot, flags, fd, IoUring.IORING_OFF_SQ_RING);
          cqRing = sqRing;
        } else {
          sqRing = Libc.mmap(sqSize, prot, flags, fd, IoUring.IORING_OFF_SQ_RING);
          cqRing = Libc.mmap(cqSize, prot, flags, fd, IoUring.IORING_OFF_CQ_RING);
        }
        sqes = Libc.mmap(Sqe.SIZE * sqEntries, prot, flags, fd, IoUring.IORING_OFF_SQES);
        return new Ring(fd, params, sqRing, cqRing, sqes);
      } catch (RuntimeException e) {
        unmapQuietly(sqes);
        if (cqRing != sqRing) {
          unmapQuietly(cqRing);
        }
        unmapQuietly(sqRing);
        Libc.close(fd);
        throw e;
      }
    }
  }

  private static void unmapQuietly(MemorySegment s) {
    if (s != null) {
      try {
        Libc.munmap(s);
      } catch (RuntimeException ignored) {
        // set-up already failed; the original error is what the caller needs
      }
    }
  }

  public int fd() {
    return fd;
  }

  public int sqEntries() {
    return sqEntries;
  }

  public int cqEntries() {
    return cqEntries;
  }

  public int features() {
    return features;
  }

  /**
   * Whether the ring was set up with SINGLE_ISSUER and DEFER_TASKRUN ({@link #openSingleIssuer} on
   * Linux 6.1 or later): completions wait for the owner's next {@link #enter}.
   */
  public boolean deferredCompletions() {
    return deferred;
  }

  /** Entries prepared and not yet consumed by the kernel. */
  public int unsubmitted() {
    return sqTail - (int) INT.getAcquire(sqRing, sqHeadOffset);
  }

  /** Free submission slots. */
  public int sqSpace() {
    return sqEntries - unsubmitted();
  }

  /**
   * Prepares the next submission entry (the caller checked {@link #sqSpace()}); it reaches the
   * kernel with the next {@link #enter}. Every field not named is zero.
   */
  public void prepare(
      byte opcode, int fileFd, long offset, long address, int length, int opFlags, long userData) {
    if (sqSpace() <= 0) {
      throw new IllegalStateException(
          "io_uring fd " + fd + ": submission queue full (" + sqEntries + " entries)");
    }
    long base = (long) (sqTail & sqMask) * Sqe.SIZE;
    Sqe.prepare(sqes, base, opcode, fileFd, offset, address, length, opFlags, userData);
    sqTail++;
  }

  /**
   * Publishes prepared entries and calls {@code io_uring_enter}: submits them and, if {@code
   * minComplete > 0}, waits until that many completions are ready or {@code waitNanos} pass. A
   * timeout, a signal or a busy ring is not an error (the caller reaps what is there and comes
   * back); any other failure throws {@link NativeCallException}.
   *
   * @return entries the kernel consumed in this call
   */
  public int enter(int minComplete, long waitNanos) {
    if (disabled) {
      // Binds the ring to this thread (SINGLE_ISSUER); from now on only it may enter.
      IoUring.register(fd, IoUring.IORING_REGISTER_ENABLE_RINGS, MemorySegment.NULL, 0);
      disabled = false;
    }
    INT.setRelease(sqRing, sqTailOffset, sqTail);
    int toSubmit = unsubmitted();
    if (toSubmit == 0 && minComplete == 0 && !deferred) {
      return 0;
    }
    int flags = deferred ? IoUring.IORING_ENTER_GETEVENTS : 0;
    MemorySegment arg = MemorySegment.NULL;
    long argSize = 0;
    if (minComplete > 0) {
      flags = IoUring.IORING_ENTER_GETEVENTS | IoUring.IORING_ENTER_EXT_ARG;
      timespec.set(ValueLayout.JAVA_LONG, GeteventsArg.OFFSET_TV_SEC, waitNanos / 1_000_000_000L);
      timespec.set(ValueLayout.JAVA_LONG, GeteventsArg.OFFSET_TV_NSEC, waitNanos % 1_000_000_000L);
      arg = waitArg;
      argSize = GeteventsArg.SIZE;
    }
    long r = IoUring.enterRaw(errnoState, fd, toSubmit, minComplete, flags, arg, argSize);
    if (r < 0) {
      int errno = ErrnoCapture.errno(errnoState);
      if (IoUring.isTransient(errno)) {
        return toSubmit - unsubmitted();
      }
      throw new NativeCallException(
          "io_uring_enter",
          "fd="
              + fd
              + ", to_submit="
              + toSubmit
              + ", min_complete="
              + minComplete
              + ", flags=0x"
              + Integer.toHexString(flags),
          errno);
    }
    return (int) r;
  }

  /** Receives completions from {@link #reap}. */
  @FunctionalInterface
  public interface CompletionHandler {
    void complete(long userData, int result, int flags);
  }

  /** Hands at most {@code max} ready completions to {@code handler} and frees their CQ slots. */
  public int reap(CompletionHandler handler, int max) {
    int head = (int) INT.getAcquire(cqRing, cqHeadOffset);
    int tail = (int) INT.getAcquire(cqRing, cqTailOffset);
    int n = 0;
    while (head != tail && n < max) {
      long base = cqesOffset + (long) (head & cqMask) * Cqe.SIZE;
      long userData = cqRing.get(ValueLayout.JAVA_LONG, base + Cqe.OFFSET_USER_DATA);
      int res = cqRing.get(ValueLayout.JAVA_INT, base + Cqe.OFFSET_RES);
      int flags = cqRing.get(ValueLayout.JAVA_INT, base + Cqe.OFFSET_FLAGS);
      head++;
      n++;
      // Free the slot before the handler runs: it may prepare and enter again.
      INT.setRelease(cqRing, cqHeadOffset, head);
      handler.complete(userData, res, flags);
    }
    return n;
  }

  /** Completions ready to reap. */
  public int ready() {
    return (int) INT.getAcquire(cqRing, cqTailOffset) - (int) INT.getAcquire(cqRing, cqHeadOffset);
  }

  /**
   * Unmaps the rings and closes the descriptor. Only for a ring with no request in the kernel;
   * idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    Libc.munmap(sqes);
    if (cqRing != sqRing) {
      Libc.munmap(cqRing);
    }
    Libc.munmap(sqRing);
    Libc.close(fd);
    scratch.close();
  }

  @Override
  public String toString() {
    return "io_uring(fd="
        + fd
        + ", sq="
        + sqEntries
        + ", cq="
        + cqEntries
        + (deferred ? ", single issuer, deferred completions" : "")
        + ")";
  }
}
