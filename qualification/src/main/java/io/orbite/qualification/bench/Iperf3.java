package io.orbite.qualification.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The loopback TCP ceiling: {@code iperf3 -c 127.0.0.1 -l 1M}, one stream, against a one-shot
 * server on a free port. GB/s = 10^9 payload bytes per second, as received.
 */
final class Iperf3 {
  private Iperf3() {}

  static boolean installed() {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
      if (new java.io.File(dir, "iperf3").canExecute()) {
        return true;
      }
    }
    return false;
  }

  /** One run's throughput and the CPU both iperf3 processes spent per GB moved. */
  record Result(double gbps, double cpuSecondsPerGB) {}

  /** One measurement; throws if iperf3 fails. */
  static Result oneStream(int seconds) throws IOException, InterruptedException {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    Process server =
        new ProcessBuilder(
                List.of(
                    "iperf3",
                    "-s",
                    "-1",
                    "--forceflush",
                    "-B",
                    "127.0.0.1",
                    "-p",
                    String.valueOf(port)))
            .redirectErrorStream(true)
            .start();
    try {
      waitListening(server, port);
      Process client =
          new ProcessBuilder(
                  List.of(
                      "iperf3",
                      "-c",
                      "127.0.0.1",
                      "-p",
                      String.valueOf(port),
                      "-t",
                      String.valueOf(seconds),
                      "-O",
                      "1",
                      "-l",
                      "1M",
                      "-J"))
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      byte[] json = client.getInputStream().readAllBytes();
      if (!client.waitFor(seconds + 30L, TimeUnit.SECONDS) || client.exitValue() != 0) {
        throw new IOException("iperf3 client failed: " + new String(json));
      }
      JsonNode root = new ObjectMapper().readTree(json);
      double bps =
          root.path("end").path("sum_received").path("bits_per_second").asDouble(Double.NaN);
      if (Double.isNaN(bps)) {
        throw new IOException("iperf3 printed no end.sum_received.bits_per_second");
      }
      JsonNode cpu = root.path("end").path("cpu_utilization_percent");
      double busy =
          (cpu.path("host_total").asDouble(Double.NaN)
                  + cpu.path("remote_total").asDouble(Double.NaN))
              / 100.0;
      double gbps = bps / 8 / 1e9;
      return new Result(gbps, busy / gbps);
    } finally {
      server.waitFor(5, TimeUnit.SECONDS);
      server.destroyForcibly();
    }
  }

  /**
   * Waits for the server's "Server listening" line. (Probing the port with a connection would use
   * up a one-shot {@code -1} server.)
   */
  private static void waitListening(Process server, int port) throws IOException {
    java.io.BufferedReader lines =
        new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream()));
    String line;
    while ((line = lines.readLine()) != null) {
      if (line.contains("Server listening")) {
        Thread.ofPlatform()
            .daemon()
            .start(
                () -> {
                  try {
                    server.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                  } catch (IOException ignored) {
                    // The server's chatter is not needed.
                  }
                });
        return;
      }
    }
    throw new IOException("iperf3 server on port " + port + " ended before listening");
  }
}
