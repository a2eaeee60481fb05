package io.orbite.qualification.contract;

import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.nativebind.uring.IoUring;
import org.junit.jupiter.api.BeforeEach;

/**
 * The file transport contract over io_uring (where the kernel has none: skipped with the probe's
 * cause, and failed under CI; see {@link Prerequisite}).
 */
class UringFileTransferIT extends FileTransferContract {
  @BeforeEach
  void needsIoUring() {
    Prerequisite.require(
        IoUring.isAvailable(), "io_uring unavailable: " + IoUring.unavailabilityCause().orElse(""));
  }

  @Override
  String engineName() {
    return "io_uring";
  }
}
