package io.orbite.transport.file;

import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * Test seam at the ring lanes' native function table: a decorator applied to every {@link FileIo}
 * that lanes of engines started afterwards create (for example one that withholds the completion of
 * a chosen operation, to prove quarantine against a real kernel). Production code never sets it.
 */
public final class FileIoFaults {
  private static volatile UnaryOperator<FileIo> decorator = UnaryOperator.identity();

  private FileIoFaults() {}

  /** Decorates every FileIo created from now on; {@link #clear()} undoes it. */
  public static void install(UnaryOperator<FileIo> value) {
    decorator = Objects.requireNonNull(value, "decorator");
  }

  public static void clear() {
    decorator = UnaryOperator.identity();
  }

  static FileIo apply(FileIo io) {
    return decorator.apply(io);
  }
}
