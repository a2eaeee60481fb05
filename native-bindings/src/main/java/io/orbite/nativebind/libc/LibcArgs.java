package io.orbite.nativebind.libc;

import static io.orbite.nativebind.libc.Libc.MADV_DONTNEED;
import static io.orbite.nativebind.libc.Libc.MADV_NORMAL;
import static io.orbite.nativebind.libc.Libc.MADV_POPULATE_READ;
import static io.orbite.nativebind.libc.Libc.MADV_POPULATE_WRITE;
import static io.orbite.nativebind.libc.Libc.MADV_WILLNEED;
import static io.orbite.nativebind.libc.Libc.MAP_ANONYMOUS;
import static io.orbite.nativebind.libc.Libc.MAP_FIXED;
import static io.orbite.nativebind.libc.Libc.MAP_HUGETLB;
import static io.orbite.nativebind.libc.Libc.MAP_LOCKED;
import static io.orbite.nativebind.libc.Libc.MAP_NORESERVE;
import static io.orbite.nativebind.libc.Libc.MAP_POPULATE;
import static io.orbite.nativebind.libc.Libc.MAP_PRIVATE;
import static io.orbite.nativebind.libc.Libc.MAP_SHARED;
import static io.orbite.nativebind.libc.Libc.MFD_ALLOW_SEALING;
import static io.orbite.nativebind.libc.Libc.MFD_CLOEXEC;
import static io.orbite.nativebind.libc.Libc.MFD_HUGETLB;
import static io.orbite.nativebind.libc.Libc.O_CLOEXEC;
import static io.orbite.nativebind.libc.Libc.O_CREAT;
import static io.orbite.nativebind.libc.Libc.O_EXCL;
import static io.orbite.nativebind.libc.Libc.O_RDONLY;
import static io.orbite.nativebind.libc.Libc.O_RDWR;
import static io.orbite.nativebind.libc.Libc.O_TRUNC;
import static io.orbite.nativebind.libc.Libc.O_WRONLY;
import static io.orbite.nativebind.libc.Libc.PROT_EXEC;
import static io.orbite.nativebind.libc.Libc.PROT_NONE;
import static io.orbite.nativebind.libc.Libc.PROT_READ;
import static io.orbite.nativebind.libc.Libc.PROT_WRITE;

/**
 * The arguments of a failed {@link Libc} call as a reader writes them: flag words by their {@code
 * <sys/mman.h>} and {@code <fcntl.h>} names ({@code PROT_READ|PROT_WRITE}, {@code O_RDWR|O_CREAT}),
 * unknown bits in hex. Only a failure's message is rendered, never a successful call's.
 */
final class LibcArgs {
  private LibcArgs() {}

  static String adviceName(int advice) {
    return switch (advice) {
      case MADV_NORMAL -> "MADV_NORMAL";
      case MADV_WILLNEED -> "MADV_WILLNEED";
      case MADV_DONTNEED -> "MADV_DONTNEED";
      case MADV_POPULATE_READ -> "MADV_POPULATE_READ";
      case MADV_POPULATE_WRITE -> "MADV_POPULATE_WRITE";
      default -> Integer.toString(advice);
    };
  }

  static String protFlags(int prot) {
    return prot == PROT_NONE
        ? "PROT_NONE"
        : render(
            prot,
            new int[] {PROT_READ, PROT_WRITE, PROT_EXEC},
            new String[] {"PROT_READ", "PROT_WRITE", "PROT_EXEC"});
  }

  static String mapFlags(int flags) {
    return render(
        flags,
        new int[] {
          MAP_SHARED,
          MAP_PRIVATE,
          MAP_FIXED,
          MAP_ANONYMOUS,
          MAP_LOCKED,
          MAP_NORESERVE,
          MAP_POPULATE,
          MAP_HUGETLB
        },
        new String[] {
          "MAP_SHARED",
          "MAP_PRIVATE",
          "MAP_FIXED",
          "MAP_ANONYMOUS",
          "MAP_LOCKED",
          "MAP_NORESERVE",
          "MAP_POPULATE",
          "MAP_HUGETLB"
        });
  }

  static String memfdFlags(int flags) {
    return render(
        flags,
        new int[] {MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_HUGETLB},
        new String[] {"MFD_CLOEXEC", "MFD_ALLOW_SEALING", "MFD_HUGETLB"});
  }

  static String openFlags(int flags) {
    String access =
        switch (flags & 03) {
          case O_RDONLY -> "O_RDONLY";
          case O_WRONLY -> "O_WRONLY";
          case O_RDWR -> "O_RDWR";
          default -> "0x3";
        };
    String rest =
        render(
            flags & ~03,
            new int[] {O_CREAT, O_EXCL, O_TRUNC, O_CLOEXEC},
            new String[] {"O_CREAT", "O_EXCL", "O_TRUNC", "O_CLOEXEC"});
    return rest.equals("0") ? access : access + "|" + rest;
  }

  /** Known bits by name, joined with '|', any remaining bits in hex; {@code "0"} for none. */
  private static String render(int value, int[] bits, String[] names) {
    if (value == 0) {
      return "0";
    }
    StringBuilder sb = new StringBuilder();
    int rest = value;
    for (int i = 0; i < bits.length; i++) {
      if ((rest & bits[i]) == bits[i]) {
        if (!sb.isEmpty()) {
          sb.append('|');
        }
        sb.append(names[i]);
        rest &= ~bits[i];
      }
    }
    if (rest != 0) {
      if (!sb.isEmpty()) {
        sb.append('|');
      }
      sb.append("0x").append(Integer.toHexString(rest));
    }
    return sb.toString();
  }
}
