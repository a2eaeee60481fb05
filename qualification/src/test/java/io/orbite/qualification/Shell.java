package io.orbite.qualification;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Commands the network-namespace tests run (ip netns, ip link), each within 30 s. */
public final class Shell {
  private Shell() {}

  /**
   * Runs {@code cmd} and fails the test unless it exits 0.
   *
   * @param cmd the command and its arguments
   * @return its output, stdout and stderr together
   */
  public static String sh(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "timed out: " + String.join(" ", cmd));
    assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
    return out;
  }

  /**
   * Runs {@code cmd} for its exit status only (cleanup, probes).
   *
   * @param cmd the command and its arguments
   * @return its exit status, or -1 when it could not run or did not end within 30 s
   */
  public static int status(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
