package io.orbite.transport.file;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Opens files for the file table, on the blocking-I/O dispatcher (opening a FIFO waits for its
 * writer). Every check runs before the file is opened, so a refused open changes nothing: the path
 * must exist and be a regular file or a FIFO; WRITE needs a file whose mode grants some write bit
 * (also for root, who could open a read-only file anyway) and that this process may write. Files
 * are never created, truncated or extended.
 */
final class FileOpener {
  private static final int S_IFMT = 0170000;
  private static final int S_IFIFO = 0010000;
  private static final int S_IFREG = 0100000;

  /** A refusal with the error kind to report. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final ErrorKind kind;

    Refused(ErrorKind kind, String detail) {
      super(detail, null, false, false);
      this.kind = kind;
    }
  }

  private FileOpener() {}

  /** The file's identity (device, inode) now, or a refusal naming why it cannot be read. */
  static Object fileKey(Path path) throws Refused {
    return attributes(path).fileKey();
  }

  /**
   * Opens {@code path} for {@code access}, as a descriptor ({@code uring}) or a FileChannel. The
   * caller has reserved one slot of {@code openHandles}; the handle gives it back when it closes.
   */
  static FileHandle open(Path path, Access access, boolean uring, AtomicInteger openHandles)
      throws Refused {
    BasicFileAttributes attrs = attributes(path);
    if (attrs.isDirectory()) {
      throw new Refused(
          ErrorKind.INVALID_ARGUMENT, "openFileSegment " + path + ": is a directory, not a file");
    }
    int mode;
    try {
      mode = (Integer) Files.getAttribute(path, "unix:mode");
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      throw new Refused(
          ErrorKind.UNAVAILABLE, "openFileSegment " + path + ": cannot read its mode: " + e);
    }
    int type = mode & S_IFMT;
    boolean fifo = type == S_IFIFO;
    if (type != S_IFREG && !fifo) {
      throw new Refused(
          ErrorKind.INVALID_ARGUMENT,
          "openFileSegment "
              + path
              + ": is not a regular file or a FIFO (file type 0"
              + Integer.toOctalString(type)
              + ")");
    }
    if (access.allowsRemoteWrite()) {
      if ((mode & 0222) == 0) {
        throw new Refused(
            ErrorKind.PERMISSION_DENIED,
            "openFileSegment "
                + path
                + " for "
                + access
                + ": the file is read-only (mode 0"
                + Integer.toOctalString(mode & 07777)
                + ")");
      }
      if (!Files.isWritable(path)) {
        throw new Refused(
            ErrorKind.PERMISSION_DENIED,
            "openFileSegment " + path + " for " + access + ": this process may not write it");
      }
    }
    if (access.allowsRemoteRead() && !Files.isReadable(path)) {
      throw new Refused(
          ErrorKind.PERMISSION_DENIED,
          "openFileSegment " + path + " for " + access + ": this process may not read it");
    }
    int fd = -1;
    FileChannel channel = null;
    if (uring) {
      int flags =
          (access == Access.READ
                  ? Libc.O_RDONLY
                  : access == Access.WRITE ? Libc.O_WRONLY : Libc.O_RDWR)
              | Libc.O_CLOEXEC;
      try {
        fd = Libc.open(path.toString(), flags);
      } catch (NativeCallException e) {
        throw new Refused(kindOfOpen(e.errno()), "openFileSegment " + path + ": " + e.getMessage());
      }
    } else {
      List<OpenOption> options = new ArrayList<>();
      if (access.allowsRemoteRead()) {
        options.add(StandardOpenOption.READ);
      }
      if (access.allowsRemoteWrite()) {
        options.add(StandardOpenOption.WRITE);
      }
      try {
        channel = FileChannel.open(path, options.toArray(OpenOption[]::new));
      } catch (NoSuchFileException e) {
        throw new Refused(ErrorKind.INVALID_ARGUMENT, "openFileSegment " + path + ": no such file");
      } catch (AccessDeniedException e) {
        throw new Refused(
            ErrorKind.PERMISSION_DENIED, "openFileSegment " + path + ": permission denied");
      } catch (IOException e) {
        throw new Refused(ErrorKind.UNAVAILABLE, "openFileSegment " + path + ": " + e);
      }
    }
    long length;
    try {
      length = fifo ? Long.MAX_VALUE : Files.size(path);
    } catch (IOException e) {
      length = attrs.size();
    }
    return new FileHandle(path, access, attrs.fileKey(), fifo, length, fd, channel, openHandles);
  }

  private static BasicFileAttributes attributes(Path path) throws Refused {
    try {
      return Files.readAttributes(path, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new Refused(ErrorKind.INVALID_ARGUMENT, "openFileSegment " + path + ": no such file");
    } catch (AccessDeniedException e) {
      throw new Refused(
          ErrorKind.PERMISSION_DENIED, "openFileSegment " + path + ": permission denied");
    } catch (IOException e) {
      throw new Refused(ErrorKind.UNAVAILABLE, "openFileSegment " + path + ": " + e);
    }
  }

  private static ErrorKind kindOfOpen(int errno) {
    if (errno == Errno.ENOENT.number()
        || errno == Errno.EISDIR.number()
        || errno == Errno.ENOTDIR.number()) {
      return ErrorKind.INVALID_ARGUMENT;
    }
    if (errno == Errno.EACCES.number()
        || errno == Errno.EPERM.number()
        || errno == Errno.EROFS.number()
        || errno == Errno.ETXTBSY.number()) {
      return ErrorKind.PERMISSION_DENIED;
    }
    if (errno == Errno.EMFILE.number() || errno == Errno.ENFILE.number()) {
      return ErrorKind.RESOURCE_EXHAUSTED;
    }
    return ErrorKind.UNAVAILABLE;
  }
}
