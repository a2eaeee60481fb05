package io.orbite.qualification.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A fresh directory under {@code java.io.tmpdir} for the logs of a run's child processes. Closing
 * it deletes it and its files if the run said it {@link #passed()}; otherwise (a failure, or an
 * exception) the directory is kept, so the logs a failure message names are still there. Open it as
 * the first resource of a try-with-resources, so the children stop before it closes.
 */
public final class ChildLogs implements AutoCloseable {
  private final Path dir;
  private boolean passed;

  private ChildLogs(Path dir) {
    this.dir = dir;
  }

  /** Creates {@code <tmpdir>/orbite-<name>-<random>}. */
  public static ChildLogs create(String name) {
    try {
      return new ChildLogs(Files.createTempDirectory("orbite-" + name + "-"));
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot create a directory for child-process logs in "
              + System.getProperty("java.io.tmpdir"),
          e);
    }
  }

  public Path dir() {
    return dir;
  }

  /** The run passed: its logs are deleted on close. */
  public void passed() {
    passed = true;
  }

  @Override
  public void close() {
    if (!passed) {
      return;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path f : files) {
        Files.deleteIfExists(f);
      }
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // Only a passing run's logs are deleted; one that cannot be is left in the temp directory.
    }
  }
}
