package io.orbite.nativebind.libc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.orbite.nativebind.Availability;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.ErrnoCapture;
import io.orbite.nativebind.NativeBinder;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.NativeUnavailableException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The C library (glibc on Linux x86_64), through the linker's default lookup.
 *
 * <p>Every method checks {@link #isAvailable()} first and throws {@link NativeUnavailableException}
 * when libc could not be bound; a failed call throws {@link NativeCallException} with the call, its
 * arguments and the errno captured for that call. Temporary native memory (capture state, C
 * strings, structs) lives in a confined arena owned by the call. Thread-safe: there is no shared
 * mutable state.
 *
 * <p>One class per native library: every downcall handle of libc is built once here and probed into
 * one {@link Availability}, and each public method is one call with its errno check, so the file
 * stays whole past 500 lines. The struct layouts are {@link Flock} and {@link Stat}; the failure
 * messages' flag names are rendered by {@code LibcArgs}.
 */
public final class Libc {
  // ---- protection (mmap prot) ----
  public static final int PROT_NONE = 0x0;
  public static final int PROT_READ = 0x1;
  public static final int PROT_WRITE = 0x2;
  public static final int PROT_EXEC = 0x4;

  // ---- mmap flags ----
  public static final int MAP_SHARED = 0x01;
  public static final int MAP_PRIVATE = 0x02;
  public static final int MAP_FIXED = 0x10;
  public static final int MAP_ANONYMOUS = 0x20;
  public static final int MAP_LOCKED = 0x2000;
  public static final int MAP_NORESERVE = 0x4000;
  public static final int MAP_POPULATE = 0x8000;
  public static final int MAP_HUGETLB = 0x40000;

  // ---- memfd_create flags ----
  public static final int MFD_CLOEXEC = 0x1;
  public static final int MFD_ALLOW_SEALING = 0x2;
  public static final int MFD_HUGETLB = 0x4;

  // ---- open flags ----
  public static final int O_RDONLY = 0;
  public static final int O_WRONLY = 01;
  public static final int O_RDWR = 02;
  public static final int O_CREAT = 0100;
  public static final int O_EXCL = 0200;
  public static final int O_TRUNC = 01000;
  public static final int O_CLOEXEC = 02000000;

  // ---- fcntl commands and lock types ----
  public static final int F_GETFL = 3;
  public static final int F_SETFL = 4;
  public static final int O_NONBLOCK = 04000;
  public static final int F_OFD_GETLK = 36;
  public static final int F_OFD_SETLK = 37;
  public static final int F_OFD_SETLKW = 38;
  public static final short F_RDLCK = 0;
  public static final short F_WRLCK = 1;
  public static final short F_UNLCK = 2;
  public static final short SEEK_SET = 0;
  // ---- madvise advice ----
  public static final int MADV_NORMAL = 0;
  public static final int MADV_WILLNEED = 3;
  public static final int MADV_DONTNEED = 4;

  /** Linux 5.14+: populate (prefault) page tables readable. */
  public static final int MADV_POPULATE_READ = 22;

  /** Linux 5.14+: populate (prefault) page tables writable. */
  public static final int MADV_POPULATE_WRITE = 23;

  /** Signals for {@link #kill}: stop, continue, kill (Linux x86_64 numbers). */
  public static final int SIGKILL = 9;

  public static final int SIGCONT = 18;
  public static final int SIGSTOP = 19;

  /** Buffer given to gethostname: far above Linux's HOST_NAME_MAX (64). */
  private static final int HOSTNAME_BUFFER = 256;

  /** {@code poll} event bits ({@code <poll.h>}). */
  public static final short POLLIN = 0x1;

  public static final short POLLERR = 0x8;
  public static final short POLLHUP = 0x10;
  public static final short POLLNVAL = 0x20;

  /** {@code eventfd} flags ({@code <sys/eventfd.h>}). */
  public static final int EFD_NONBLOCK = 04000;

  public static final int EFD_CLOEXEC = 02000000;

  /** {@code struct pollfd}: {@code int fd; short events; short revents;}. */
  private static final long POLLFD_SIZE = 8;

  private static final long POLLFD_EVENTS = 4;
  private static final long POLLFD_REVENTS = 6;

  private static final NativeBinder BINDER = NativeBinder.ofDefaultLookup("libc");

  private static final MethodHandle GETPID =
      BINDER.downcall("getpid", FunctionDescriptor.of(JAVA_INT));
  private static final MethodHandle CLOSE =
      BINDER.downcallWithErrno("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
  private static final MethodHandle KILL =
      BINDER.downcallWithErrno("kill", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

  /**
   * {@code int open(const char *path, int flags, ...)}: variadic from the third argument (mode).
   */
  private static final MethodHandle OPEN =
      BINDER.downcallWithErrno(
          "open",
          FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
          Linker.Option.firstVariadicArg(2));

  private static final MethodHandle MEMFD_CREATE =
      BINDER.downcallWithErrno("memfd_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
  private static final MethodHandle FTRUNCATE =
      BINDER.downcallWithErrno("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
  private static final MethodHandle MMAP =
      BINDER.downcallWithErrno(
          "mmap",
          FunctionDescriptor.of(
              ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
  private static final MethodHandle MUNMAP =
      BINDER.downcallWithErrno("munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));

  /**
   * {@code int fcntl(int fd, int cmd, ...)}: variadic from the third argument (here a struct flock
   * *).
   */
  private static final MethodHandle FCNTL_PTR =
      BINDER.downcallWithErrno(
          "fcntl",
          FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS),
          Linker.Option.firstVariadicArg(2));

  /** {@code int fcntl(int fd, int cmd, ...)} with an int third argument (F_GETFL, F_SETFL). */
  private static final MethodHandle FCNTL_INT =
      BINDER.downcallWithErrno(
          "fcntl",
          FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
          Linker.Option.firstVariadicArg(2));

  private static final MethodHandle GETHOSTNAME =
      BINDER.downcallWithErrno("gethostname", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));

  /**
   * {@code int fstat(int fd, struct stat *buf)}: exported by glibc since 2.33 (earlier only as
   * __fxstat).
   */
  private static final MethodHandle FSTAT =
      BINDER.downcallWithErrno("fstat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));

  private static final MethodHandle MADVISE =
      BINDER.downcallWithErrno(
          "madvise", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));

  /** {@code int poll(struct pollfd *fds, nfds_t nfds, int timeout)}. */
  private static final MethodHandle POLL =
      BINDER.downcallWithErrno(
          "poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));

  private static final MethodHandle EVENTFD =
      BINDER.downcallWithErrno("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

  /** {@code int eventfd_write(int fd, eventfd_t value)}. */
  private static final MethodHandle EVENTFD_WRITE =
      BINDER.downcallWithErrno(
          "eventfd_write", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));

  /** Probed once, after every handle above was built. */
  private static final Availability AVAILABILITY = BINDER.availability();

  private Libc() {}

  /** Whether libc was bound (every symbol found and linked) on this machine. */
  public static boolean isAvailable() {
    return AVAILABILITY.isAvailable();
  }

  /** Why libc is unavailable; empty when it is available. */
  public static Optional<String> unavailabilityCause() {
    return AVAILABILITY.cause();
  }

  /** The probe result (library name and cause). */
  public static Availability availability() {
    return AVAILABILITY;
  }

  /** {@code getpid()}: the calling process's id. Cannot fail. */
  public static int getpid() {
    AVAILABILITY.require("getpid");
    try {
      return (int) GETPID.invokeExact();
    } catch (Throwable t) {
      throw NativeBinder.unexpected("getpid", t);
    }
  }

  /**
   * {@code close(fd)}. Not retried on EINTR: on Linux the descriptor is released even then, and a
   * retry could close a descriptor another thread just opened.
   */
  public static void close(int fd) {
    AVAILABILITY.require("close");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) CLOSE.invokeExact(state, fd);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("close", t);
      }
      if (r == -1) {
        throw new NativeCallException("close", "fd=" + fd, ErrnoCapture.errno(state));
      }
    }
  }

  /**
   * Sets {@code O_NONBLOCK} on {@code fd} ({@code fcntl} F_GETFL, then F_SETFL), so a read that
   * would wait fails EAGAIN instead (the verbs completion channel and async event descriptors).
   */
  public static void setNonBlocking(int fd) {
    AVAILABILITY.require("fcntl");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int flags;
      int r;
      try {
        flags = (int) FCNTL_INT.invokeExact(state, fd, F_GETFL, 0);
        r = flags == -1 ? -1 : (int) FCNTL_INT.invokeExact(state, fd, F_SETFL, flags | O_NONBLOCK);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("fcntl", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "fcntl", "fd=" + fd + " O_NONBLOCK", ErrnoCapture.errno(state));
      }
    }
  }

  /**
   * {@code poll} on one descriptor for {@code events}, waiting at most {@code timeoutMillis} (0:
   * not at all). An interrupted wait (EINTR) answers 0, as a timeout does: the caller looks again.
   *
   * @return the {@code revents} that came ({@link #POLLIN}, or {@link #POLLERR}, {@link #POLLHUP},
   *     {@link #POLLNVAL}), 0 when none did within the time
   * @throws NativeCallException when {@code poll} itself fails (other than EINTR)
   */
  public static int poll(int fd, short events, int timeoutMillis) {
    AVAILABILITY.require("poll");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment pfd = arena.allocate(POLLFD_SIZE, 4);
      pfd.set(JAVA_INT, 0, fd);
      pfd.set(ValueLayout.JAVA_SHORT, POLLFD_EVENTS, events);
      int r;
      try {
        r = (int) POLL.invokeExact(state, pfd, 1L, timeoutMillis);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("poll", t);
      }
      if (r == -1) {
        int errno = ErrnoCapture.errno(state);
        if (errno == Errno.EINTR.number()) {
          return 0;
        }
        throw new NativeCallException("poll", "fd=" + fd, errno);
      }
      return r == 0 ? 0 : pfd.get(ValueLayout.JAVA_SHORT, POLLFD_REVENTS) & 0xffff;
    }
  }

  /** {@code eventfd(initval, flags)}: a new event counter descriptor. */
  public static int eventfd(int initval, int flags) {
    AVAILABILITY.require("eventfd");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) EVENTFD.invokeExact(state, initval, flags);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("eventfd", t);
      }
      if (r == -1) {
        throw new NativeCallException("eventfd", "flags=" + flags, ErrnoCapture.errno(state));
      }
      return r;
    }
  }

  /** {@code eventfd_write(fd, value)}: adds {@code value} to the counter (it becomes readable). */
  public static void eventfdWrite(int fd, long value) {
    AVAILABILITY.require("eventfd_write");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) EVENTFD_WRITE.invokeExact(state, fd, value);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("eventfd_write", t);
      }
      if (r == -1) {
        throw new NativeCallException("eventfd_write", "fd=" + fd, ErrnoCapture.errno(state));
      }
    }
  }

  /**
   * {@code kill(pid, sig)}: sends a signal (the fault harness stops, continues and kills peers).
   */
  public static void kill(int pid, int sig) {
    AVAILABILITY.require("kill");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) KILL.invokeExact(state, pid, sig);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("kill", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "kill", "pid=" + pid + ", sig=" + sig, ErrnoCapture.errno(state));
      }
    }
  }

  /** {@code open(path, flags)}: a new open file description; returns its descriptor. */
  public static int open(String path, int flags) {
    return open(path, flags, 0);
  }

  /** {@code open(path, flags, mode)}: a new open file description; returns its descriptor. */
  public static int open(String path, int flags, int mode) {
    AVAILABILITY.require("open");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment cPath = arena.allocateFrom(path);
      int r;
      try {
        r = (int) OPEN.invokeExact(state, cPath, flags, mode);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("open", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "open",
            "path=\""
                + path
                + "\", flags="
                + LibcArgs.openFlags(flags)
                + ", mode=0"
                + Integer.toOctalString(mode),
            ErrnoCapture.errno(state));
      }
      return r;
    }
  }

  /** {@code memfd_create(name, flags)}: an anonymous memory-backed file; returns its descriptor. */
  public static int memfd_create(String name, int flags) {
    AVAILABILITY.require("memfd_create");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment cName = arena.allocateFrom(name);
      int r;
      try {
        r = (int) MEMFD_CREATE.invokeExact(state, cName, flags);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("memfd_create", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "memfd_create",
            "name=\"" + name + "\", flags=" + LibcArgs.memfdFlags(flags),
            ErrnoCapture.errno(state));
      }
      return r;
    }
  }

  /** {@code ftruncate(fd, length)}: sets the file's size. */
  public static void ftruncate(int fd, long length) {
    AVAILABILITY.require("ftruncate");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) FTRUNCATE.invokeExact(state, fd, length);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("ftruncate", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "ftruncate", "fd=" + fd + ", length=" + length, ErrnoCapture.errno(state));
      }
    }
  }

  /**
   * {@code mmap(NULL, length, prot, flags, fd, offset)}: maps and returns a segment of exactly
   * {@code length} bytes at the mapping's address.
   *
   * <p>The segment has the global scope: it stays accessible until {@link #munmap} and must not be
   * touched afterwards (the JVM cannot detect that; an access to an unmapped range crashes the
   * process). Owners of a mapping therefore unmap it exactly once, when no reader remains.
   */
  public static MemorySegment mmap(long length, int prot, int flags, int fd, long offset) {
    AVAILABILITY.require("mmap");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment address;
      try {
        address =
            (MemorySegment)
                MMAP.invokeExact(state, MemorySegment.NULL, length, prot, flags, fd, offset);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("mmap", t);
      }
      if (address.address() == -1L) { // MAP_FAILED
        throw new NativeCallException(
            "mmap",
            "length="
                + length
                + ", prot="
                + LibcArgs.protFlags(prot)
                + ", flags="
                + LibcArgs.mapFlags(flags)
                + ", fd="
                + fd
                + ", offset="
                + offset,
            ErrnoCapture.errno(state));
      }
      return address.reinterpret(length);
    }
  }

  /**
   * {@code munmap(segment.address(), segment.byteSize())}: unmaps a segment returned by {@link
   * #mmap}.
   */
  public static void munmap(MemorySegment segment) {
    AVAILABILITY.require("munmap");
    long length = segment.byteSize();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) MUNMAP.invokeExact(state, segment, length);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("munmap", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "munmap",
            "address=0x" + Long.toHexString(segment.address()) + ", length=" + length,
            ErrnoCapture.errno(state));
      }
    }
  }

  /**
   * Takes, changes or releases an open-file-description lock on {@code [start, start+len)} of
   * {@code fd} ({@code fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &flock)}, {@code l_whence =
   * SEEK_SET}, {@code l_pid = 0}); {@code len == 0} means "to the end of the file, however it
   * grows".
   *
   * <p>OFD locks belong to the open file description (one {@code open}/{@code memfd_create}), not
   * to the process: two descriptions in one process conflict; descriptors dup'ed from one
   * description share its locks; closing the last descriptor of a description releases them.
   *
   * @param type {@link #F_RDLCK}, {@link #F_WRLCK} or {@link #F_UNLCK}
   * @param wait whether to block until the lock can be taken; if false a conflicting lock fails
   *     with {@code EAGAIN}. A blocked wait that a signal interrupts fails with {@code EINTR} (not
   *     retried here).
   */
  public static void ofdLock(int fd, short type, long start, long len, boolean wait) {
    fcntlFlock(
        fd,
        wait ? F_OFD_SETLKW : F_OFD_SETLK,
        wait ? "F_OFD_SETLKW" : "F_OFD_SETLK",
        type,
        start,
        len);
  }

  /**
   * Asks whether an open-file-description lock of {@code type} on {@code [start, start+len)} of
   * {@code fd} could be taken now ({@code fcntl(fd, F_OFD_GETLK, &flock)}), without taking it.
   *
   * <p>Locks held through {@code fd}'s own description never conflict with it, so this reports only
   * locks of other descriptions (other processes, or other {@code open}s in this one).
   *
   * @return the type of one conflicting lock ({@link #F_RDLCK} or {@link #F_WRLCK}), or {@link
   *     #F_UNLCK} when nothing conflicts
   */
  public static short ofdTestLock(int fd, short type, long start, long len) {
    return fcntlFlock(fd, F_OFD_GETLK, "F_OFD_GETLK", type, start, len);
  }

  /**
   * {@code fcntl(fd, cmd, &flock)} over {@code [start, start+len)} from SEEK_SET; returns the
   * flock's type after.
   */
  private static short fcntlFlock(
      int fd, int cmd, String cmdName, short type, long start, long len) {
    try (Arena arena = Arena.ofConfined()) {
      return fcntlFlock(
          fd, cmd, cmdName, type, start, len, ErrnoCapture.allocate(arena), Flock.allocate(arena));
    }
  }

  private static short fcntlFlock(
      int fd,
      int cmd,
      String cmdName,
      short type,
      long start,
      long len,
      MemorySegment state,
      MemorySegment flock) {
    AVAILABILITY.require("fcntl");
    Flock.type(flock, type);
    Flock.whence(flock, SEEK_SET);
    Flock.start(flock, start);
    Flock.len(flock, len);
    Flock.pid(flock, 0);
    int r;
    try {
      r = (int) FCNTL_PTR.invokeExact(state, fd, cmd, flock);
    } catch (Throwable t) {
      throw NativeBinder.unexpected("fcntl", t);
    }
    if (r == -1) {
      throw new NativeCallException(
          "fcntl",
          "fd="
              + fd
              + ", cmd="
              + cmdName
              + ", l_type="
              + lockTypeName(type)
              + ", l_start="
              + start
              + ", l_len="
              + len,
          ErrnoCapture.errno(state));
    }
    return Flock.type(flock);
  }

  /**
   * The native memory one {@code fcntl} lock call needs (its {@code struct flock} and errno
   * capture), allocated once and reused, so that a hot path pays no allocation per call. Not
   * thread-safe: one thread at a time (the owner's lock) may use it. Freed by the garbage collector
   * once unreachable.
   */
  public static final class LockScratch {
    private final MemorySegment state;
    private final MemorySegment flock;

    public LockScratch() {
      Arena arena = Arena.ofAuto();
      this.state = ErrnoCapture.allocate(arena);
      this.flock = Flock.allocate(arena);
    }
  }

  /** {@link #ofdLock(int, short, long, long, boolean)} through reused native memory. */
  public static void ofdLock(
      int fd, short type, long start, long len, boolean wait, LockScratch scratch) {
    fcntlFlock(
        fd,
        wait ? F_OFD_SETLKW : F_OFD_SETLK,
        wait ? "F_OFD_SETLKW" : "F_OFD_SETLK",
        type,
        start,
        len,
        scratch.state,
        scratch.flock);
  }

  /** {@link #ofdTestLock(int, short, long, long)} through reused native memory. */
  public static short ofdTestLock(int fd, short type, long start, long len, LockScratch scratch) {
    return fcntlFlock(
        fd, F_OFD_GETLK, "F_OFD_GETLK", type, start, len, scratch.state, scratch.flock);
  }

  /** {@code fstat(fd, &st)}: identity (device, inode) and size of an open file. */
  public static FileStatus fstat(int fd) {
    AVAILABILITY.require("fstat");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment st = Stat.allocate(arena);
      int r;
      try {
        r = (int) FSTAT.invokeExact(state, fd, st);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("fstat", t);
      }
      if (r == -1) {
        throw new NativeCallException("fstat", "fd=" + fd, ErrnoCapture.errno(state));
      }
      return Stat.read(st);
    }
  }

  /**
   * {@code madvise(segment.address(), segment.byteSize(), advice)}: advice about a mapped range
   * (the address must be page aligned). Used to prefault a fresh shared mapping ({@link
   * #MADV_POPULATE_WRITE}) so the first transfer does not pay its page faults.
   */
  public static void madvise(MemorySegment segment, int advice) {
    AVAILABILITY.require("madvise");
    long length = segment.byteSize();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r;
      try {
        r = (int) MADVISE.invokeExact(state, segment, length, advice);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("madvise", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "madvise",
            "address=0x"
                + Long.toHexString(segment.address())
                + ", length="
                + length
                + ", advice="
                + LibcArgs.adviceName(advice),
            ErrnoCapture.errno(state));
      }
    }
  }

  /** {@code gethostname()}: this host's name (of the calling UTS namespace). */
  public static String gethostname() {
    AVAILABILITY.require("gethostname");
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      // One extra zero byte: the result stays NUL-terminated even if the name were truncated.
      MemorySegment buffer = arena.allocate(HOSTNAME_BUFFER + 1L);
      int r;
      try {
        r = (int) GETHOSTNAME.invokeExact(state, buffer, (long) HOSTNAME_BUFFER);
      } catch (Throwable t) {
        throw NativeBinder.unexpected("gethostname", t);
      }
      if (r == -1) {
        throw new NativeCallException(
            "gethostname", "len=" + HOSTNAME_BUFFER, ErrnoCapture.errno(state));
      }
      return buffer.getString(0);
    }
  }

  /** {@code "F_RDLCK"}, {@code "F_WRLCK"}, {@code "F_UNLCK"}, or the number. */
  public static String lockTypeName(short type) {
    return switch (type) {
      case F_RDLCK -> "F_RDLCK";
      case F_WRLCK -> "F_WRLCK";
      case F_UNLCK -> "F_UNLCK";
      default -> Short.toString(type);
    };
  }
}
