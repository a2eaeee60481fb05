package io.orbite.qualification.qualify;

import io.orbite.qualification.cli.ExitCodes;
import io.orbite.qualification.ledger.LedgerVerifier;
import io.orbite.qualification.ledger.Verdict;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code ./orbite qualify --profile P --output DIR [--launcher local|netns|ssh]} runs a profile
 * ({@link Supervisor}) and exits 0 only when the independent verifier passes the run; {@code
 * ./orbite qualify --verify DIR} verifies a run's directory again, from its files alone. DIR must
 * be new or empty, and outside the checkout.
 */
public final class QualifyCommand {
  private static final String USAGE =
      "qualify: usage: ./orbite qualify --profile P --output DIR [--launcher local|netns|ssh]\n"
          + "       ./orbite qualify --verify DIR";

  private QualifyCommand() {}

  /** Runs the command; returns its exit code ({@link ExitCodes}). */
  public static int run(List<String> args) throws IOException {
    String profileFile = null;
    String output = null;
    String launcher = null;
    String verify = null;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (i + 1 >= args.size()) {
        System.err.println("qualify: " + a + " needs a value\n" + USAGE);
        return ExitCodes.USAGE;
      }
      String v = args.get(++i);
      switch (a) {
        case "--profile" -> profileFile = v;
        case "--output" -> output = v;
        case "--launcher" -> launcher = v;
        case "--verify" -> verify = v;
        default -> {
          System.err.println("qualify: unknown option '" + a + "'\n" + USAGE);
          return ExitCodes.USAGE;
        }
      }
    }
    if (verify != null) {
      if (profileFile != null || output != null || launcher != null) {
        System.err.println("qualify: --verify takes no other option\n" + USAGE);
        return ExitCodes.USAGE;
      }
      return report(LedgerVerifier.verify(Path.of(verify)), Path.of(verify));
    }
    if (profileFile == null || output == null) {
      System.err.println("qualify: --profile and --output are required\n" + USAGE);
      return ExitCodes.USAGE;
    }
    Path out = Path.of(output).toAbsolutePath().normalize();
    String refused = outputRefused(out);
    if (refused != null) {
      System.err.println("qualify: --output " + output + ": " + refused);
      return ExitCodes.USAGE;
    }
    Profile profile;
    try {
      profile = Profile.read(Path.of(profileFile));
      if (launcher != null) {
        Launcher.named(launcher, profile).close();
      }
    } catch (ProfileException e) {
      System.err.println("qualify: " + profileFile + ": " + e.getMessage());
      return ExitCodes.USAGE;
    } catch (java.nio.file.NoSuchFileException e) {
      System.err.println("qualify: --profile " + profileFile + ": no such file");
      return ExitCodes.USAGE;
    }
    Files.createDirectories(out);
    Verdict verdict =
        Supervisor.run(profile, launcher != null ? launcher : profile.launcher(), out, System.err);
    return report(verdict, out);
  }

  /** Why {@code out} cannot take a run, or null: it must be new or empty, outside the checkout. */
  static String outputRefused(Path out) throws IOException {
    Path cwd = Path.of("").toAbsolutePath().normalize();
    for (Path p = cwd; p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("orbite")) && Files.isRegularFile(p.resolve("pom.xml"))) {
        if (out.startsWith(p)) {
          return "is inside the checkout " + p + "; write the run outside it";
        }
        break;
      }
    }
    if (Files.exists(out)) {
      if (!Files.isDirectory(out)) {
        return "is not a directory";
      }
      try (var entries = Files.list(out)) {
        if (entries.findAny().isPresent()) {
          return "is not empty; each run needs a directory of its own";
        }
      }
    }
    return null;
  }

  private static int report(Verdict verdict, Path dir) {
    for (Verdict.CaseVerdict c : verdict.cases()) {
      System.out.println(
          (c.passed() ? "PASS " : "FAIL ")
              + c.name()
              + ": "
              + c.roundsVerified()
              + " rounds, "
              + c.bytesVerified()
              + " bytes verified");
    }
    verdict.failures().forEach(f -> System.out.println("  " + f));
    for (Verdict.CaseVerdict c : verdict.cases()) {
      c.notes().forEach(n -> System.out.println("  note: " + c.name() + ": " + n));
    }
    System.out.println(
        (verdict.passed() ? "qualify: VERIFIED PASS" : "qualify: NOT VERIFIED")
            + " (the verdict: "
            + dir.resolve("verdict.json")
            + ")");
    return verdict.passed() ? ExitCodes.PASS : ExitCodes.FAILED;
  }
}
