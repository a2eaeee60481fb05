package io.orbite.qualification.cluster;

import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.harness.ChildLogs;
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * {@code ./orbite example cluster}: {@link ClusterScenario} as a command. Three engines (prefill,
 * decode-1, decode-2) as processes on loopback form one Pekko Cluster; each decode engine opens the
 * prefill by name through the peer directory and READs its {@code kv-pool}, every byte and guard
 * checked, and reports GB/s; then the prefill is SIGKILLed and restarted with a new epoch, and each
 * decode engine reports how long it took to see the change, to have its old segment refused {@code
 * EPOCH_MISMATCH} and to verify the new incarnation opened by name. PASS (exit 0) only when every
 * step did what it should; FAIL (exit 1) names the step, and the nodes' logs are kept.
 */
public final class ClusterExample {
  /** The command's help. */
  public static final String USAGE =
      """
      usage: ./orbite example cluster [--join seeds|bootstrap] [--pool-mib N] [--rounds N]
        --join seeds       the members join by seed nodes on 127.0.0.1 (default)
        --join bootstrap   cluster bootstrap with the config discovery method: each member on its
                           own loopback address (127.0.0.2..4) with Pekko Management on it
        --pool-mib N       the prefill's kv-pool region, MiB (default 64, 1..4096)
        --rounds N         READs of the whole pool per decode engine (default 3, 1..100)""";

  private final PrintStream out;

  /**
   * An example that reports to {@code out}.
   *
   * @param out where the report goes
   */
  public ClusterExample(PrintStream out) {
    this.out = out;
  }

  /** An example that reports to standard output. */
  public ClusterExample() {
    this(System.out);
  }

  /**
   * Parses {@code args} and runs the scenario.
   *
   * @param args the command's options
   * @return {@link ExitCodes#PASS}, {@link ExitCodes#FAILED} or {@link ExitCodes#USAGE}
   */
  public int run(List<String> args) {
    NodeSpec.Join join = NodeSpec.Join.SEEDS;
    long poolMib = 64;
    int rounds = 3;
    try {
      for (int i = 0; i < args.size(); i++) {
        String a = args.get(i);
        switch (a) {
          case "-h", "--help" -> {
            out.println(USAGE);
            return ExitCodes.PASS;
          }
          case "--join" -> {
            String v = value(args, ++i, a);
            join =
                switch (v) {
                  case "seeds" -> NodeSpec.Join.SEEDS;
                  case "bootstrap" -> NodeSpec.Join.BOOTSTRAP;
                  default ->
                      throw new IllegalArgumentException(
                          "--join: '" + v + "' is neither seeds nor bootstrap");
                };
          }
          case "--pool-mib" -> poolMib = number(args, ++i, a, 1, 4096);
          case "--rounds" -> rounds = (int) number(args, ++i, a, 1, 100);
          default -> throw new IllegalArgumentException("unknown option " + a);
        }
      }
    } catch (IllegalArgumentException e) {
      System.err.println("example cluster: " + e.getMessage());
      System.err.println(USAGE);
      return ExitCodes.USAGE;
    }
    return execute(join, poolMib * 1024 * 1024, rounds);
  }

  private int execute(NodeSpec.Join join, long poolBytes, int rounds) {
    out.printf(
        "example cluster: prefill, decode-1 and decode-2 as processes on loopback, one Pekko"
            + " Cluster over Artery TCP (%s)%n",
        join == NodeSpec.Join.SEEDS ? "seed nodes" : "cluster bootstrap, config discovery");
    ChildLogs logs = ChildLogs.create("example-cluster");
    try (logs;
        ClusterScenario s = ClusterScenario.plan(join, poolBytes, logs.dir(), out)) {
      s.form();
      for (String decode : List.of(ClusterScenario.DECODE_1, ClusterScenario.DECODE_2)) {
        // One READ untimed (checked like the others): the rate is the warm path's, not the JIT's.
        s.read(decode, "old", ClusterScenario.PREFILL, 1);
        ClusterScenario.Read r = s.read(decode, "old", ClusterScenario.PREFILL, rounds);
        out.printf(
            Locale.ROOT,
            "  %s: directory.open(\"prefill\"), READ kv-pool (%d MiB) x %d after one untimed:"
                + " every byte and guard verified, %.2f GB/s%n",
            decode,
            poolBytes >> 20,
            rounds,
            r.gigabytesPerSecond());
      }
      out.println("  prefill SIGKILLed and restarted at the same address and port (a new epoch):");
      for (ClusterScenario.RestartSeen seen :
          s.killAndRestartPrefill(List.of(ClusterScenario.DECODE_1, ClusterScenario.DECODE_2))) {
        out.println("    " + seen.line());
      }
      out.println("RESULT: PASS");
      logs.passed();
      return ExitCodes.PASS;
    } catch (ClusterScenario.ScenarioFailure | IOException e) {
      out.println("RESULT: FAIL: " + e.getMessage());
      out.println("  the nodes' logs are kept in " + logs.dir());
      return ExitCodes.FAILED;
    }
  }

  private static String value(List<String> args, int i, String option) {
    if (i >= args.size()) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args.get(i);
  }

  private static long number(List<String> args, int i, String option, long min, long max) {
    String v = value(args, i, option);
    long n;
    try {
      n = Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + ": '" + v + "' is not a whole number");
    }
    if (n < min || n > max) {
      throw new IllegalArgumentException(option + ": " + n + " is outside " + min + ".." + max);
    }
    return n;
  }
}
