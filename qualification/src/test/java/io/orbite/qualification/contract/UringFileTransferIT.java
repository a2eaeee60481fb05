package io.orbite.qualification.contract;

import io.orbite.nativebind.uring.IoUring;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/** The file transport contract over io_uring (skipped, with the probe's cause, where the kernel has none). */
class UringFileTransferIT extends FileTransferContract {
  @BeforeEach
  void needsIoUring() {
    Assumptions.assumeTrue(IoUring.isAvailable(), () -> "io_uring unavailable: " + IoUring.unavailabilityCause().orElse(""));
  }

  @Override
  String engineName() {
    return "io_uring";
  }
}
