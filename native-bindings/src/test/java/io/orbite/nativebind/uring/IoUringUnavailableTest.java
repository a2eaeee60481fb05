package io.orbite.nativebind.uring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.NativeUnavailableException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A child JVM claiming another platform: the probe must answer unavailable with a cause, and
 * opening a ring must throw {@link NativeUnavailableException}, never fail in a static initializer.
 */
class IoUringUnavailableTest {

  /** Entry point of the child JVM. */
  public static void main(String[] args) {
    System.out.println("available=" + IoUring.isAvailable());
    System.out.println("cause=" + IoUring.unavailabilityCause().orElse(""));
    try {
      Ring.open(4).close();
      System.out.println("open=returned");
    } catch (NativeUnavailableException e) {
      System.out.println("open=" + e.getMessage());
    }
  }

  @Test
  void onAnUnsupportedPlatformIoUringIsUnavailableAndOpeningARingThrows() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p =
        new ProcessBuilder(
                List.of(
                    java,
                    "--enable-native-access=ALL-UNNAMED",
                    "-Dos.name=Plan9",
                    "-Dos.arch=mips",
                    "-cp",
                    System.getProperty("java.class.path"),
                    IoUringUnavailableTest.class.getName()))
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM timed out");
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("available=false"), out);
    assertTrue(out.contains("cause=unsupported platform Plan9/mips"), out);
    assertTrue(
        out.contains(
            "open=cannot call io_uring_setup: native library io_uring is unavailable: unsupported platform"),
        out);
  }
}
