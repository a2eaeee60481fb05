package io.orbite.qualification.firsthour;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What the first-hour tests show of a child JVM's log when it did not do what they expect. */
final class ChildLog {
  private ChildLog() {}

  /**
   * The last 40 lines of {@code log}, for a failure message.
   *
   * @param log the file the child's stderr went to
   * @return the lines, or why there are none
   */
  static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (Exception e) {
      return "(no log: " + e + ")";
    }
  }
}
