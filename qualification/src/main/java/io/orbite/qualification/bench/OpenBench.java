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
import io.orbite.engine.security.TlsFiles;
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
 * {@code ./orbite bench open [--json] [--rounds N]}: what the authentication handshake, and mutual
 * TLS, add to opening a peer. Three source engine processes on loopback: one without credentials,
 * one with a shared secret, one with TLS (a throwaway authority, {@link TlsFiles}); each round
 * starts a fresh requester engine in this process (untimed), times its {@code openSegment} to one
 * source (Describe and every TCP lane's HELLO, each connection with the handshake, and TLS, where
 * the source requires them), moves one 4 KiB READ over TCP and checks its bytes, and closes the
 * requester. The three kinds take turns, N rounds each (default 100) after 50 untimed; p50 and p99
 * of each, and the ratios of the p50s to the plain one.
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
    try (ChildLogs logs = ChildLogs.create("bench-open")) {
      Path secretFile = logs.dir().resolve("secret");
      Files.writeString(secretFile, SECRET);
      Files.setPosixFilePermissions(
          secretFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
      TlsFiles ca = TlsFiles.authority(logs.dir().resolve("tls"), 2);
      Path sourceStore = ca.issue("bench-open-tls", 0, 2);
      Path requesterStore = ca.issue("bench-open-requester", 0, 2);
      EngineConfig base = EngineConfig.fromEnv().withName("bench-open-requester");
      String tlsConf =
          "{\"security\":{\"tlsKeyStore\":\""
              + sourceStore
              + "\",\"tlsTrustStore\":\""
              + ca.trustStore()
              + "\",\"tlsPasswordFile\":\""
              + ca.passwordFile()
              + "\"}}";
      try (EngineProcess plain = EngineProcess.start("bench-open-plain", logs.dir(), Map.of());
          EngineProcess guarded =
              EngineProcess.start(
                  "bench-open-secret", logs.dir(), Map.of(SecurityConfig.SECRET_ENV_VAR, SECRET));
          EngineProcess tls =
              EngineProcess.start("bench-open-tls", logs.dir(), Map.of("ORBITE_CONF", tlsConf))) {
        List<Kind> kinds =
            List.of(
                new Kind("plain", plain, base, fill(plain), rounds),
                new Kind(
                    "handshake",
                    guarded,
                    base.withSecurity(
                        SecurityConfig.defaults().withSecretFile(secretFile.toString())),
                    fill(guarded),
                    rounds),
                new Kind(
                    "tls",
                    tls,
                    base.withSecurity(
                        SecurityConfig.defaults()
                            .withTls(
                                requesterStore.toString(),
                                ca.trustStore().toString(),
                                ca.passwordFile().toString())),
                    fill(tls),
                    rounds));
        int failures = 0;
        for (int r = -WARM_UP; r < rounds; r++) {
          // Rotate which kind goes first, so none always meets the warmer JVM.
          for (int k = 0; k < kinds.size(); k++) {
            Kind kind = kinds.get(Math.floorMod(r + k, kinds.size()));
            long took = openOnce(kind.config, kind.source, kind.region);
            if (took < 0) {
              failures++;
              human.println("  round " + r + " (" + kind.name + "): READ failed");
            } else if (r >= 0) {
              kind.nanos[r] = took;
            }
          }
        }
        Map<String, Double> figures = new LinkedHashMap<>();
        for (Kind kind : kinds) {
          figures.put("open_" + kind.name + "_p50_us", percentile(kind.nanos, 0.50) / 1e3);
          figures.put("open_" + kind.name + "_p99_us", percentile(kind.nanos, 0.99) / 1e3);
        }
        figures.put("rounds", (double) rounds);
        Map<String, Double> ratios = new LinkedHashMap<>();
        double plainP50 = percentile(kinds.get(0).nanos, 0.50);
        ratios.put("open_p50_handshake_vs_plain", percentile(kinds.get(1).nanos, 0.50) / plainP50);
        ratios.put("open_p50_tls_vs_plain", percentile(kinds.get(2).nanos, 0.50) / plainP50);
        human.printf(
            Locale.ROOT,
            "bench open: %d rounds each, a fresh requester engine per open, loopback; tcp.lanes"
                + " %d%n",
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
  }

  /** One kind of source and the requester configuration that opens it; its timed opens. */
  private record Kind(
      String name, EngineProcess source, EngineConfig config, long region, long[] nanos) {
    Kind(String name, EngineProcess source, EngineConfig config, long region, int rounds) {
      this(name, source, config, region, new long[rounds]);
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
