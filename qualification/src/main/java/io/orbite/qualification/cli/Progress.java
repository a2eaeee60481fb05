package io.orbite.qualification.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar on stderr with rate and ETA, redrawn at most ten times a second. Shown
 * only once a run has lasted two seconds, and only on a terminal unless forced (ORBITE_PROGRESS=1).
 */
public final class Progress {
  private static final long REDRAW_NANOS = 100_000_000L;

  /** Runs shorter than this never draw a bar. */
  private static final long QUIET_NANOS = 2_000_000_000L;

  private final PrintStream err = System.err;
  private final String label;
  private final long totalUnits;
  private final String unit;
  private final long startNanos = System.nanoTime();
  private final boolean enabled;
  private long lastDraw;
  private boolean drawn;

  public Progress(String label, long totalUnits, String unit) {
    this.label = label;
    this.totalUnits = Math.max(1, totalUnits);
    this.unit = unit;
    // Since JDK 22 System.console() exists even when not on a terminal; ask whether it is one.
    java.io.Console console = System.console();
    this.enabled =
        (console != null && console.isTerminal()) || "1".equals(System.getenv("ORBITE_PROGRESS"));
  }

  /** Reports {@code doneUnits} done and {@code bytes} moved so far. */
  public void update(long doneUnits, long bytes) {
    long now = System.nanoTime();
    if (!enabled || now - lastDraw < REDRAW_NANOS || now - startNanos < QUIET_NANOS) {
      return;
    }
    lastDraw = now;
    drawn = true;
    double secs = Math.max(1e-9, (now - startNanos) / 1e9);
    int width = 24;
    int filled = (int) Math.min(width, doneUnits * width / totalUnits);
    double rate = bytes / secs / 1e9;
    double eta = doneUnits == 0 ? 0 : secs * (totalUnits - doneUnits) / doneUnits;
    err.printf(
        Locale.ROOT,
        "\r  %-22s [%s%s] %d/%d %s  %.2f GB/s  ETA %.1fs   ",
        label,
        "#".repeat(filled),
        "-".repeat(width - filled),
        doneUnits,
        totalUnits,
        unit,
        rate,
        eta);
    err.flush();
  }

  /** Clears the line. */
  public void done() {
    if (drawn) {
      err.print("\r" + " ".repeat(100) + "\r");
      err.flush();
    }
  }
}
