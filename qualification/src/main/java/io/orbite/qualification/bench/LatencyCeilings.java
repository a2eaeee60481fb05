package io.orbite.qualification.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The round-trip ceilings of {@code bench latency}, as ../shared/bench/run_ceilings.sh runs them on
 * loopback: {@code sockperf ping-pong} over TCP and {@code ucx_perftest -t tag_lat} over UCX's
 * {@code tcp} and {@code posix} (shared memory) transports. Both tools report one-way latency (half
 * a round trip); these methods return round trips, twice that, in microseconds.
 */
final class LatencyCeilings {
  /** sockperf refuses messages over this size; its "64 KiB" figure is measured at this size. */
  static final int SOCKPERF_MAX_MESSAGE = 65_507;

  private LatencyCeilings() {}

  static boolean installed(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
      if (new java.io.File(dir, tool).canExecute()) {
        return true;
      }
    }
    return false;
  }

  /**
   * sockperf round-trip percentiles (50, 99, 99.9) in µs for {@code bytes}-byte messages, for
   * {@code seconds}.
   */
  static Map<String, Double> sockperf(int bytes, int seconds)
      throws IOException, InterruptedException {
    int port = freePort();
    Process server =
        new ProcessBuilder(
                List.of("sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", String.valueOf(port)))
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      int size = Math.min(bytes, SOCKPERF_MAX_MESSAGE);
      for (int attempt = 0; ; attempt++) {
        if (attempt == 0) {
          awaitListening(port, server, "sockperf sr");
        }
        Process client =
            new ProcessBuilder(
                    List.of(
                        "sockperf",
                        "pp",
                        "--tcp",
                        "-i",
                        "127.0.0.1",
                        "-p",
                        String.valueOf(port),
                        "-m",
                        String.valueOf(size),
                        "-t",
                        String.valueOf(seconds)))
                .redirectErrorStream(true)
                .start();
        String out = new String(client.getInputStream().readAllBytes());
        client.waitFor(seconds + 30L, TimeUnit.SECONDS);
        Map<String, Double> oneWay = new HashMap<>();
        for (String line : out.split("\n")) {
          for (String p : List.of("50.000", "99.000", "99.900")) {
            if (line.contains("percentile " + p + " =")) {
              oneWay.put(p, Double.parseDouble(line.substring(line.lastIndexOf('=') + 1).trim()));
            }
          }
        }
        if (oneWay.size() == 3) {
          return Map.of(
              "p50",
              2 * oneWay.get("50.000"),
              "p99",
              2 * oneWay.get("99.000"),
              "p99.9",
              2 * oneWay.get("99.900"));
        }
        if (attempt == 4) {
          throw new IOException(
              "sockperf pp printed no percentiles: " + out.lines().reduce((a, b) -> b).orElse(""));
        }
      }
    } finally {
      server.destroy();
      if (!server.waitFor(5, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  /**
   * ucx_perftest tag_lat median round trip in µs over {@code tls} ({@code "tcp"} or {@code
   * "posix,self"}) for {@code bytes}-byte messages, {@code iterations} ping-pongs.
   */
  static double ucxTagLatency(String tls, int bytes, int iterations)
      throws IOException, InterruptedException {
    int port = freePort();
    ProcessBuilder serverPb =
        new ProcessBuilder(List.of("ucx_perftest", "-p", String.valueOf(port)))
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    serverPb.environment().put("UCX_TLS", tls);
    serverPb.environment().put("UCX_NET_DEVICES", "lo");
    Process server = serverPb.start();
    try {
      for (int attempt = 0; ; attempt++) {
        if (attempt == 0) {
          awaitListening(port, server, "ucx_perftest");
        }
        List<String> cmd =
            new ArrayList<>(
                List.of(
                    "ucx_perftest",
                    "127.0.0.1",
                    "-p",
                    String.valueOf(port),
                    "-t",
                    "tag_lat",
                    "-s",
                    String.valueOf(bytes),
                    "-n",
                    String.valueOf(iterations),
                    "-w",
                    String.valueOf(iterations / 10 + 10),
                    "-v"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("UCX_TLS", tls);
        pb.environment().put("UCX_NET_DEVICES", "lo");
        Process client = pb.start();
        String out = new String(client.getInputStream().readAllBytes());
        client.waitFor(120, TimeUnit.SECONDS);
        String last = out.strip().lines().reduce((a, b) -> b).orElse("");
        String[] csv = last.split(",");
        if (csv.length >= 2 && csv[0].matches("\\d+")) {
          return 2 * Double.parseDouble(csv[1]);
        }
        if (attempt == 3 || !server.isAlive()) {
          throw new IOException("ucx_perftest (UCX_TLS=" + tls + ") printed no result: " + last);
        }
      }
    } finally {
      server.destroy();
      if (!server.waitFor(5, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  /**
   * Waits until {@code port} is a listening TCP socket in /proc/net/tcp{,6}: the servers need a
   * moment, and a probing connection would be taken for a client.
   */
  private static void awaitListening(int port, Process server, String what) throws IOException {
    String suffix = String.format(":%04X", port);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
        java.nio.file.Path path = java.nio.file.Path.of(table);
        if (!java.nio.file.Files.isReadable(path)) {
          continue;
        }
        for (String line : java.nio.file.Files.readAllLines(path)) {
          String[] f = line.trim().split("\\s+");
          if (f.length > 3 && f[1].endsWith(suffix) && f[3].equals("0A")) {
            return;
          }
        }
      }
      if (!server.isAlive()) {
        throw new IOException(what + " ended before listening on port " + port);
      }
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    throw new IOException(what + " did not listen on port " + port + " within 10 s");
  }

  private static int freePort() throws IOException {
    try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return probe.getLocalPort();
    }
  }
}
