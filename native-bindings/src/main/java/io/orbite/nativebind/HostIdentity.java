package io.orbite.nativebind;

import io.orbite.nativebind.libc.Libc;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Which host, and which boot of it, this process runs on. Two processes with equal identities share
 * a kernel (and so can share memfds, OFD locks and mappings); a changed boot id means a reboot,
 * after which nothing left by an earlier boot (pids, locks, shared memory) is meaningful.
 *
 * @param hostname the host's name ({@code gethostname}, or {@code /proc/sys/kernel/hostname} when
 *     libc is unavailable)
 * @param bootId {@code /proc/sys/kernel/random/boot_id}: a UUID the kernel draws at each boot
 */
public record HostIdentity(String hostname, String bootId) {
  static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
  static final Path HOSTNAME = Path.of("/proc/sys/kernel/hostname");

  public HostIdentity {
    Objects.requireNonNull(hostname, "hostname");
    Objects.requireNonNull(bootId, "bootId");
    if (hostname.isBlank()) {
      throw new IllegalArgumentException("hostname is blank");
    }
    if (bootId.isBlank()) {
      throw new IllegalArgumentException("bootId is blank");
    }
  }

  /**
   * Reads the current identity (not cached: the hostname can change).
   *
   * @throws UncheckedIOException if the boot id (or, without libc, the hostname) cannot be read
   */
  public static HostIdentity current() {
    String hostname = Libc.isAvailable() ? Libc.gethostname() : readTrimmed(HOSTNAME);
    return new HostIdentity(hostname, readTrimmed(BOOT_ID));
  }

  private static String readTrimmed(Path file) {
    try {
      return Files.readString(file, StandardCharsets.US_ASCII).trim();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }
}
