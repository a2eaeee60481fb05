package io.orbite.nativebind;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Linux x86_64 errno numbers and their symbolic names (from {@code <asm-generic/errno-base.h>} and
 * {@code <asm-generic/errno.h>}; the numbers are checked against the system headers in the tests
 * when gcc is present).
 *
 * <p>Linux gives some names the same number; those are aliases here, not separate constants: {@link
 * #EWOULDBLOCK} is {@link #EAGAIN}, {@link #ENOTSUP} is {@link #EOPNOTSUPP}, {@link #EDEADLOCK} is
 * {@link #EDEADLK}. A number renders under the constant's name.
 */
public enum Errno {
  EPERM(1),
  ENOENT(2),
  ESRCH(3),
  EINTR(4),
  EIO(5),
  ENXIO(6),
  E2BIG(7),
  ENOEXEC(8),
  EBADF(9),
  ECHILD(10),
  EAGAIN(11),
  ENOMEM(12),
  EACCES(13),
  EFAULT(14),
  ENOTBLK(15),
  EBUSY(16),
  EEXIST(17),
  EXDEV(18),
  ENODEV(19),
  ENOTDIR(20),
  EISDIR(21),
  EINVAL(22),
  ENFILE(23),
  EMFILE(24),
  ENOTTY(25),
  ETXTBSY(26),
  EFBIG(27),
  ENOSPC(28),
  ESPIPE(29),
  EROFS(30),
  EMLINK(31),
  EPIPE(32),
  EDOM(33),
  ERANGE(34),
  EDEADLK(35),
  ENAMETOOLONG(36),
  ENOLCK(37),
  ENOSYS(38),
  ENOTEMPTY(39),
  ELOOP(40),
  ENOMSG(42),
  EIDRM(43),
  ENODATA(61),
  ETIME(62),
  ENOLINK(67),
  EPROTO(71),
  EBADMSG(74),
  EOVERFLOW(75),
  EBADFD(77),
  EILSEQ(84),
  ENOTSOCK(88),
  EDESTADDRREQ(89),
  EMSGSIZE(90),
  EPROTOTYPE(91),
  ENOPROTOOPT(92),
  EPROTONOSUPPORT(93),
  EOPNOTSUPP(95),
  EAFNOSUPPORT(97),
  EADDRINUSE(98),
  EADDRNOTAVAIL(99),
  ENETDOWN(100),
  ENETUNREACH(101),
  ENETRESET(102),
  ECONNABORTED(103),
  ECONNRESET(104),
  ENOBUFS(105),
  EISCONN(106),
  ENOTCONN(107),
  ESHUTDOWN(108),
  ETIMEDOUT(110),
  ECONNREFUSED(111),
  EHOSTDOWN(112),
  EHOSTUNREACH(113),
  EALREADY(114),
  EINPROGRESS(115),
  ESTALE(116),
  EREMOTEIO(121),
  EDQUOT(122),
  ENOMEDIUM(123),
  ECANCELED(125),
  EOWNERDEAD(130),
  ENOTRECOVERABLE(131),
  EHWPOISON(133);

  /** Alias of {@link #EAGAIN} (same number on Linux). */
  public static final Errno EWOULDBLOCK = EAGAIN;

  /** Alias of {@link #EOPNOTSUPP} (same number on Linux). */
  public static final Errno ENOTSUP = EOPNOTSUPP;

  /** Alias of {@link #EDEADLK} (same number on Linux x86_64). */
  public static final Errno EDEADLOCK = EDEADLK;

  private static final Map<Integer, Errno> BY_NUMBER = new HashMap<>();

  static {
    for (Errno e : values()) {
      Errno previous = BY_NUMBER.put(e.number, e);
      if (previous != null) {
        throw new AssertionError("duplicate errno " + e.number + ": " + previous + ", " + e);
      }
    }
  }

  private final int number;

  Errno(int number) {
    this.number = number;
  }

  /** The errno number on Linux x86_64. */
  public int number() {
    return number;
  }

  /** The constant for {@code number}, if it is one this enum knows. */
  public static Optional<Errno> of(int number) {
    return Optional.ofNullable(BY_NUMBER.get(number));
  }

  /**
   * The symbolic name of {@code number} ({@code "EBADF"}), or {@code "errno 1234"} for an unknown
   * number.
   */
  public static String nameOf(int number) {
    Errno e = BY_NUMBER.get(number);
    return e != null ? e.name() : "errno " + number;
  }

  /** {@code "EBADF (9)"} for a known number, {@code "errno 1234"} for an unknown one. */
  public static String describe(int number) {
    Errno e = BY_NUMBER.get(number);
    return e != null ? e.name() + " (" + number + ")" : "errno " + number;
  }
}
