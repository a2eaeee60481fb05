package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.ChildLogs;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./orbite bench open [--json] [--rounds N]}: what the authentication handshake adds to
 * opening a peer. Two source engine processes on loopback, one without credentials and one with a
 * shared secret; each round starts a fresh requester engine in this process (untimed), times its
 * {@code openSegment} to one source (Describe and every TCP lane's HELLO, each connection with the
 * handshake where the source requires it), moves one 4 KiB READ over TCP and checks its bytes, and
 * closes the requester. The two kinds alternate, N rounds each (default 100) after 50 untimed; p50
 * and p99 of each, and the ratio of the p50s.
 */
public final class OpenBench {
  private static final long REGION = 1L << 20;
  private static final String SECRET = "bench-open-shared-secret-0123456789";

  /**
   * Untimed rounds of each kind first: each round starts an engine of its own, and the open's paths
   * (its actors, the lanes' connect, the handshake) take about this many to settle (the p50 of both
   * kinds falls about threefold over the first fifty).
   */
  private static final int WARM_UP = 50;

  public int run(List<String> args) throws Exception {
    boolean json = args.contains("--json");
    PrintStream human = json ? System.err : System.out;
    int at = args.indexOf("--rounds");
    int rounds = at >= 0 && at + 1 < args.size() ? Integer.parseInt(args.get(at + 1)) : 100;
    try (ChildLogs logs = ChildLogs.create("bench-open");
        EngineProcess plain = EngineProcess.start("bench-open-plain", logs.dir(), Map.of());
        EngineProcess guarded =
            EngineProcess.start(
                "bench-open-secret", logs.dir(), Map.of(SecurityConfig.SECRET_ENV_VAR, SECRET))) {
      Path secretFile = logs.dir().resolve("secret");
      Files.writeString(secretFile, SECRET);
      Files.setPosixFilePermissions(
          secretFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
      long plainRegion = fill(plain);
      long guardedRegion = fill(guarded);
      EngineConfig base = EngineConfig.fromEnv().withName("bench-open-requester");
      EngineConfig withSecret =
          base.withSecurity(SecurityConfig.defaults().withSecretFile(secretFile.toString()));
      long[] plainNanos = new long[rounds];
      long[] guardedNanos = new long[rounds];
      int failures = 0;
      for (int r = -WARM_UP; r < rounds; r++) {
        // Alternate which kind goes first, so neither always meets the warmer JVM.
        boolean plainFirst = (r & 1) == 0;
        for (int k = 0; k < 2; k++) {
          boolean secret = plainFirst == (k == 1);
          EngineProcess source = secret ? guarded : plain;
          long took =
              openOnce(secret ? withSecret : base, source, secret ? guardedRegion : plainRegion);
          if (took < 0) {
            failures++;
            human.println(
                "  round " + r + (secret ? " (handshake)" : " (plain)") + ": READ failed");
          } else if (r >= 0) {
            (secret ? guardedNanos : plainNanos)[r] = took;
          }
        }
      }
      Map<String, Double> figures = new LinkedHashMap<>();
      figures.put("open_plain_p50_us", percentile(plainNanos, 0.50) / 1e3);
      figures.put("open_plain_p99_us", percentile(plainNanos, 0.99) / 1e3);
      figures.put("open_handshake_p50_us", percentile(guardedNanos, 0.50) / 1e3);
      figures.put("open_handshake_p99_us", percentile(guardedNanos, 0.99) / 1e3);
      figures.put("rounds", (double) rounds);
      Map<String, Double> ratios = new LinkedHashMap<>();
      ratios.put(
          "open_p50_handshake_vs_plain",
          percentile(guardedNanos, 0.50) / percentile(plainNanos, 0.50));
      human.printf(
          Locale.ROOT,
          "bench open: %d rounds each, a fresh requester engine per open, loopback; tcp.lanes %d%n",
          rounds,
          base.tcp().lanes());
      BenchReport.print(
          human, json, "loopback, openSegment of a fresh requester", figures, Map.of(), ratios);
      human.println(
          failures == 0
              ? "RESULT: PASS - every open's READ was verified byte for byte"
              : "RESULT: FAIL - " + failures + " READ(s) failed");
      return failures == 0 ? 0 : 1;
    }
  }

  private static long fill(EngineProcess source) throws java.io.IOException {
    long id = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    source.call("FILL " + id + " 61");
    return id;
  }

  /** The time of one open, or -1 when the READ after it failed or read a wrong byte. */
  private static long openOnce(EngineConfig config, EngineProcess source, long region)
      throws Exception {
    try (TransferEngine requester = TransferEngine.start(config)) {
      RegisteredMemory local = requester.allocate(4096, Access.READ_WRITE);
      long t0 = System.nanoTime();
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      long took = System.nanoTime() - t0;
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, region, 8191, 4096)
                  .withTransport(Transport.TCP)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      boolean ok = s.allCompleted() && Pattern.verify(local.segment(), 0, 4096, 61, 8191) == -1;
      return ok ? took : -1;
    }
  }

  private static double percentile(long[] nanos, double p) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int i = (int) Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
    return sorted[Math.max(0, i)];
  }
}
