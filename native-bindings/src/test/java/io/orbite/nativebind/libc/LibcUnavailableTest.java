package io.orbite.nativebind.libc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.NativeUnavailableException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Runs a child JVM that claims another platform ({@code -Dos.name=Plan9 -Dos.arch=mips}): Libc's
 * static initializer must not throw, the library must report itself unavailable with a cause, and
 * calls must throw {@link NativeUnavailableException}.
 */
class LibcUnavailableTest {

  /** Entry point of the child JVM. */
  public static void main(String[] args) {
    System.out.println("available=" + Libc.isAvailable());
    System.out.println("cause=" + Libc.unavailabilityCause().orElse(""));
    try {
      Libc.getpid();
      System.out.println("getpid=returned");
    } catch (NativeUnavailableException e) {
      System.out.println("getpid=" + e.library() + "|" + e.getMessage());
    }
    try {
      Libc.close(-1);
      System.out.println("close=returned");
    } catch (NativeUnavailableException e) {
      System.out.println("close=" + e.library() + "|" + e.getMessage());
    }
  }

  @Test
  void onAnUnsupportedPlatformLibcIsUnavailableAndCallsThrowNativeUnavailableException()
      throws Exception {
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
                    LibcUnavailableTest.class.getName()))
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM timed out");
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("available=false"), out);
    assertTrue(out.contains("cause=unsupported platform Plan9/mips"), out);
    assertTrue(
        out.contains(
            "getpid=libc|cannot call getpid: native library libc is unavailable: unsupported platform Plan9/mips"),
        out);
    assertTrue(
        out.contains("close=libc|cannot call close: native library libc is unavailable"), out);
  }
}
