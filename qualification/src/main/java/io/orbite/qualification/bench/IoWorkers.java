package io.orbite.qualification.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Scheduler time of this process's io_uring worker threads ({@code iou-wrk-*}), or of other threads
 * named by prefixes, from {@code /proc/self/task/<tid>/schedstat}: nanoseconds on a CPU and
 * nanoseconds runnable but waiting for one. A buffered WRITE to ext4 is copied by such a worker, so
 * its share of a timed run says how much of that run the kernel's copy was going on, whatever the
 * engine did around it.
 */
final class IoWorkers {
  private static final Path TASKS = Path.of("/proc/self/task");

  private IoWorkers() {}

  /** Totals over the workers alive now: on CPU and waiting for a CPU, in nanoseconds. */
  record Sample(long runNanos, long waitNanos) {
    Sample minus(Sample earlier) {
      return new Sample(runNanos - earlier.runNanos, waitNanos - earlier.waitNanos);
    }
  }

  /** The workers' totals now; zero where /proc cannot be read (the figure is then left out). */
  static Sample sample() {
    return sample("iou-wrk");
  }

  /**
   * The same totals for this process's threads whose name starts with one of {@code prefixes} (the
   * JIT's compiler threads are "C1 CompilerThre" and "C2 CompilerThre"; they are not visible to
   * ThreadMXBean, and their CPU shows a compilation in progress, which the JIT's total compilation
   * time only counts once it ends).
   */
  static Sample sample(String... prefixes) {
    return sample(TASKS, prefixes);
  }

  /** The same totals for process {@code pid}'s threads named by {@code prefixes}. */
  static Sample sample(long pid, String... prefixes) {
    return sample(Path.of("/proc", Long.toString(pid), "task"), prefixes);
  }

  private static Sample sample(Path taskDir, String... prefixes) {
    long run = 0;
    long wait = 0;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(taskDir)) {
      for (Path task : tasks) {
        try {
          String comm = Files.readString(task.resolve("comm"));
          boolean named = false;
          for (String prefix : prefixes) {
            named |= comm.startsWith(prefix);
          }
          if (!named) {
            continue;
          }
          String[] fields = Files.readString(task.resolve("schedstat")).trim().split(" ");
          run += Long.parseLong(fields[0]);
          wait += Long.parseLong(fields[1]);
        } catch (NoSuchFileException exited) {
          // a worker that exited between the listing and the read: io-wq retires idle workers
        }
      }
    } catch (IOException | RuntimeException e) {
      return new Sample(0, 0);
    }
    return new Sample(run, wait);
  }
}
