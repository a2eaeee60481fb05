package io.orbite.qualification.bench;

import java.util.List;

/**
 * The command line of {@link RdmaBench}: {@code --json}; {@code --quick} (1 s per figure, a 128 MiB
 * working set); {@code --sizes 64KiB,1MiB} (the throughput sizes, the TCP reference's included);
 * {@code --seconds S} per figure; {@code --engine-only}: the null-wire slice rate alone (the
 * engine's own cost per slice, for profiling it), no run over the wire.
 */
record RdmaBenchOptions(
    boolean json, boolean quick, double secondsPerFigure, List<String> sizes, boolean engineOnly) {
  static final String USAGE =
      "usage: ./orbite bench rdma [--json] [--quick] [--sizes 64KiB,1MiB,4MiB,64MiB]"
          + " [--seconds S] [--engine-only]";
  static final double MIN_SECONDS = 0.1;
  static final double MAX_SECONDS = 600;

  /**
   * The options {@code args} give, the rest defaulted.
   *
   * @throws IllegalArgumentException naming the option that is unknown or has a bad value
   */
  static RdmaBenchOptions parse(List<String> args) {
    boolean json = false;
    boolean quick = false;
    double seconds = 0;
    List<String> sizes = RdmaBench.SIZE_NAMES;
    boolean engineOnly = false;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      switch (a) {
        case "--json" -> json = true;
        case "--quick" -> quick = true;
        case "--sizes" -> sizes = sizes(valueOf(args, ++i, a));
        case "--seconds" -> seconds = seconds(valueOf(args, ++i, a));
        case "--engine-only" -> engineOnly = true;
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    return new RdmaBenchOptions(
        json, quick, seconds > 0 ? seconds : quick ? 1.0 : 3.0, sizes, engineOnly);
  }

  private static String valueOf(List<String> args, int at, String option) {
    if (at >= args.size()) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args.get(at);
  }

  private static List<String> sizes(String value) {
    List<String> given = List.of(value.split(","));
    for (String s : given) {
      if (!RdmaBench.SIZE_NAMES.contains(s)) {
        throw new IllegalArgumentException(
            "--sizes "
                + value
                + ": "
                + s
                + " is not one of "
                + String.join(", ", RdmaBench.SIZE_NAMES));
      }
    }
    return RdmaBench.SIZE_NAMES.stream().filter(given::contains).toList();
  }

  private static double seconds(String value) {
    double s;
    try {
      s = Double.parseDouble(value);
    } catch (NumberFormatException e) {
      s = Double.NaN;
    }
    if (!(s >= MIN_SECONDS && s <= MAX_SECONDS)) {
      throw new IllegalArgumentException(
          "--seconds " + value + ": must be " + MIN_SECONDS + ".." + MAX_SECONDS + " seconds");
    }
    return s;
  }

  long workingSetBytes() {
    return quick ? 128L << 20 : 256L << 20;
  }

  double warmupSeconds() {
    return quick ? 0.2 : 0.5;
  }

  /** One spell of the slice rate's warm-up, after which the JITs' share of it is looked at. */
  double warmupSpellSeconds() {
    return quick ? 0.5 : 1.0;
  }

  /** The longest the slice rate's warm-up waits for the JITs to settle. */
  double maxWarmupSeconds() {
    return quick ? 8 : 30;
  }
}
